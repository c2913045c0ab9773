"""The finding lexicon (``clinsearch-lexicon/1``): concepts, modifier vocabularies, compounds.

Loaded from YAML and validated on load; every error names the file, line and field. A file may
``include`` others beside it (the shipped lexicon is one file per body system); the schema is
documented in docs/reference/lexicon.md.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from clinsearch.annotate.lexicon_cache import Include, load_cached
from clinsearch.annotate.yaml_nodes import NodeReader, read_document
from clinsearch.user_files import read_user_text

FORMAT = "clinsearch-lexicon/1"
CONCEPT_TYPES: tuple[str, ...] = ("finding", "disease", "symptom", "procedure", "anatomy", "device",
                                  "technical")
MODIFIER_CATEGORIES: tuple[str, ...] = (
    "laterality",
    "location",
    "severity",
    "temporal",
    "certainty",
)
CONCEPT_KEYS = frozenset({"id", "name", "type", "region", "parents", "terms", "abbreviations",
                          "states", "codes"})
# Concept codes of licensed vocabularies: system -> the form its codes take (others: any
# single token). UMLS CUIs, SNOMED CT ids (any edition), RadLex ids.
CODE_FORMS: dict[str, re.Pattern[str]] = {
    "UMLS": re.compile(r"C\d{7}"),
    "SNOMEDCT": re.compile(r"\d{6,18}"),
    "SNOMEDCT_US": re.compile(r"\d{6,18}"),
    "RADLEX": re.compile(r"RID\d+"),
}
_SYSTEM_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
_CODE_RE = re.compile(r"^\S+$")
TOP_KEYS = frozenset(
    {"format", "name", "version", "sources", "include", "concepts", "modifiers", "compounds",
     "modifier_relations", "plain_words", "anatomy_states"}
)
STATES_KEYS = ("coordinators", "links", "states")
POLARITIES = ("present", "absent")
RELATED_CREDIT = 0.5  # default credit of a modifier relation: half an exact match
_ID_RE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")
_INCLUDE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.ya?ml$")  # a file beside the includer
SHIPPED = "radiology.yaml"


@dataclass(frozen=True, slots=True)
class Concept:
    """A core concept: id, preferred name, type, body region, parents and its surface forms."""

    id: str
    name: str
    type: str
    region: str = ""
    parents: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()  # matched case-insensitively; ``name`` is implied
    abbreviations: tuple[str, ...] = ()  # matched case-sensitively
    # Anatomy: (state, concept ids) pairs, the findings a state word said of it stands for
    # ("heart is enlarged": cardiomegaly present; "heart size is normal": cardiomegaly absent).
    states: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Codes of the concept in licensed vocabularies, (system, code) sorted by system, e.g.
    # (("RADLEX", "RID5350"), ("UMLS", "C0032285")): carried into exports (OMOP NOTE_NLP).
    codes: tuple[tuple[str, str], ...] = ()

    def findings_in(self, state: str) -> tuple[str, ...]:
        """The concept ids this anatomy in ``state`` stands for (none when not declared)."""
        return next((ids for name, ids in self.states if name == state), ())

    @property
    def surface_forms(self) -> tuple[str, ...]:
        """The name and the terms, without duplicates (case-insensitive), name first."""
        return _unique((self.name, *self.terms))


@dataclass(frozen=True, slots=True)
class AnatomyState:
    """A state an anatomy can be said to be in ("enlarged", "normal"), the words that say it,
    and whether the findings it maps to are then present or absent."""

    name: str
    polarity: str  # present | absent
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StateVocabulary:
    """The anatomy x state vocabulary: states, the words that may stand between an anatomy and
    its state word ("is", "not", "of the"), and those joining anatomies that share one."""

    states: dict[str, AnatomyState] = field(default_factory=dict)
    links: frozenset[str] = frozenset()
    coordinators: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Lexicon:
    """Concepts by id, modifier vocabularies ``{category: {value: forms}}`` and compounds."""

    name: str
    version: str
    concepts: dict[str, Concept]
    modifiers: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    compounds: dict[str, dict[str, str]] = field(default_factory=dict)
    # Related modifier values (overlapping regions, adjacent grades): (a, b) -> the credit a
    # candidate carrying b earns for a query asking a; symmetric.
    modifier_relations: dict[tuple[str, str], float] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    path: str = ""  # where it was loaded from, for messages
    # Lower-case words that are ordinary English, so a query's "cold" is never read as the
    # abbreviation COLD (queries match abbreviations case-insensitively otherwise).
    plain_words: frozenset[str] = frozenset()
    anatomy_states: StateVocabulary = field(default_factory=StateVocabulary)

    @classmethod
    def load(cls, path: str | Path | None = None) -> Lexicon:
        """Load and validate a lexicon file (and those it includes); ``None`` loads the shipped
        radiology lexicon. A valid lexicon is kept parsed in the private cache
        (``lexicon_cache``), so that a cold start need not compose its YAML again."""
        if path is None:
            folder = resources.files("clinsearch.annotate") / "data"

            def shipped(name: str) -> tuple[str, str]:
                return (folder / name).read_text(encoding="utf-8"), f"<shipped>/{name}"

            return load_lexicon(*shipped(SHIPPED), include=shipped)
        path = Path(path)

        def beside(name: str) -> tuple[str, str]:
            return read_user_text(path.parent / name), str(path.parent / name)

        return load_lexicon(read_user_text(path), path, include=beside)

    def stats(self) -> LexiconStats:
        """Counts of concepts by type, surface forms and modifier values."""
        by_type = Counter(c.type for c in self.concepts.values())
        forms = sum(len(c.surface_forms) + len(c.abbreviations) for c in self.concepts.values())
        modifier_values = {cat: len(values) for cat, values in self.modifiers.items()}
        modifier_forms = sum(len(f) for values in self.modifiers.values() for f in values.values())
        return LexiconStats(
            concepts=len(self.concepts),
            by_type={t: by_type[t] for t in CONCEPT_TYPES if by_type[t]},
            surface_forms=forms,
            modifier_values=modifier_values,
            modifier_forms=modifier_forms + len(self.compounds),
        )

    def with_concepts(self, concepts: dict[str, Concept]) -> Lexicon:
        """A copy with another concept table (modifier vocabularies kept)."""
        return replace(self, concepts=concepts)


@dataclass(frozen=True, slots=True)
class LexiconStats:
    """Summary figures of a lexicon, for ``clinsearch lexicon stats``."""

    concepts: int
    by_type: dict[str, int]
    surface_forms: int
    modifier_values: dict[str, int]
    modifier_forms: int


def slug(text: str) -> str:
    """A lowercase snake_case concept id made from a name or an ontology id."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _unique(items: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Items in order, dropping case-insensitive repeats."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.lower()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Part:
    """One parsed file of a lexicon: its reader (for errors) and top-level fields."""

    reader: NodeReader
    top: dict[str, yaml.Node]


