"""Import concepts from a UMLS Metathesaurus release (RRF): MRCONSO.RRF names and synonyms,
MRSTY.RRF semantic types, MRREL.RRF parents. Every file is streamed line by line (a full
MRCONSO is ~15 GB); only the rows that pass the filters are kept.

Filters: source vocabularies (SAB), languages (LAT), semantic types (TUI or STY name);
suppressible and obsolete atoms are left out. Name: the concept's preferred atom (TS=P,
STT=PF, ISPREF=Y) among the kept ones; terms: every kept string. Parents: MRREL rows with REL
PAR (CUI2 is a parent of CUI1) or RB (CUI2 is broader), between kept concepts, of the kept
source vocabularies. Codes: the CUI (UMLS) and, per kept source vocabulary, its first code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from clinsearch.annotate.licensed import Imported, TypeMap, delimited_lines
from clinsearch.errors import InputError

MRCONSO = "MRCONSO.RRF"
MRSTY = "MRSTY.RRF"
MRREL = "MRREL.RRF"
# column positions (RRF: fields separated by '|', each line ending with one)
CONSO_FIELDS, STY_FIELDS, REL_FIELDS = 18, 6, 16
CUI, LAT, TS, STT, ISPREF, SAB, CODE, STR, SUPPRESS = 0, 1, 2, 4, 6, 11, 13, 14, 16
STY_CUI, STY_TUI, STY_NAME = 0, 1, 3
REL_CUI1, REL_REL, REL_CUI2, REL_SAB = 0, 3, 4, 10
PARENT_RELS = frozenset({"PAR", "RB"})
LEFT_OUT = frozenset({"O", "E", "Y"})  # obsolete, suppressible by editors or by the source
_CUI_RE = re.compile(r"C\d{7}")


@dataclass(frozen=True, slots=True)
class UmlsFilter:
    """Which rows are kept: source vocabularies, languages, semantic types (empty: all)."""

    sabs: frozenset[str] = frozenset()
    languages: frozenset[str] = frozenset({"ENG"})
    semantic_types: frozenset[str] = frozenset()  # TUIs ("T047") or names ("Disease or Syndrome")


def rrf_files(source: Path) -> tuple[Path, Path, Path]:
    """MRCONSO, MRSTY and MRREL of a release: ``source`` is the folder holding them, or the
    MRCONSO file with the others beside it."""
    folder = source if source.is_dir() else source.parent
    conso = source if not source.is_dir() else folder / MRCONSO
    paths = (conso, folder / MRSTY, folder / MRREL)
    for path in paths:
        if not path.is_file():
            raise InputError(f"no {path.name} (a UMLS release needs {MRCONSO}, {MRSTY} and"
                             f" {MRREL} in one folder)", file=path)
    return paths


def read_umls(source: str | Path, selection: UmlsFilter, types: TypeMap,
              default_type: str) -> list[Imported]:
    """The concepts of a UMLS release that pass ``selection``."""
    conso, sty, rel = rrf_files(Path(source))
    concepts = _names(conso, selection)
    semantic = _semantic_types(sty, concepts.keys())
    kept = {}
    for cui, record in concepts.items():
        tuis = semantic.get(cui, [])
        if selection.semantic_types and not any(
                t in selection.semantic_types or n in selection.semantic_types for t, n in tuis):
            continue
        record.type = next((types.umls[t] for t, _ in tuis if t in types.umls), default_type)
        kept[cui] = record
    for cui, parent in _parents(rel, kept.keys(), selection.sabs):
        kept[cui].parents.add(parent)
    return list(kept.values())


def _names(path: Path, selection: UmlsFilter) -> dict[str, Imported]:
    """CUI -> record with the name, terms and codes of the kept MRCONSO rows."""
    out: dict[str, Imported] = {}
    preferred: set[str] = set()
    for line, f in delimited_lines(path, "|", CONSO_FIELDS, MRCONSO, trailing=True):
        if not _CUI_RE.fullmatch(f[CUI]):
            raise InputError(f"'{f[CUI][:40]}' is not a CUI", file=path, line=line, field="CUI")
        if (f[SUPPRESS] in LEFT_OUT or (selection.sabs and f[SAB] not in selection.sabs)
                or (selection.languages and f[LAT] not in selection.languages) or not f[STR]):
            continue
        record = out.get(f[CUI])
        if record is None:
            record = out[f[CUI]] = Imported(f[CUI], f[STR], "", codes={"UMLS": f[CUI]})
        if f[TS] == "P" and f[STT] == "PF" and f[ISPREF] == "Y" and f[CUI] not in preferred:
            preferred.add(f[CUI])
            record.name = f[STR]
        record.terms.append(f[STR])
        if f[CODE] and f[CODE] != "NOCODE":
            record.codes.setdefault(f[SAB], f[CODE])
    return out


def _semantic_types(path: Path, cuis: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """CUI -> its (TUI, semantic type name) pairs, for the kept CUIs."""
    wanted = set(cuis)
    out: dict[str, list[tuple[str, str]]] = {}
    for _line, f in delimited_lines(path, "|", STY_FIELDS, MRSTY, trailing=True):
        if f[STY_CUI] in wanted:
            out.setdefault(f[STY_CUI], []).append((f[STY_TUI], f[STY_NAME]))
    return out


def _parents(path: Path, cuis: Iterable[str], sabs: frozenset[str]
             ) -> Iterable[tuple[str, str]]:
    """(child CUI, parent CUI) of the MRREL PAR/RB rows between kept concepts."""
    kept = set(cuis)
    for _line, f in delimited_lines(path, "|", REL_FIELDS, MRREL, trailing=True):
        if (f[REL_REL] in PARENT_RELS and f[REL_CUI1] in kept and f[REL_CUI2] in kept
                and (not sabs or f[REL_SAB] in sabs)):
            yield f[REL_CUI1], f[REL_CUI2]
