"""Shared pieces of every reader: record errors with a reason, read statistics, report building."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.errors import InputError

EMPTY_TEXT = "empty text"
DUPLICATE_ID = "duplicate id"
UNDECODABLE = "undecodable bytes"
MALFORMED_JSON = "malformed JSON"
BAD_DATE = "bad date"
MISSING_FIELD = "missing field"


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


_DATE_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%Y%m%d", "%m/%d/%Y", "%d.%m.%Y", "%d-%b-%Y", "%b %d, %Y")


def normalise_date(value: str) -> str | None:
    """``value`` as ISO ``YYYY-MM-DD`` (any time dropped); "" if empty; None if unparseable."""
    value = value.strip()
    if not value:
        return ""
    try:
        return datetime.fromisoformat(value).date().isoformat()
    except ValueError:
        pass
    head = value.split(" ")[0] if value[:4].isdigit() else value
    for candidate in (value, head):
        for fmt in _DATE_FORMATS:
            try:
                parsed: date = datetime.strptime(candidate, fmt).date()
            except ValueError:
                continue
            return parsed.isoformat()
    return None


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
    seen: dict[str, int],
) -> Report:
    """Build a checked Report and note its id in ``seen`` (id -> line).

    ``fields`` names the user's field for id, text and date, for error messages.
    """
    report_id = report_id.strip()
    if report_id in seen:
        raise RecordError(
            DUPLICATE_ID,
            f"duplicate id {report_id!r} (first at line {seen[report_id]})",
            file=file,
            line=line,
            field=fields["id"],
        )
    if not report_id:
        raise RecordError(MISSING_FIELD, "empty id", file=file, line=line, field=fields["id"])
    if not text.strip():
        raise RecordError(EMPTY_TEXT, "empty text", file=file, line=line, field=fields["text"])
    iso = normalise_date(date_value)
    if iso is None:
        raise RecordError(
            BAD_DATE,
            f"cannot parse date {date_value!r} (expected e.g. YYYY-MM-DD or MM/DD/YYYY)",
            file=file,
            line=line,
            field=fields["date"],
        )
    seen[report_id] = line
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
