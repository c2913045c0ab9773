"""The ``cmc2007`` readers: the CMC 2007 Medical NLP Challenge XML (pediatric radiology reports
with ICD-9-CM codes).

Each ``<doc id=...>`` becomes one report: id = the doc id, text = its ``CLINICAL_HISTORY`` and
``IMPRESSION`` texts as headed sections ("CLINICAL HISTORY: ...\\nIMPRESSION: ..."), metadata
``codes`` = the majority (``CMC_MAJORITY``) codes joined by ";". ``cmc2007`` reads every report,
``cmc2007-coded`` only those with codes (the challenge's training reports, the ones a benchmark
can judge). The file is parsed as a stream (expat); a DTD or entity declaration is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.records import (
    MISSING_FIELD,
    UNREADABLE,
    ReadContext,
    RecordError,
    make_report,
)
from clinsearch.errors import InputError

REPORT_TYPE = "radiology"
MAJORITY = "CMC_MAJORITY"
CODES_FIELD = "codes"
# section type in the XML -> heading written into the report text (the segmenter's names)
SECTIONS = {"CLINICAL_HISTORY": "CLINICAL HISTORY", "IMPRESSION": "IMPRESSION"}
_FIELDS = {"id": "doc/@id", "text": "texts/text", "date": "date"}
_CHUNK = 1 << 16


@dataclass(slots=True)
class _Doc:
    """One ``<doc>`` as it is read: its id, line, codes and section texts."""

    id: str
    line: int
    codes: list[str] = field(default_factory=list)
    sections: dict[str, list[str]] = field(default_factory=dict)


class _Parser:
    """An expat parser that collects finished ``<doc>`` elements."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: list[_Doc | RecordError] = []
        self._doc: _Doc | None = None
        self._buffer: list[str] | None = None  # character data of the open code/text element
        self._target: tuple[str, str] = ("", "")  # (element, code origin or section type)
        self._p = expat.ParserCreate()
        self._p.StartElementHandler = self._start
        self._p.EndElementHandler = self._end
        self._p.CharacterDataHandler = self._chars
        self._p.StartDoctypeDeclHandler = self._refuse
        self._p.EntityDeclHandler = self._refuse

    def feed(self, data: bytes, final: bool = False) -> None:
        """Parse the next bytes; malformed XML raises InputError with its line."""
        try:
            self._p.Parse(data, final)
        except expat.ExpatError as exc:
            raise InputError(f"malformed XML: {expat.ErrorString(exc.code)}",
                             file=self.path, line=exc.lineno) from None

    def _refuse(self, *_: object) -> None:
        raise InputError("DTD and entity declarations are not accepted", file=self.path,
                         line=self._p.CurrentLineNumber)

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        line = self._p.CurrentLineNumber
        if name == "doc":
            self._doc = _Doc(attrs.get("id", "").strip(), line)
        elif self._doc is not None and name == "code":
            self._target, self._buffer = ("code", attrs.get("origin", "")), []
        elif self._doc is not None and name == "text":
            section = attrs.get("type", "")
            if section not in SECTIONS:
                self.done.append(RecordError(
                    MISSING_FIELD, f"unknown text type {section[:40]!r} (expected one of "
                    f"{', '.join(SECTIONS)})", file=self.path, line=line, field="text/@type"))
            self._target, self._buffer = ("text", section), []

    def _chars(self, data: str) -> None:
        if self._buffer is not None:
            self._buffer.append(data)

    def _end(self, name: str) -> None:
        doc = self._doc
        if doc is None:
            return
        if name in ("code", "text") and self._buffer is not None:
            kind, key = self._target
            value = "".join(self._buffer)
            if kind == "code" and key == MAJORITY and value.strip():
                doc.codes.append(value.strip())
            elif kind == "text" and key in SECTIONS:
                doc.sections.setdefault(key, []).append(value)
            self._buffer = None
        elif name == "doc":
            self.done.append(doc)
            self._doc = None


def read_cmc2007(path: Path, seen: ReadContext) -> Iterator[Report | RecordError]:
    """Stream every report of a CMC 2007 XML file (coded or not)."""
    return _read(path, seen, coded_only=False)


def read_cmc2007_coded(path: Path, seen: ReadContext) -> Iterator[Report | RecordError]:
    """Stream the reports of a CMC 2007 XML file that carry majority codes."""
    return _read(path, seen, coded_only=True)


def _read(path: Path, seen: ReadContext, coded_only: bool) -> Iterator[Report | RecordError]:
    """Parse ``path`` chunk by chunk, yielding each finished doc as a report or record error."""
    parser = _Parser(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise RecordError(UNREADABLE, f"cannot read: {exc.strerror}", file=path) from None
    with handle:
        while True:
            chunk = handle.read(_CHUNK)
            parser.feed(chunk, final=not chunk)
            yield from _reports(parser, path, seen, coded_only)
            if not chunk:
                return


def _reports(parser: _Parser, path: Path, seen: ReadContext, coded_only: bool
             ) -> Iterator[Report | RecordError]:
    """The reports (or errors) of the docs the parser finished since the last call."""
    done, parser.done = parser.done, []
    for doc in done:
        if isinstance(doc, RecordError):
            yield doc
            continue
        if coded_only and not doc.codes:
            continue
        bodies = {key: " ".join(t.strip() for t in doc.sections.get(key, ())).strip()
                  for key in SECTIONS}
        text = "\n".join(f"{SECTIONS[key]}: {body}" for key, body in bodies.items() if body)
        try:
            yield make_report(
                file=path, line=doc.line, report_id=doc.id, text=text, fields=_FIELDS,
                type_=REPORT_TYPE, metadata={CODES_FIELD: ";".join(doc.codes)} if doc.codes
                else {}, seen=seen)
        except RecordError as error:
            yield error
