"""Import user vocabularies into a lexicon: CSV (concept, term[, type]) and OBO ontologies.

Imported concepts are merged into a base lexicon (same id or same preferred name: terms are
added) or replace its concepts (the modifier vocabularies are kept either way).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from pathlib import Path

from clinsearch.annotate.lexicon import CONCEPT_TYPES, Concept, Lexicon, dump_lexicon, parse_lexicon
from clinsearch.errors import InputError
from clinsearch.exports import check_export_path, open_export
from clinsearch.user_files import read_user_text

OBO_SYNONYM_SCOPES = frozenset({"EXACT", "RELATED"})


def slug(text: str) -> str:
    """A lowercase snake_case concept id made from a name or an ontology id."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


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
            merged[target] = Concept(
                old.id,
                old.name,
                old.type,
                old.region,
                tuple(dict.fromkeys(old.parents + concept.parents)),
                tuple(dict.fromkeys((*old.terms, concept.name, *concept.terms))),
                tuple(dict.fromkeys(old.abbreviations + concept.abbreviations)),
            )
    lexicon = base.with_concepts(merged)
    return parse_lexicon(dump_lexicon(lexicon), base.path or "<merged>")


def _without(concept: Concept, forms: set[str]) -> Concept:
    """``concept`` without the terms and abbreviations in ``forms`` (lower-case)."""
    if not forms:
        return concept
    return Concept(concept.id, concept.name, concept.type, concept.region, concept.parents,
                   tuple(t for t in concept.terms if t.lower() not in forms),
                   tuple(a for a in concept.abbreviations if a.lower() not in forms))


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
) -> Lexicon:
    """Read ``source`` (csv or obo), merge into ``base`` (default: shipped), write the export
    ``out`` (replaced only if ``force``); ``on_skipped`` gets each (concept, term, other
    concept) left out by ``skip_collisions``."""
    readers = {"csv": read_csv_concepts, "obo": read_obo_concepts}
    if fmt not in readers:
        raise InputError(f"unknown import format '{fmt}' (allowed: csv, obo)", field="format")
    check_export_path(Path(out), force)  # before the work, so a bad --out fails at once
    imported = readers[fmt](source, default_type)
    merged = merge_concepts(base if base is not None else Lexicon.load(), imported, replace,
                            skip_collisions, on_skipped)
    with open_export(out, force=force) as handle:
        handle.write(dump_lexicon(merged))
    return merged
