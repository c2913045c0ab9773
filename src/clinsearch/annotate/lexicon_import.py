"""Import user vocabularies into a lexicon: CSV (concept, term[, type]), OBO ontologies and the
licensed vocabularies (UMLS RRF, SNOMED CT RF2, RadLex OWL or CSV, with their concept codes).

Imported concepts are merged into a base lexicon (same id or same preferred name: terms are
added) or replace its concepts (the modifier vocabularies are kept either way).
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Callable
from pathlib import Path

from clinsearch.annotate.lexicon import (
    CONCEPT_TYPES,
    Concept,
    Lexicon,
    dump_lexicon,
    parse_lexicon,
    slug,
)
from clinsearch.errors import InputError
from clinsearch.exports import check_export_path, open_export
from clinsearch.user_files import read_user_text

OBO_SYNONYM_SCOPES = frozenset({"EXACT", "RELATED"})


def _check_type(value: str, file: Path, line: int | None) -> str:
    """A valid concept type, or an InputError."""
    if value not in CONCEPT_TYPES:
        allowed = ", ".join(CONCEPT_TYPES)
        raise InputError(
            f"unknown type '{value}' (allowed: {allowed})", file=file, line=line, field="type"
        )
    return value


def read_csv_concepts(path: str | Path, default_type: str = "finding") -> dict[str, Concept]:
    """Concepts from CSV rows ``concept, term[, type]`` (an optional header row is skipped)."""
    path = Path(path)
    _check_type(default_type, path, None)
    names: dict[str, str] = {}
    types: dict[str, tuple[str, int]] = {}
    terms: dict[str, list[str]] = {}
    text = read_user_text(path)  # a regular file only, UTF-8 (a bad byte names its line)
    try:
        for line, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
            cells = [c.strip() for c in row]
            if not any(cells):
                continue
            if line == 1 and cells[0].lower() == "concept":
                continue
            if len(cells) < 2 or not cells[0] or not cells[1]:
                raise InputError("expected: concept, term[, type]", file=path, line=line)
            cid = slug(cells[0])
            if not cid:
                raise InputError(
                    "concept has no letters or digits", file=path, line=line, field="concept"
                )
            names.setdefault(cid, cells[0])
            terms.setdefault(cid, []).append(cells[1])
            if len(cells) > 2 and cells[2]:
                ctype = _check_type(cells[2], path, line)
                if cid in types and types[cid][0] != ctype:
                    first, first_line = types[cid]
                    raise InputError(
                        f"concept '{cells[0]}' has type '{first}' on line {first_line}",
                        file=path,
                        line=line,
                        field="type",
                    )
                types[cid] = (ctype, line)
    except csv.Error as exc:
        raise InputError(f"not a readable CSV file: {exc}", file=path) from None
    if not names:
        raise InputError("no concepts found", file=path)
    return {
        cid: Concept(cid, name, types.get(cid, (default_type, 0))[0], terms=tuple(terms[cid]))
        for cid, name in names.items()
    }


def read_obo_concepts(path: str | Path, default_type: str = "finding") -> dict[str, Concept]:
    """Concepts from an OBO ontology: names, exact and related synonyms, parents (is_a)."""
    import pronto

    path = Path(path)
    _check_type(default_type, path, None)
    try:
        ontology = pronto.Ontology(str(path))
    except Exception as exc:  # pronto raises many kinds of errors for bad files
        raise InputError(f"not a readable OBO ontology: {exc}", file=path) from None
    terms = [t for t in ontology.terms() if t.name and not t.obsolete]
    if not terms:
        raise InputError("no named terms found", file=path)
    ids = {t.id: slug(t.id) for t in terms}
    concepts: dict[str, Concept] = {}
    for t in terms:
        synonyms = sorted(s.description for s in t.synonyms if s.scope in OBO_SYNONYM_SCOPES)
        parents = sorted(
            ids[p.id] for p in t.superclasses(distance=1, with_self=False) if p.id in ids
        )
        cid = ids[t.id]
        concepts[cid] = Concept(
            cid, t.name, default_type, parents=tuple(parents), terms=tuple(synonyms)
        )
    return concepts


Collision = tuple[str, str, str]  # (imported concept, its term, the base concept it names)


def collisions(base: Lexicon, imported: dict[str, Concept]) -> list[Collision]:
    """(imported concept, its term, base concept) for each imported name, term or abbreviation
    that is already a surface form of another base concept: merged, the term would silently
    stop finding that concept."""
    owner: dict[str, str] = {}
    for c in base.concepts.values():
        for form in (*c.surface_forms, *c.abbreviations):
            owner.setdefault(form.lower(), c.id)
    by_name = {c.name.lower(): c.id for c in base.concepts.values()}
    out = []
    for concept in imported.values():
        target = concept.id if concept.id in base.concepts else by_name.get(concept.name.lower())
        for form in dict.fromkeys((concept.name, *concept.terms, *concept.abbreviations)):
            other = owner.get(form.lower())
            if other is not None and other != target:
                out.append((concept.id, form, other))
    return out


def merge_concepts(base: Lexicon, imported: dict[str, Concept], replace: bool = False,
                   skip_collisions: bool = False,
                   on_skipped: Callable[[Collision], None] | None = None) -> Lexicon:
    """``base`` with ``imported`` concepts merged in (or replacing its concepts), validated.

    An imported term that already names another base concept is an error listing every such
    collision; with ``skip_collisions`` those terms are left out instead, each one passed to
    ``on_skipped``.
    """
    if replace:
        merged = dict(imported)
    else:
        clashes = collisions(base, imported)
        if clashes and not skip_collisions:
            shown = "; ".join(f"'{form}' of {cid} is already a term of {other}"
                              for cid, form, other in clashes[:5])
            more = f" (and {len(clashes) - 5} more)" if len(clashes) > 5 else ""
            raise InputError(f"{len(clashes)} imported term(s) collide with existing concepts:"
                             f" {shown}{more}; rename them, or pass `skip_collisions` to leave"
                             " them out", field="terms")
        if on_skipped is not None:
            for clash in clashes:
                on_skipped(clash)
        dropped = {(cid, form.lower()) for cid, form, _ in clashes}
        imported = {cid: _without(c, {f for i, f in dropped if i == cid})
                    for cid, c in imported.items()}
        merged = dict(base.concepts)
        by_name = {c.name.lower(): c.id for c in base.concepts.values()}
        for concept in imported.values():
            target = concept.id if concept.id in merged else by_name.get(concept.name.lower())
            if target is None:
                merged[concept.id] = concept
                continue
            old = merged[target]
            merged[target] = dataclasses.replace(
                old,
                parents=tuple(dict.fromkeys(old.parents + concept.parents)),
                terms=tuple(dict.fromkeys((*old.terms, concept.name, *concept.terms))),
                abbreviations=tuple(dict.fromkeys(old.abbreviations + concept.abbreviations)),
                codes=tuple(sorted((dict(concept.codes) | dict(old.codes)).items())),
            )
    lexicon = base.with_concepts(merged)
    return parse_lexicon(dump_lexicon(lexicon), base.path or "<merged>")


def _without(concept: Concept, forms: set[str]) -> Concept:
    """``concept`` without the terms and abbreviations in ``forms`` (lower-case)."""
    if not forms:
        return concept
    return dataclasses.replace(
        concept, terms=tuple(t for t in concept.terms if t.lower() not in forms),
        abbreviations=tuple(a for a in concept.abbreviations if a.lower() not in forms))


LICENSED_FORMATS = ("umls", "snomed", "radlex-owl", "radlex-csv")
FORMATS = ("csv", "obo", *LICENSED_FORMATS)


@dataclasses.dataclass(frozen=True, slots=True)
class LicensedOptions:
    """Filters and companion files of the licensed formats (empty filters keep everything;
    ``languages`` empty: ENG for UMLS, en for SNOMED CT)."""

    sources: frozenset[str] = frozenset()  # UMLS source vocabularies (SAB)
    languages: frozenset[str] = frozenset()
    semantic_types: frozenset[str] = frozenset()  # UMLS TUI/STY, or SNOMED CT semantic tags
    relationships: Path | None = None  # SNOMED CT relationship snapshot (default: beside)
    type_map: Path | None = None  # default: the shipped licensed_types.yaml


def read_concepts(source: str | Path, fmt: str, default_type: str = "finding",
                  options: LicensedOptions = LicensedOptions()) -> dict[str, Concept]:
    """The concepts of ``source`` read as ``fmt`` (csv, obo, umls, snomed, radlex-owl,
    radlex-csv); licensed formats keep each concept's code (``Concept.codes``)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown import format '{fmt}' (allowed: {', '.join(FORMATS)})",
                         field="format")
    _check_type(default_type, Path(source), None)
    if fmt == "csv":
        return read_csv_concepts(source, default_type)
    if fmt == "obo":
        return read_obo_concepts(source, default_type)
    from clinsearch.annotate.licensed import TypeMap, to_concepts

    types = TypeMap.load(options.type_map)
    if fmt == "umls":
        from clinsearch.annotate.import_umls import UmlsFilter, read_umls

        selection = UmlsFilter(options.sources, options.languages or frozenset({"ENG"}),
                               options.semantic_types)
        records = read_umls(source, selection, types, default_type)
    elif fmt == "snomed":
        from clinsearch.annotate.import_snomed import SnomedFilter, read_snomed

        records = read_snomed(source, options.relationships, SnomedFilter(
            options.languages or frozenset({"en"}), options.semantic_types), types,
            default_type)
    elif fmt == "radlex-owl":
        from clinsearch.annotate.import_radlex import read_radlex_owl

        records = read_radlex_owl(source, default_type)
    else:
        from clinsearch.annotate.import_radlex import read_radlex_csv

        records = read_radlex_csv(source, default_type)
    if not records:
        raise InputError("no concepts found (check the filters)", file=source)
    return to_concepts(records)