def parse_lexicon(text: str, file: str | Path, include: Include | None = None) -> Lexicon:
    """Parse and validate lexicon YAML text and the files it includes (read by ``include``);
    errors name the file, the line and the field."""
    main = _read_part(text, file)
    parts = [*_included(main, include), main]
    top = main.top
    concepts: dict[str, Concept] = {}
    refs: list[tuple[NodeReader, str, str, yaml.Node]] = []
    modifiers: dict[str, dict[str, tuple[str, ...]]] = {}
    for part in parts:
        if "concepts" in part.top:
            _parse_concepts(part.reader, part.top["concepts"], concepts, refs)
        if "modifiers" in part.top:
            _merge_modifiers(part.reader, part.top["modifiers"], modifiers)
    states = _merge_states(parts)
    _check_references(concepts, refs, states)
    compounds: dict[str, dict[str, str]] = {}
    relations: dict[tuple[str, str], float] = {}
    sources: list[str] = []
    plain: set[str] = set()
    for part in parts:
        reader, fields = part.reader, part.top
        if "compounds" in fields:
            for form, parts_ in _parse_compounds(reader, fields["compounds"], modifiers).items():
                if form in compounds:
                    raise reader.fail(fields["compounds"], "compounds", f"'{form}' given twice")
                compounds[form] = parts_
        if "modifier_relations" in fields:
            for pair, credit in _parse_relations(reader, fields["modifier_relations"],
                                                 modifiers).items():
                if pair in relations:
                    raise reader.fail(fields["modifier_relations"], "modifier_relations",
                                      f"'{pair[0]}' ~ '{pair[1]}' given twice")
                relations[pair] = credit
        if "sources" in fields:
            sources += reader.strings(fields["sources"], "sources")
        if "plain_words" in fields:
            plain.update(w.lower() for w in reader.strings(fields["plain_words"], "plain_words"))
    reader = main.reader
    return Lexicon(
        name=reader.scalar(top["name"], "name") if "name" in top else Path(str(file)).stem,
        version=reader.scalar(top["version"], "version") if "version" in top else "",
        concepts=concepts,
        modifiers=modifiers,
        compounds=compounds,
        modifier_relations=relations,
        sources=_unique(sources),
        path=str(file),
        plain_words=frozenset(plain),
        anatomy_states=states,
    )


