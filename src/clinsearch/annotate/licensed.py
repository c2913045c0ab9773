"""Shared pieces of the licensed-vocabulary importers (UMLS, SNOMED CT, RadLex): streamed
delimited lines with file:line errors, the type map (data), concept ids, and term collisions.

Each importer yields ``Imported`` records keyed by the vocabulary's own code; ``to_concepts``
turns them into lexicon concepts (snake_case ids from the preferred names, parents among the
imported codes, the code kept in ``Concept.codes``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from clinsearch.annotate.lexicon import CONCEPT_TYPES, Concept, slug
from clinsearch.annotate.yaml_nodes import data_text, read_document
from clinsearch.errors import InputError

TYPES_FILE = "licensed_types.yaml"


@dataclass(slots=True)
class Imported:
    """One concept as a vocabulary gives it: code, preferred name, type, terms, parent codes,
    and its codes in any system (``{"UMLS": "C0032285", ...}``)."""

    code: str
    name: str
    type: str
    terms: list[str] = field(default_factory=list)
    parents: set[str] = field(default_factory=set)
    codes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TypeMap:
    """Concept types of UMLS semantic types (TUI) and SNOMED CT semantic tags."""

    umls: dict[str, str]
    snomed: dict[str, str]

    @classmethod
    def load(cls, path: str | Path | None = None) -> TypeMap:
        """The type map at ``path`` (None: the shipped one), validated with file:line errors."""
        text, file = data_text(path, "clinsearch.annotate", TYPES_FILE, "type map")
        reader, _root, top = read_document(text, file, "type map",
                                           ("umls_semantic_types", "snomed_semantic_tags"))
        maps = []
        for key in ("umls_semantic_types", "snomed_semantic_tags"):
            entries = reader.mapping(top[key], key) if key in top else {}
            out = {}
            for name, node in entries.items():
                value = reader.scalar(node, f"{key}.{name}")
                if value not in CONCEPT_TYPES:
                    raise reader.fail(node, f"{key}.{name}", f"unknown type '{value}' (allowed:"
                                      f" {', '.join(CONCEPT_TYPES)})")
                out[name] = value
            maps.append(out)
        return cls(*maps)


def delimited_lines(path: Path, sep: str, fields: int, what: str, *, header: bool = False,
                    trailing: bool = False) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each line of ``path``, read one line at a time (a file of any
    size); a line that is not UTF-8 or has another number of fields is an InputError naming
    file, line and ``what``. ``trailing``: each line ends with the separator (RRF);
    ``header``: the first line names the columns and is skipped."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise InputError("bytes that are not UTF-8", file=path, line=number,
                                 field=what) from None
            if (header and number == 1) or not line:
                continue
            parts = line.split(sep)
            if trailing:
                if parts[-1] != "":
                    raise InputError(f"expected a trailing '{sep}'", file=path, line=number,
                                     field=what)
                parts.pop()
            if len(parts) != fields:
                raise InputError(f"expected {fields} fields, found {len(parts)}", file=path,
                                 line=number, field=what)
            yield number, parts


def to_concepts(records: Iterable[Imported]) -> dict[str, Concept]:
    """Lexicon concepts of imported records: id = the preferred name as snake_case (its code
    appended when two names give the same id), parents limited to imported codes."""
    items = list(records)
    ids: dict[str, str] = {}
    taken: set[str] = set()
    for r in sorted(items, key=lambda r: (r.name.lower(), r.code)):
        cid = slug(r.name) or slug(r.code)
        if cid in taken:
            cid = f"{cid}_{slug(r.code)}"
        taken.add(cid)
        ids[r.code] = cid
    out = {}
    for r in items:
        terms = tuple(dict.fromkeys(t for t in r.terms if t.lower() != r.name.lower()))
        parents = tuple(sorted(ids[p] for p in r.parents if p in ids and p != r.code))
        out[ids[r.code]] = Concept(ids[r.code], r.name, r.type, parents=parents, terms=terms,
                                   codes=tuple(sorted(r.codes.items())))
    return out
