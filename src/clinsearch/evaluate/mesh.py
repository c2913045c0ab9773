"""IU X-ray MeSH labels as gold findings: parse a MeSH cell and map it onto lexicon concepts.

A cell such as ``Opacity/lung/base/left;Lung/hypoinflation`` holds terms (a heading and modifier
words). The documented map ``data/iu_mesh_map.yaml`` turns each term into a lexicon concept (or
ignores it, with a reason) and each modifier word into a ``(category, value)`` of the lexicon's
modifier vocabularies, so a report's MeSH cell becomes its set of gold present concepts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.yaml_nodes import NodeReader, compose, data_text
from clinsearch.errors import InputError

FORMAT = "clinsearch-iu-mesh-map/1"
SHIPPED = "iu_mesh_map.yaml"


def normalize(word: str) -> str:
    """A heading or modifier word as matched: lowercase, whitespace runs collapsed."""
    return " ".join(word.split()).lower()


@dataclass(frozen=True, slots=True)
class MeshTerm:
    """One MeSH term of a cell: its heading and modifier words, as written (whitespace tidied)."""

    heading: str
    modifiers: tuple[str, ...] = ()


def parse_mesh(cell: str) -> list[MeshTerm]:
    """The terms of a MeSH cell (``Heading/mod/mod;Heading/...``); empty parts are skipped."""
    terms: list[MeshTerm] = []
    for raw in cell.split(";"):
        parts = [" ".join(p.split()) for p in raw.split("/")]
        parts = [p for p in parts if p]
        if parts:
            terms.append(MeshTerm(parts[0], tuple(parts[1:])))
    return terms


@dataclass(frozen=True, slots=True)
class Rule:
    """A heading rule: when all ``when`` words qualify a term, it means ``concept`` (None: no)."""

    when: frozenset[str]
    concept: str | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ModifierMeaning:
    """What a MeSH modifier word means: a lexicon modifier value, or absorbed (with the reason)."""

    category: str | None
    value: str | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class GoldLabels:
    """A report's gold present concepts and ``(concept, category, value)`` modifier pairs."""

    concepts: frozenset[str]
    pairs: frozenset[tuple[str, str, str]]


@dataclass(frozen=True)
class MeshMap:
    """The MeSH-to-lexicon map: heading rules, ignored headings, modifier meanings."""

    headings: dict[str, tuple[Rule, ...]]  # keyed by normalized heading
    ignored: dict[str, str]  # normalized heading -> reason
    modifiers: dict[str, ModifierMeaning]  # normalized word -> meaning
    path: str = ""

    @classmethod
    def load(cls, path: str | Path | None = None) -> MeshMap:
        """Read and validate a map file (None: the shipped IU X-ray map)."""
        return _parse(*data_text(path, "clinsearch.evaluate", SHIPPED, "MeSH map"))

    @property
    def targets(self) -> frozenset[str]:
        """Every lexicon concept some heading maps to: the concepts the gold can contain."""
        return frozenset(r.concept for rules in self.headings.values() for r in rules if r.concept)

    def concept_of(self, term: MeshTerm) -> str | None:
        """The concept a term means, or None when it is ignored; unknown headings are errors."""
        key = normalize(term.heading)
        if key in self.ignored:
            return None
        rules = self.headings.get(key)
        if rules is None:
            raise InputError(f"MeSH heading '{term.heading}' is not in the map", file=self.path)
        words = {normalize(m) for m in term.modifiers}
        for rule in rules:
            if rule.when <= words:
                return rule.concept
        return None

    def modifier_values(self, term: MeshTerm) -> tuple[tuple[str, str], ...]:
        """The ``(category, value)`` pairs of a term's modifier words; unknown words are errors."""
        out: list[tuple[str, str]] = []
        for word in term.modifiers:
            meaning = self.modifiers.get(normalize(word))
            if meaning is None:
                raise InputError(f"MeSH modifier '{word}' is not in the map", file=self.path)
            if meaning.category and meaning.value and (meaning.category, meaning.value) not in out:
                out.append((meaning.category, meaning.value))
        return tuple(out)

    def gold(self, cell: str) -> GoldLabels:
        """A MeSH cell's gold present concepts and concept-modifier pairs."""
        concepts: set[str] = set()
        pairs: set[tuple[str, str, str]] = set()
        for term in parse_mesh(cell):
            concept = self.concept_of(term)
            if concept is None:
                continue
            concepts.add(concept)
            pairs.update((concept, c, v) for c, v in self.modifier_values(term))
        return GoldLabels(frozenset(concepts), frozenset(pairs))

    def problems(self, lexicon: Lexicon) -> list[str]:
        """Concept ids and modifier values named here that ``lexicon`` lacks (empty: consistent)."""
        out = [
            f"concept '{c}' is not in the lexicon"
            for c in sorted(self.targets)
            if c not in lexicon.concepts
        ]
        for word, m in sorted(self.modifiers.items()):
            if m.category and m.value not in lexicon.modifiers.get(m.category, {}):
                out.append(f"modifier '{word}': '{m.category}: {m.value}' is not in the lexicon")
        return out