def _read_part(text: str, file: str | Path) -> _Part:
    """One lexicon file's fields, its ``format`` checked."""
    reader, root, top = read_document(text, file, "lexicon", TOP_KEYS)
    if "format" not in top:
        raise reader.fail(root, "format", f"missing; expected '{FORMAT}'")
    fmt = reader.scalar(top["format"], "format")
    if fmt != FORMAT:
        raise reader.fail(
            top["format"], "format", f"unsupported format '{fmt}'; expected '{FORMAT}'"
        )
    if "concepts" not in top and "include" not in top:
        raise reader.fail(root, "concepts", "missing")
    return _Part(reader, top)


def _included(main: _Part, include: Include | None) -> list[_Part]:
    """The files ``main`` includes, in order: names of files beside it, each at most once, and
    an included file includes no other."""
    if "include" not in main.top:
        return []
    node = main.top["include"]
    names = main.reader.strings(node, "include")
    if include is None:
        raise main.reader.fail(node, "include", "this lexicon text has no folder to include from")
    out: list[_Part] = []
    for name in names:
        if not _INCLUDE_RE.match(name):
            raise main.reader.fail(node, "include",
                                   f"'{name[:40]}' is not a .yaml file name beside this file")
        if names.count(name) > 1:
            raise main.reader.fail(node, "include", f"'{name}' is included twice")
        part = _read_part(*include(name))
        if "include" in part.top:
            raise part.reader.fail(part.top["include"], "include",
                                   "an included file cannot include others")
        out.append(part)
    return out


def _parse_concepts(reader: NodeReader, node: yaml.Node, concepts: dict[str, Concept],
                    refs: list[tuple[NodeReader, str, str, yaml.Node]]) -> None:
    """Adds a file's concept list to ``concepts``, checking ids, names and types; the nodes
    naming other concepts or states go to ``refs`` (checked once every file is read)."""
    for item in reader.sequence(node, "concepts"):
        fields = reader.mapping(item, "concepts")
        for key, value in reader.key_nodes(item).items():
            if key not in CONCEPT_KEYS:
                raise reader.fail(
                    value, key, f"unknown concept key (allowed: {', '.join(sorted(CONCEPT_KEYS))})"
                )
        for required in ("id", "name", "type"):
            if required not in fields:
                raise reader.fail(item, required, "missing")
        cid = reader.scalar(fields["id"], "id")
        if not _ID_RE.match(cid):
            raise reader.fail(fields["id"], "id", f"'{cid}' is not lowercase snake_case")
        if cid in concepts:
            raise reader.fail(fields["id"], "id", f"duplicate concept id '{cid}'")
        ctype = reader.scalar(fields["type"], "type")
        if ctype not in CONCEPT_TYPES:
            raise reader.fail(
                fields["type"],
                "type",
                f"unknown type '{ctype}' (allowed: {', '.join(CONCEPT_TYPES)})",
            )
        states = _concept_states(reader, fields["states"]) if "states" in fields else ()
        if states and ctype != "anatomy":
            raise reader.fail(fields["states"], "states", "only an anatomy concept has states")
        concepts[cid] = Concept(
            id=cid,
            name=reader.scalar(fields["name"], "name"),
            type=ctype,
            region=reader.scalar(fields["region"], "region") if "region" in fields else "",
            parents=tuple(reader.strings(fields["parents"], "parents"))
            if "parents" in fields
            else (),
            terms=_unique(reader.strings(fields["terms"], "terms")) if "terms" in fields else (),
            abbreviations=(
                _unique(reader.strings(fields["abbreviations"], "abbreviations"))
                if "abbreviations" in fields
                else ()
            ),
            states=states,
            codes=_parse_codes(reader, fields["codes"]) if "codes" in fields else (),
        )
        for key in ("parents", "states"):
            if key in fields:
                refs.append((reader, cid, key, fields[key]))


