"""Shared pieces of every reader: record errors with a reason, read statistics, report building."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.errors import InputError, shown

EMPTY_TEXT = "empty text"
DUPLICATE_ID = "duplicate id"
UNDECODABLE = "undecodable bytes"
MALFORMED_JSON = "malformed JSON"
BAD_DATE = "bad date"
MISSING_FIELD = "missing field"
WRONG_TYPE = "wrong type"
UNREADABLE = "unreadable file"
DUPLICATE_FILE = "duplicate file"


class RecordError(InputError):
    """A bad record that ``skip_bad`` may skip; ``reason`` is the short key it is counted under."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.reason = reason
        super().__init__(message, file=file, line=line, field=field)


@dataclass(slots=True)
class ReadStats:
    """What a read did: reports yielded and bad records skipped, counted by reason."""

    reports: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)  # the first few skipped errors, verbatim
    max_examples: int = 5

    @property
    def skipped_total(self) -> int:
        """How many records were skipped, whatever the reason."""
        return sum(self.skipped.values())

    def count_skip(self, error: RecordError) -> None:
        """Count one skipped record under its reason, keeping its message if among the first."""
        self.skipped[error.reason] = self.skipped.get(error.reason, 0) + 1
        if len(self.examples) < self.max_examples:
            self.examples.append(str(error))


ISO_DATE = "iso"


@dataclass(slots=True)
class ReadContext:
    """What a reader needs besides the file: the date format and the ids seen so far (id ->
    line), to reject duplicates."""

    date_format: str = ISO_DATE
    ids: dict[str, int] = field(default_factory=dict)


def check_date_format(date_format: str) -> str:
    """``date_format`` if it is "iso" or a strptime format with day, month and year."""
    if date_format != ISO_DATE and not all(
        code in date_format for code in ("%d", "%m" if "%b" not in date_format else "%b", "%Y")
    ):
        raise InputError(
            f"date format {date_format!r} needs %d, %m (or %b) and %Y, e.g. %m/%d/%Y; or 'iso'",
            field="date-format",
        )
    return date_format


def normalise_date(value: str, date_format: str = ISO_DATE) -> str | None:
    """``value`` as ISO ``YYYY-MM-DD`` (any time dropped); "" if empty; None if it does not
    match ``date_format`` ("iso": YYYY-MM-DD with an optional time; else a strptime format).
    Nothing is guessed: 03/04/2020 means what the format says, or is an error."""
    value = value.strip()
    if not value:
        return ""
    if date_format == ISO_DATE:
        try:
            if len(value) < 10 or value[4] != "-" or value[7] != "-":
                return None
            return datetime.fromisoformat(value).date().isoformat()
        except ValueError:
            return None
    try:
        parsed: date = datetime.strptime(value, date_format).date()
    except ValueError:
        return None
    return parsed.isoformat()


def make_report(
    *,
    file: Path,
    line: int,
    report_id: str,
    text: str,
    fields: Mapping[str, str],
    patient_id: str = "",
    visit_id: str = "",
    type_: str = "",
    date_value: str = "",
    metadata: Mapping[str, str] | None = None,
    seen: ReadContext,
) -> Report:
    """Build a checked Report and note its id in ``seen.ids`` (id -> line).

    ``fields`` names the user's field for id, text and date, for error messages.
    """
    report_id = report_id.strip()
    if report_id in seen.ids:
        raise RecordError(
            DUPLICATE_ID,
            f"duplicate id {shown(report_id)} (first at line {seen.ids[report_id]})",
            file=file,
            line=line,
            field=fields["id"],
        )
    if not report_id:
        raise RecordError(MISSING_FIELD, "empty id", file=file, line=line, field=fields["id"])
    if not text.strip():
        raise RecordError(EMPTY_TEXT, "empty text", file=file, line=line, field=fields["text"])
    iso = normalise_date(date_value, seen.date_format)
    if iso is None:
        expected = "YYYY-MM-DD" if seen.date_format == ISO_DATE else seen.date_format
        raise RecordError(
            BAD_DATE,
            f"cannot parse date {shown(date_value)} (expected {expected}; see `date_format`)",
            file=file,
            line=line,
            field=fields["date"],
        )
    seen.ids[report_id] = line
    return Report(
        id=report_id,
        text=text,
        patient_id=patient_id.strip(),
        visit_id=visit_id.strip(),
        type=type_.strip(),
        date=iso,
        metadata=dict(metadata or {}),
        source=f"{file}:{line}",
    )
