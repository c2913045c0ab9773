"""The corpus model: patient -> visit -> report -> section -> sentence, with character offsets.

Patients and visits are identified by the ids carried on each report; when a reader has no
patient or visit id, the report stands as its own visit and patient.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Report:
    """One clinical report as read from the user's corpus; ``text`` is what gets searched."""

    id: str
    text: str
    patient_id: str = ""
    visit_id: str = ""
    type: str = ""
    date: str = ""  # ISO 8601 (YYYY-MM-DD) or empty
    metadata: Mapping[str, str] = field(default_factory=dict)  # kept, never indexed as text
    source: str = ""  # "file:line" where the report was read, for error messages

    def __post_init__(self) -> None:
        if not self.patient_id:
            object.__setattr__(self, "patient_id", self.visit_id or self.id)
        if not self.visit_id:
            object.__setattr__(self, "visit_id", self.id)


@dataclass(frozen=True, slots=True)
class Section:
    """A section of a report: its normalised name and the character span it covers."""

    name: str  # e.g. "findings", "impression"; "" before the first heading
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence with its offsets into the report text (``report.text[start:end] == text``)."""

    id: str  # f"{report_id}#{index}"
    report_id: str
    index: int
    section: str
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class SegmentedReport:
    """A report with its sections and sentences."""

    report: Report
    sections: tuple[Section, ...]
    sentences: tuple[Sentence, ...]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle as plain tuples of fields (a streaming build sends segmented reports between
        processes: this halves the time of the default per-object pickling)."""
        r = self.report
        return _segmented_report, (
            (r.id, r.text, r.patient_id, r.visit_id, r.type, r.date, r.metadata, r.source),
            tuple((x.name, x.start, x.end) for x in self.sections),
            tuple((x.id, x.report_id, x.index, x.section, x.start, x.end, x.text)
                  for x in self.sentences),
        )


def _segmented_report(
    report: tuple[Any, ...], sections: tuple[tuple[Any, ...], ...],
    sentences: tuple[tuple[Any, ...], ...],
) -> SegmentedReport:
    """A SegmentedReport from the field tuples of ``SegmentedReport.__reduce__``."""
    return SegmentedReport(Report(*report), tuple(Section(*x) for x in sections),
                           tuple(Sentence(*x) for x in sentences))


def sentence_id(report_id: str, index: int) -> str:
    """The id of the ``index``-th sentence of a report."""
    return f"{report_id}#{index}"