def _concept_states(reader: NodeReader, node: yaml.Node) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """An anatomy's ``states``: ``{state: [concept ids]}``."""
    return tuple((state, tuple(reader.strings(ids, f"states.{state}")))
                 for state, ids in reader.mapping(node, "states").items())


def _check_references(concepts: dict[str, Concept],
                      refs: list[tuple[NodeReader, str, str, yaml.Node]],
                      vocabulary: StateVocabulary) -> None:
    """Every parent and state finding names a concept, every state one of the vocabulary's."""
    for reader, cid, key, node in refs:
        concept = concepts[cid]
        if key == "parents":
            named = list(concept.parents)
        else:
            for state, _ in concept.states:
                if state not in vocabulary.states:
                    raise reader.fail(node, key, f"concept '{cid}' names unknown state '{state}'"
                                      " (not in anatomy_states)")
            named = [i for _, ids in concept.states for i in ids]
        for ref in named:
            if ref not in concepts:
                raise reader.fail(node, key, f"concept '{cid}' names unknown concept '{ref}'")


def _parse_codes(reader: NodeReader, node: yaml.Node) -> tuple[tuple[str, str], ...]:
    """A concept's codes ``{SYSTEM: code}``: upper-case system names, codes of their form."""
    out = []
    for system, code_node in reader.mapping(node, "codes").items():
        code = reader.scalar(code_node, f"codes.{system}")
        if not _SYSTEM_RE.match(system):
            raise reader.fail(code_node, "codes", f"system '{system}' is not upper-case"
                              " letters, digits and _ (e.g. UMLS, SNOMEDCT_US, RADLEX)")
        form = CODE_FORMS.get(system, _CODE_RE)
        if not form.fullmatch(code):
            raise reader.fail(code_node, f"codes.{system}",
                              f"'{code}' is not a {system} code ({form.pattern})")
        out.append((system, code))
    return tuple(sorted(out))


def _merge_states(parts: list[_Part]) -> StateVocabulary:
    """The ``anatomy_states`` sections of all files as one vocabulary; a state given twice is
    an error."""
    states: dict[str, AnatomyState] = {}
    links: set[str] = set()
    coordinators: set[str] = set()
    for part in parts:
        if "anatomy_states" not in part.top:
            continue
        reader, node = part.reader, part.top["anatomy_states"]
        fields = reader.mapping(node, "anatomy_states")
        for key, key_node in reader.key_nodes(node).items():  # type: ignore[arg-type]
            if key not in STATES_KEYS:
                raise reader.fail(key_node, key,
                                  f"unknown key (allowed: {', '.join(STATES_KEYS)})")
        if "links" in fields:
            links.update(w.lower() for w in reader.strings(fields["links"], "links"))
        if "coordinators" in fields:
            coordinators.update(w.lower() for w in reader.strings(fields["coordinators"],
                                                                  "coordinators"))
        declared = reader.mapping(fields["states"], "states") if "states" in fields else {}
        for name, state_node in declared.items():
            if name in states:
                raise reader.fail(state_node, "states", f"state '{name}' given twice")
            states[name] = _state(reader, name, state_node)
    return StateVocabulary(states, frozenset(links), frozenset(coordinators))


def _state(reader: NodeReader, name: str, node: yaml.Node) -> AnatomyState:
    """One state: ``{polarity: present|absent, words: [...]}``."""
    fields = reader.mapping(node, name)
    for key, key_node in reader.key_nodes(node).items():  # type: ignore[arg-type]
        if key not in ("polarity", "words"):
            raise reader.fail(key_node, key, "unknown key (allowed: polarity, words)")
    for required in ("polarity", "words"):
        if required not in fields:
            raise reader.fail(node, f"{name}.{required}", "missing")
    polarity = reader.scalar(fields["polarity"], f"{name}.polarity")
    if polarity not in POLARITIES:
        raise reader.fail(fields["polarity"], f"{name}.polarity",
                          f"'{polarity}' is not one of {', '.join(POLARITIES)}")
    return AnatomyState(name, polarity, _unique(reader.strings(fields["words"], f"{name}.words")))


