"""The finding lexicon (``clinsearch-lexicon/1``): concepts, modifier vocabularies, compounds.

Loaded from YAML and validated on load; every error names the file, line and field. The schema is
documented in docs/lexicon.md.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import yaml

from clinsearch.annotate.yaml_nodes import NodeReader, read_document
from clinsearch.user_files import read_user_text

FORMAT = "clinsearch-lexicon/1"
CONCEPT_TYPES: tuple[str, ...] = ("finding", "disease", "anatomy", "device", "technical")
MODIFIER_CATEGORIES: tuple[str, ...] = (
    "laterality",
    "location",
    "severity",
    "temporal",
    "certainty",
)
CONCEPT_KEYS = frozenset({"id", "name", "type", "region", "parents", "terms", "abbreviations",
                          "normal_denies", "codes"})
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
    {"format", "name", "version", "sources", "concepts", "modifiers", "compounds",
     "modifier_relations", "plain_words"}
)
RELATED_CREDIT = 0.5  # default credit of a modifier relation: half an exact match
_ID_RE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)*$")
SHIPPED = "chest_xray.yaml"


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
    # Anatomy: the findings a statement that it is normal rules out ("heart size is normal":
    # cardiomegaly absent; "lungs are clear": the airspace findings listed here absent).
    normal_denies: tuple[str, ...] = ()
    # Codes of the concept in licensed vocabularies, (system, code) sorted by system, e.g.
    # (("RADLEX", "RID5350"), ("UMLS", "C0032285")): carried into exports (OMOP NOTE_NLP).
    codes: tuple[tuple[str, str], ...] = ()

    @property
    def surface_forms(self) -> tuple[str, ...]:
        """The name and the terms, without duplicates (case-insensitive), name first."""
        return _unique((self.name, *self.terms))


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

    @classmethod
    def load(cls, path: str | Path | None = None) -> Lexicon:
        """Load and validate a lexicon file; ``None`` loads the shipped chest X-ray lexicon."""
        if path is None:
            ref = resources.files("clinsearch.annotate") / "data" / SHIPPED
            return parse_lexicon(ref.read_text(encoding="utf-8"), f"<shipped>/{SHIPPED}")
        path = Path(path)
        return parse_lexicon(read_user_text(path), path)

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


def parse_lexicon(text: str, file: str | Path) -> Lexicon:
    """Parse and validate lexicon YAML text; errors name ``file``, the line and the field."""
    reader, root, top = read_document(text, file, "lexicon", TOP_KEYS)
    if "format" not in top:
        raise reader.fail(root, "format", f"missing; expected '{FORMAT}'")
    fmt = reader.scalar(top["format"], "format")
    if fmt != FORMAT:
        raise reader.fail(
            top["format"], "format", f"unsupported format '{fmt}'; expected '{FORMAT}'"
        )
    if "concepts" not in top:
        raise reader.fail(root, "concepts", "missing")
    concepts = _parse_concepts(reader, top["concepts"])
    modifiers = _parse_modifiers(reader, top["modifiers"]) if "modifiers" in top else {}
    compounds = _parse_compounds(reader, top["compounds"], modifiers) if "compounds" in top else {}
    relations = (_parse_relations(reader, top["modifier_relations"], modifiers)
                 if "modifier_relations" in top else {})
    return Lexicon(
        name=reader.scalar(top["name"], "name") if "name" in top else Path(str(file)).stem,
        version=reader.scalar(top["version"], "version") if "version" in top else "",
        concepts=concepts,
        modifiers=modifiers,
        compounds=compounds,
        modifier_relations=relations,
        sources=tuple(reader.strings(top["sources"], "sources")) if "sources" in top else (),
        path=str(file),
        plain_words=frozenset(w.lower() for w in reader.strings(top["plain_words"], "plain_words"))
        if "plain_words" in top else frozenset(),
    )


def _parse_concepts(reader: NodeReader, node: yaml.Node) -> dict[str, Concept]:
    """The concept list; checks ids, names, types, and that parents exist."""
    concepts: dict[str, Concept] = {}
    ref_nodes: list[tuple[str, str, yaml.Node]] = []  # (concept, key, node) naming other ids
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
            normal_denies=tuple(reader.strings(fields["normal_denies"], "normal_denies"))
            if "normal_denies" in fields
            else (),
            codes=_parse_codes(reader, fields["codes"]) if "codes" in fields else (),
        )
        for key in ("parents", "normal_denies"):
            if key in fields:
                ref_nodes.append((cid, key, fields[key]))
    for cid, key, ref_node in ref_nodes:
        for ref in getattr(concepts[cid], key):
            if ref not in concepts:
                raise reader.fail(ref_node, key, f"concept '{cid}' names unknown concept '{ref}'")
    return concepts


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


def _parse_modifiers(reader: NodeReader, node: yaml.Node) -> dict[str, dict[str, tuple[str, ...]]]:
    """Modifier vocabularies ``{category: {value: forms}}``; the value is a form too."""
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    categories = reader.mapping(node, "modifiers")
    for category, key_node in reader.key_nodes(node).items():
        if category not in MODIFIER_CATEGORIES:
            raise reader.fail(
                key_node,
                "modifiers",
                f"unknown modifier category '{category}' "
                f"(allowed: {', '.join(MODIFIER_CATEGORIES)})",
            )
        values = reader.mapping(categories[category], category)
        out[category] = {
            value: _unique([value, *reader.strings(forms, f"{category}.{value}")])
            for value, forms in values.items()
        }
    return out


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
        if c.normal_denies:
            entry["normal_denies"] = list(c.normal_denies)
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
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