def term_collisions(concepts: dict[str, Concept]) -> list[tuple[str, tuple[str, ...]]]:
    """(term, concept ids) for each surface form (case-insensitive) that several imported
    concepts share: in text it would find all of them."""
    owners: dict[str, list[str]] = {}
    shown: dict[str, str] = {}
    for c in concepts.values():
        for form in c.surface_forms:
            key = form.lower()
            shown.setdefault(key, form)
            if c.id not in owners.setdefault(key, []):
                owners[key].append(c.id)
    return sorted((shown[k], tuple(sorted(ids))) for k, ids in owners.items() if len(ids) > 1)


def write_collisions(path: str | Path, shared: list[tuple[str, tuple[str, ...]]],
                     concepts: dict[str, Concept], force: bool = False) -> Path:
    """Write ``term<TAB>concepts<TAB>codes`` for each term several imported concepts share
    (an export: private, replaced only if ``force``)."""
    with open_export(Path(path), force=force) as out:
        out.write("term\tconcepts\tcodes\n")
        for term, ids in shared:
            codes = ",".join(":".join(code) for cid in ids for code in concepts[cid].codes)
            out.write(f"{term}\t{','.join(ids)}\t{codes}\n")
    return Path(path)


def import_lexicon(
    source: str | Path,
    fmt: str,
    out: str | Path,
    base: Lexicon | None = None,
    replace: bool = False,
    default_type: str = "finding",
    force: bool = False,
    skip_collisions: bool = False,
    on_skipped: Callable[[Collision], None] | None = None,
    options: LicensedOptions = LicensedOptions(),
    on_shared: Callable[[list[tuple[str, tuple[str, ...]]], dict[str, Concept]], None]
    | None = None,
) -> Lexicon:
    """Read ``source`` (see ``read_concepts``), merge into ``base`` (default: shipped), write
    the export ``out`` (replaced only if ``force``); ``on_skipped`` gets each (concept, term,
    other concept) left out by ``skip_collisions``, ``on_shared`` the terms that several
    imported concepts share (with the imported concepts) once ``out`` is written."""
    check_export_path(Path(out), force)  # before the work, so a bad --out fails at once
    imported = read_concepts(source, fmt, default_type, options)
    merged = merge_concepts(base if base is not None else Lexicon.load(), imported, replace,
                            skip_collisions, on_skipped)
    with open_export(out, force=force) as handle:
        handle.write(dump_lexicon(merged))
    if on_shared is not None:
        on_shared(term_collisions(imported), imported)
    return merged