def _merge_modifiers(reader: NodeReader, node: yaml.Node,
                     out: dict[str, dict[str, tuple[str, ...]]]) -> None:
    """Adds a file's modifier vocabularies ``{category: {value: forms}}`` to ``out`` (the value
    is a form too); a value another file already gave is an error."""
    categories = reader.mapping(node, "modifiers")
    for category, key_node in reader.key_nodes(node).items():  # type: ignore[arg-type]
        if category not in MODIFIER_CATEGORIES:
            raise reader.fail(
                key_node,
                "modifiers",
                f"unknown modifier category '{category}' "
                f"(allowed: {', '.join(MODIFIER_CATEGORIES)})",
            )
        known = out.setdefault(category, {})
        for value, forms in reader.mapping(categories[category], category).items():
            if value in known:
                raise reader.fail(forms, f"{category}.{value}", "value given in another file")
            known[value] = _unique([value, *reader.strings(forms, f"{category}.{value}")])


def _parse_compounds(
    reader: NodeReader, node: yaml.Node, modifiers: dict[str, dict[str, tuple[str, ...]]]
) -> dict[str, dict[str, str]]:
    """Compounds ``{surface form: {category: value}}``; each value must exist in its vocabulary."""
    out: dict[str, dict[str, str]] = {}
    for form, parts_node in reader.mapping(node, "compounds").items():
        parts: dict[str, str] = {}
        for category, value_node in reader.mapping(parts_node, form).items():
            value = reader.scalar(value_node, f"{form}.{category}")
            if value not in modifiers.get(category, {}):
                raise reader.fail(
                    value_node,
                    f"compounds.{form}",
                    f"'{category}: {value}' is not in the modifier vocabularies",
                )
            parts[category] = value
        out[form] = parts
    return out


def _parse_relations(
    reader: NodeReader, node: yaml.Node, modifiers: dict[str, dict[str, tuple[str, ...]]]
) -> dict[tuple[str, str], float]:
    """Modifier relations: ``[a, b]`` or ``{values: [a, b], credit: c}`` items, each pair of
    values of one category in the vocabularies, credit between 0 and 1 (default 0.5)."""
    category = {v: cat for cat, values in modifiers.items() for v in values}
    out: dict[tuple[str, str], float] = {}
    for item in reader.sequence(node, "modifier_relations"):
        credit, credit_node, values_node = RELATED_CREDIT, item, item
        if isinstance(item, yaml.MappingNode):
            fields = reader.mapping(item, "modifier_relations")
            for key, key_node in reader.key_nodes(item).items():
                if key not in ("values", "credit"):
                    raise reader.fail(key_node, key, "unknown key (allowed: credit, values)")
            if "values" not in fields:
                raise reader.fail(item, "values", "missing")
            values_node = fields["values"]
            if "credit" in fields:
                credit_node = fields["credit"]
                credit = _credit(reader, credit_node)
        values = [reader.scalar(v, "values") for v in reader.sequence(values_node, "values")]
        if len(values) != 2 or values[0] == values[1]:
            raise reader.fail(values_node, "modifier_relations", "expected two different values")
        for value in values:
            if value not in category:
                raise reader.fail(values_node, "modifier_relations",
                                  f"'{value}' is not in the modifier vocabularies")
        a, b = values
        if category[a] != category[b]:
            raise reader.fail(values_node, "modifier_relations",
                              f"'{a}' ({category[a]}) and '{b}' ({category[b]}) are of"
                              " different categories")
        if (a, b) in out:
            raise reader.fail(values_node, "modifier_relations", f"'{a}' ~ '{b}' given twice")
        out[(a, b)] = out[(b, a)] = credit
    return out


def _credit(reader: NodeReader, node: yaml.Node) -> float:
    """A relation's credit: a number strictly between 0 and 1."""
    text = reader.scalar(node, "credit")
    try:
        credit = float(text)
    except ValueError:
        raise reader.fail(node, "credit", f"'{text}' is not a number") from None
    if not 0 < credit < 1:
        raise reader.fail(node, "credit", "must be between 0 and 1 (an exact match earns 1)")
    return credit


