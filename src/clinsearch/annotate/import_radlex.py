"""Import concepts from a RadLex release: its OWL file (RDF/XML) or its CSV (the BioPortal
class export), both streamed. The RID is kept as the code RADLEX.

OWL: each ``owl:Class`` whose ``rdf:about`` ends in ``#RIDn`` is a concept; its name is its
``Preferred_name`` (else ``rdfs:label``), its terms its ``Synonym`` values, its parents the RIDs
of its ``rdfs:subClassOf``; classes marked ``Obsolete`` (or deprecated) are left out. Values in
another language (``xml:lang`` other than en) are ignored.
CSV: columns ``Class ID``, ``Preferred Label``, ``Synonyms`` and ``Parents`` (several values
separated by '|'), ``Obsolete``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from clinsearch.annotate.licensed import Imported
from clinsearch.corpus.readers.textio import read_csv_rows
from clinsearch.errors import InputError

SYSTEM = "RADLEX"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
XML_LANG = "http://www.w3.org/XML/1998/namespace lang"
_RID = re.compile(r"(?:^|[#/])(RID\d+)$")
CSV_ID, CSV_NAME, CSV_SYNONYMS, CSV_PARENTS, CSV_OBSOLETE = (
    "Class ID", "Preferred Label", "Synonyms", "Parents", "Obsolete")
_CHUNK = 1 << 16


def rid_of(value: str) -> str | None:
    """The RID a RadLex IRI or id names ("http://www.radlex.org/RID/#RID5350" -> RID5350)."""
    match = _RID.search(value.strip())
    return match.group(1) if match else None


def read_radlex_csv(path: str | Path, default_type: str) -> list[Imported]:
    """The concepts of the RadLex CSV release (header row; one class per row), streamed."""
    path = Path(path)
    out = []
    for row in read_csv_rows(path, (CSV_ID, CSV_NAME)):
        if isinstance(row, InputError):
            raise row
        cell = {k: v.strip() for k, v in row.values.items()}
        rid = rid_of(cell[CSV_ID])
        if rid is None:
            raise InputError(f"'{cell[CSV_ID][:40]}' names no RID", file=path, line=row.line,
                             field=CSV_ID)
        if cell.get(CSV_OBSOLETE, "").lower() in ("true", "1", "yes") or not cell[CSV_NAME]:
            continue
        parents = {p for p in map(rid_of, _values(cell.get(CSV_PARENTS, ""))) if p}
        out.append(Imported(rid, cell[CSV_NAME], default_type,
                            _values(cell.get(CSV_SYNONYMS, "")), parents, {SYSTEM: rid}))
    return out


def _values(cell: str) -> list[str]:
    """The '|'-separated values of a cell."""
    return [v.strip() for v in cell.split("|") if v.strip()]


def read_radlex_owl(path: str | Path, default_type: str) -> list[Imported]:
    """The concepts of the RadLex OWL release (RDF/XML), parsed as a stream."""
    path = Path(path)
    parser = _OwlParser(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=path) from None
    with handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            parser.feed(chunk)
        parser.feed(b"", final=True)
    return [Imported(c.rid, c.name or c.label, default_type, c.terms, c.parents, {SYSTEM: c.rid})
            for c in parser.classes if (c.name or c.label) and not c.obsolete]


@dataclass(slots=True)
class _Class:
    """The values of one RadLex class as they are read."""

    rid: str
    name: str = ""
    label: str = ""
    terms: list[str] = field(default_factory=list)
    parents: set[str] = field(default_factory=set)
    obsolete: bool = False


class _OwlParser:
    """Collects the RadLex classes (``owl:Class`` elements with a RID) of an RDF/XML file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.classes: list[_Class] = []
        self._p = expat.ParserCreate(namespace_separator=" ")
        self._p.StartElementHandler = self._start
        self._p.EndElementHandler = self._end
        self._p.CharacterDataHandler = self._chars
        self._p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        self._p.EntityDeclHandler = self._entity
        self._p.ExternalEntityRefHandler = self._external
        self._depth = 0
        self._class: _Class | None = None
        self._class_depth = 0
        self._text: list[str] | None = None  # character data of the open property
        self._property = ""

    def feed(self, data: bytes, final: bool = False) -> None:
        """Parse the next bytes; malformed XML raises InputError with its line."""
        try:
            self._p.Parse(data, final)
        except expat.ExpatError as exc:
            raise InputError(f"malformed XML: {expat.ErrorString(exc.code)}", file=self.path,
                             line=exc.lineno) from None

    def _entity(self, name: str, is_parameter: int, value: str | None, _base: str | None,
                system_id: str | None, *_: object) -> None:
        """Accept the plain IRI abbreviations RDF/XML files declare (``<!ENTITY owl "...">``);
        refuse external, parameter and nested entities (file access, exponential expansion)."""
        if is_parameter or system_id is not None or value is None or "&" in value:
            raise InputError(f"entity '{name}' is not a plain text entity (external, parameter"
                             " and nested entities are refused)", file=self.path,
                             line=self._p.CurrentLineNumber)

    def _external(self, *_: object) -> int:
        raise InputError("external entities are refused", file=self.path,
                         line=self._p.CurrentLineNumber)

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self._depth += 1
        if self._class is None:
            rid = rid_of(attrs.get(RDF + " about", "")) if name == OWL + " Class" else None
            if rid is not None:
                self._class, self._class_depth = _Class(rid), self._depth
            return
        if self._depth != self._class_depth + 1:  # only the class's own properties
            return
        local = name.split(" ")[-1]
        if local == "subClassOf":
            parent = rid_of(attrs.get(RDF + " resource", ""))
            if parent:
                self._class.parents.add(parent)
        elif attrs.get(XML_LANG, "en").lower().startswith("en"):
            self._property, self._text = local, []

    def _chars(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def _end(self, _name: str) -> None:
        c = self._class
        if c is not None and self._text is not None and self._depth == self._class_depth + 1:
            value, prop, self._text = "".join(self._text).strip(), self._property, None
            if prop == "Preferred_name" and value:
                c.name = value
            elif prop == "label" and value:
                c.label = value
            elif prop == "Synonym" and value:
                c.terms.append(value)
            elif prop in ("Obsolete", "deprecated") and value.lower() in ("true", "1"):
                c.obsolete = True
        if c is not None and self._depth == self._class_depth:
            self.classes.append(c)
            self._class = None
        self._depth -= 1