def _parse(text: str, file: str) -> MeshMap:
    """Validate the map's YAML; every error names file, line and field."""
    reader = NodeReader(file)
    root = compose(text, file)
    if root is None:
        raise InputError("empty MeSH map", file=file)
    top = reader.mapping(root, None)
    for key in ("format", "headings", "modifiers"):
        if key not in top:
            raise reader.fail(root, key, "missing")
    fmt = reader.scalar(top["format"], "format")
    if fmt != FORMAT:
        raise reader.fail(top["format"], "format", f"expected '{FORMAT}', got '{fmt}'")
    ignored = {
        normalize(k): reader.scalar(v, k)
        for k, v in (reader.mapping(top["ignore"], "ignore") if "ignore" in top else {}).items()
    }
    headings: dict[str, tuple[Rule, ...]] = {}
    for heading, node in reader.mapping(top["headings"], "headings").items():
        key = normalize(heading)
        if key in ignored or key in headings:
            raise reader.fail(node, heading, "heading listed twice (headings / ignore)")
        headings[key] = _rules(reader, heading, node)
    modifiers = {
        normalize(word): _modifier(reader, word, node)
        for word, node in reader.mapping(top["modifiers"], "modifiers").items()
    }
    return MeshMap(headings, ignored, modifiers, file)


def _rules(reader: NodeReader, heading: str, node: yaml.Node) -> tuple[Rule, ...]:
    """A heading's rules: a bare concept id, or a list of when/concept/ignore mappings."""
    if isinstance(node, yaml.ScalarNode):
        return (Rule(frozenset(), reader.scalar(node, heading)),)
    rules: list[Rule] = []
    for item in reader.sequence(node, heading):
        fields = reader.mapping(item, heading)
        unknown = set(fields) - {"when", "concept", "ignore"}
        if unknown or ("concept" in fields) == ("ignore" in fields):
            raise reader.fail(
                item, heading, "a rule needs `concept` or `ignore` (and optional `when`)"
            )
        when = (
            frozenset(normalize(w) for w in reader.strings(fields["when"], "when"))
            if ("when" in fields)
            else frozenset()
        )
        if "concept" in fields:
            rules.append(Rule(when, reader.scalar(fields["concept"], "concept")))
        else:
            rules.append(Rule(when, None, reader.scalar(fields["ignore"], "ignore")))
    if not rules or rules[-1].when:
        raise reader.fail(node, heading, "the last rule must be a default (no `when`)")
    return tuple(rules)


def _modifier(reader: NodeReader, word: str, node: yaml.Node) -> ModifierMeaning:
    """A modifier word's meaning: ``{category, value}`` or ``{absorbed: reason}``."""
    fields = reader.mapping(node, word)
    if set(fields) == {"absorbed"}:
        return ModifierMeaning(None, None, reader.scalar(fields["absorbed"], word))
    if set(fields) == {"category", "value"}:
        return ModifierMeaning(
            reader.scalar(fields["category"], word), reader.scalar(fields["value"], word)
        )
    raise reader.fail(node, word, "expected {category, value} or {absorbed: reason}")