def dump_lexicon(lexicon: Lexicon) -> str:
    """The lexicon as ``clinsearch-lexicon/1`` YAML text (round-trips through the loader)."""
    concepts = []
    for c in lexicon.concepts.values():
        entry: dict[str, object] = {"id": c.id, "name": c.name, "type": c.type}
        if c.region:
            entry["region"] = c.region
        if c.parents:
            entry["parents"] = list(c.parents)
        terms = [t for t in c.terms if t.lower() != c.name.lower()]
        if terms:
            entry["terms"] = terms
        if c.abbreviations:
            entry["abbreviations"] = list(c.abbreviations)
        if c.states:
            entry["states"] = {state: list(ids) for state, ids in c.states}
        if c.codes:
            entry["codes"] = dict(c.codes)
        concepts.append(entry)
    doc: dict[str, object] = {
        "format": FORMAT,
        "name": lexicon.name,
        "version": lexicon.version,
        "sources": list(lexicon.sources),
        "concepts": concepts,
        "modifiers": {
            cat: {v: list(f) for v, f in vals.items()} for cat, vals in lexicon.modifiers.items()
        },
        "compounds": lexicon.compounds,
    }
    pairs = [(a, b, c) for (a, b), c in lexicon.modifier_relations.items() if (a, b) <= (b, a)]
    if pairs:
        doc["modifier_relations"] = [
            [a, b] if c == RELATED_CREDIT else {"values": [a, b], "credit": c} for a, b, c in pairs
        ]
    if lexicon.plain_words:
        doc["plain_words"] = sorted(lexicon.plain_words)
    vocabulary = lexicon.anatomy_states
    if vocabulary.states:
        doc["anatomy_states"] = {
            "links": sorted(vocabulary.links),
            "coordinators": sorted(vocabulary.coordinators),
            "states": {s.name: {"polarity": s.polarity, "words": list(s.words)}
                       for s in vocabulary.states.values()},
        }
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def load_lexicon(text: str, file: str | Path, include: Include,
                 cache_dir: Path | None = None) -> Lexicon:
    """``parse_lexicon(text, file, include)``, from the private cache when it holds a current
    copy (``lexicon_cache``)."""
    return load_cached(text, file, include, parse=parse_lexicon, to_data=_to_data,
                       from_data=_from_data, code=[sys.modules[__name__]], cache_dir=cache_dir)


def _to_data(lexicon: Lexicon) -> dict[str, Any]:
    """The lexicon as JSON-ready data (``_from_data`` makes it back)."""
    vocabulary = lexicon.anatomy_states
    return {
        "name": lexicon.name, "version": lexicon.version, "path": lexicon.path,
        "sources": list(lexicon.sources), "plain_words": sorted(lexicon.plain_words),
        "concepts": [[c.id, c.name, c.type, c.region, list(c.parents), list(c.terms),
                      list(c.abbreviations), [[s, list(ids)] for s, ids in c.states],
                      [list(code) for code in c.codes]]
                     for c in lexicon.concepts.values()],
        "modifiers": {cat: {v: list(f) for v, f in values.items()}
                      for cat, values in lexicon.modifiers.items()},
        "compounds": lexicon.compounds,
        "relations": [[a, b, credit] for (a, b), credit in lexicon.modifier_relations.items()],
        "states": [[s.name, s.polarity, list(s.words)] for s in vocabulary.states.values()],
        "links": sorted(vocabulary.links), "coordinators": sorted(vocabulary.coordinators),
    }


def _from_data(data: dict[str, Any]) -> Lexicon:
    """The lexicon ``_to_data`` gave (KeyError, TypeError or ValueError on another shape)."""
    concepts = {
        row[0]: Concept(row[0], row[1], row[2], row[3], tuple(row[4]), tuple(row[5]),
                        tuple(row[6]), tuple((s, tuple(ids)) for s, ids in row[7]),
                        tuple((system, code) for system, code in row[8]))
        for row in data["concepts"]
    }
    states = {name: AnatomyState(name, polarity, tuple(words))
              for name, polarity, words in data["states"]}
    return Lexicon(
        name=data["name"], version=data["version"], concepts=concepts,
        modifiers={cat: {v: tuple(f) for v, f in values.items()}
                   for cat, values in data["modifiers"].items()},
        compounds={form: dict(parts) for form, parts in data["compounds"].items()},
        modifier_relations={(a, b): float(credit) for a, b, credit in data["relations"]},
        sources=tuple(data["sources"]), path=data["path"],
        plain_words=frozenset(data["plain_words"]),
        anatomy_states=StateVocabulary(states, frozenset(data["links"]),
                                       frozenset(data["coordinators"])),
    )
