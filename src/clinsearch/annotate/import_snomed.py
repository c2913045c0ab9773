"""Import concepts from a SNOMED CT RF2 release: the description snapshot (names and
synonyms) and the relationship snapshot (IS-A parents), both streamed line by line.

Only active rows count. Name: the fully specified name without its semantic tag
("Pneumonia (disorder)" -> "Pneumonia"); terms: the active synonyms; type: from the semantic
tag (the type map); parents: active IS-A (116680003) relationships between kept concepts.
Filters: language codes and semantic tags. The SCTID is kept as the code SNOMEDCT.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from clinsearch.annotate.licensed import Imported, TypeMap, delimited_lines
from clinsearch.errors import InputError

SYSTEM = "SNOMEDCT"
FSN = "900000000000003001"
SYNONYM = "900000000000013009"
IS_A = "116680003"
DESCRIPTION_FIELDS, RELATIONSHIP_FIELDS = 9, 10
# description: id effectiveTime active moduleId conceptId languageCode typeId term caseSig.
D_ACTIVE, D_CONCEPT, D_LANGUAGE, D_TYPE, D_TERM = 2, 4, 5, 6, 7
# relationship: id effectiveTime active moduleId sourceId destinationId group typeId ...
R_ACTIVE, R_SOURCE, R_DESTINATION, R_TYPE = 2, 4, 5, 7
_SCTID = re.compile(r"\d{6,18}")
_TAG = re.compile(r"^(?P<name>.*\S)\s+\((?P<tag>[^()]+)\)$")


@dataclass(frozen=True, slots=True)
class SnomedFilter:
    """Which descriptions are kept: language codes and semantic tags (empty: all)."""

    languages: frozenset[str] = frozenset({"en"})
    semantic_tags: frozenset[str] = frozenset()


def relationship_file(descriptions: Path) -> Path:
    """The relationship snapshot beside a description snapshot."""
    found = sorted(descriptions.parent.glob("sct2_Relationship_Snapshot*"))
    if not found:
        raise InputError("no sct2_Relationship_Snapshot file beside the descriptions (give"
                         " --relationships)", file=descriptions)
    return found[0]


def read_snomed(descriptions: str | Path, relationships: str | Path | None,
                selection: SnomedFilter, types: TypeMap, default_type: str) -> list[Imported]:
    """The concepts of an RF2 release that pass ``selection``."""
    descriptions = Path(descriptions)
    rel = Path(relationships) if relationships else relationship_file(descriptions)
    fsn: dict[str, tuple[str, str]] = {}  # concept -> (name, semantic tag)
    synonyms: dict[str, list[str]] = {}
    for line, f in delimited_lines(descriptions, "\t", DESCRIPTION_FIELDS, "description",
                                   header=True):
        if not _SCTID.fullmatch(f[D_CONCEPT]):
            raise InputError(f"'{f[D_CONCEPT][:40]}' is not an SCTID", file=descriptions,
                             line=line, field="conceptId")
        if f[D_ACTIVE] not in ("0", "1"):
            raise InputError(f"'{f[D_ACTIVE][:40]}' is not 0 or 1", file=descriptions,
                             line=line, field="active")
        if f[D_ACTIVE] != "1" or (selection.languages
                                  and f[D_LANGUAGE] not in selection.languages):
            continue
        if f[D_TYPE] == FSN:
            match = _TAG.match(f[D_TERM])
            fsn[f[D_CONCEPT]] = ((match["name"], match["tag"]) if match
                                 else (f[D_TERM], ""))
        elif f[D_TYPE] == SYNONYM:
            synonyms.setdefault(f[D_CONCEPT], []).append(f[D_TERM])
    kept = {}
    for sctid, (name, tag) in fsn.items():
        if selection.semantic_tags and tag not in selection.semantic_tags:
            continue
        kept[sctid] = Imported(sctid, name, types.snomed.get(tag, default_type),
                               terms=synonyms.get(sctid, []), codes={SYSTEM: sctid})
    for child, parent in _is_a(rel, kept.keys()):
        kept[child].parents.add(parent)
    return list(kept.values())


def _is_a(path: Path, concepts: Iterable[str]) -> Iterable[tuple[str, str]]:
    """(child, parent) of the active IS-A relationships between kept concepts."""
    kept = set(concepts)
    for _line, f in delimited_lines(path, "\t", RELATIONSHIP_FIELDS, "relationship",
                                    header=True):
        if (f[R_ACTIVE] == "1" and f[R_TYPE] == IS_A and f[R_SOURCE] in kept
                and f[R_DESTINATION] in kept):
            yield f[R_SOURCE], f[R_DESTINATION]
