"""One indexed report as a record: its text, sections, sentences and every finding."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from clinsearch.annotate.finding import Finding, Modifier, Trigger
from clinsearch.corpus.model import Report, Section, Sentence
from clinsearch.errors import ClinsearchError
from clinsearch.index.component import Generation
from clinsearch.index.findings import FindingsTable

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator


@dataclass(frozen=True, slots=True)
class LocatedFinding:
    """A finding of a report's sentence; its offsets (and its modifiers') are into the report."""

    sentence_id: str
    finding: Finding

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: the finding's fields, its pattern and its sentence id."""
        return {"sentence_id": self.sentence_id, **asdict(self.finding),
                "pattern": self.finding.pattern}


@dataclass(frozen=True, slots=True)
class ReportView:
    """A report with sections and sentences (offsets into ``report.text``) and its findings."""

    report: Report
    sections: tuple[Section, ...]
    sentences: tuple[Sentence, ...]
    findings: tuple[LocatedFinding, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        report = asdict(self.report)
        report["metadata"] = dict(self.report.metadata)
        return {
            "report": report,
            "sections": [asdict(s) for s in self.sections],
            "sentences": [asdict(s) for s in self.sentences],
            "findings": [f.to_dict() for f in self.findings],
        }


def read_report_view(gen: Generation, report_id: str, key: int | None = None) -> ReportView:
    """The report ``report_id`` of generation ``gen``; an unknown id is a ClinsearchError.

    ``key``, the report's key when known, lets every table skip the row groups without it.
    """
    keys = None if key is None else [key]
    rows = gen.table("reports", report_keys=keys, filters=[("id", "=", report_id)]).to_pylist()
    if not rows:
        raise ClinsearchError(f"report {report_id!r} is not in the index")
    row = rows[0]
    report = Report(id=row["id"], text=row["text"], patient_id=row["patient_id"],
                    visit_id=row["visit_id"], type=row["type"] or "", date=row["date"] or "",
                    metadata=dict(row["metadata"] or []), source=row["source"] or "")
    sentence_rows = gen.table("sentences", report_keys=[row["key"]])
    sentences = tuple(
        Sentence(s["id"], report.id, s["index"], s["section"], s["start"], s["end"], s["text"])
        for s in sorted(sentence_rows.to_pylist(), key=lambda s: s["index"])
    )
    table = FindingsTable.optional(gen)
    found = table.table(report_keys=[row["key"]]).to_pylist() if table else []
    findings = tuple(
        LocatedFinding(f["sentence_id"], row_finding(f)) for f in sorted(found, key=_finding_order)
    )
    return ReportView(report, _sections(sentences), sentences, findings)


def _sections(sentences: tuple[Sentence, ...]) -> tuple[Section, ...]:
    """Sections as runs of consecutive sentences with the same section name."""
    sections: list[Section] = []
    for s in sentences:
        if sections and sections[-1].name == s.section:
            sections[-1] = Section(s.section, sections[-1].start, s.end)
        else:
            sections.append(Section(s.section, s.start, s.end))
    return tuple(sections)


def row_finding(row: dict[str, Any]) -> Finding:
    """A findings-table row as a Finding (offsets into the report)."""
    modifiers = tuple(
        Modifier(m["category"], m["value"], m["text"], m["start"], m["end"])
        for m in row["modifiers"] or ()
    )
    trigger = row.get("trigger")
    return Finding(row["concept"], row["name"], row["type"], row["text"], row["start"],
                   row["end"], row["polarity"], tuple(row["context"] or ()), modifiers,
                   None if trigger is None else Trigger(**trigger))


def read_report(text: str, annotator: Annotator, batch_size: int = 256) -> list[Finding]:
    """The findings of one report's ``text`` as an index reads them: segmented into sections
    and sentences, each sentence annotated, then the section meanings and the whole-report
    reading (``index.conclusion``) applied; offsets into ``text`` (``explain --report``)."""
    from clinsearch.annotate.context_rules import conclusion, section_contexts
    from clinsearch.corpus.segment import Segmenter
    from clinsearch.index.findings import SENTENCE_COLUMNS, annotate_sentences

    report = Report(id="report", patient_id="", visit_id="", text=text)
    sentences = Segmenter().segment(report).sentences
    values = {"report_key": [0] * len(sentences), "id": [s.id for s in sentences],
              "report_id": [s.report_id for s in sentences], "visit_id": [""] * len(sentences),
              "patient_id": [""] * len(sentences), "index": [s.index for s in sentences],
              "section": [s.section for s in sentences], "start": [s.start for s in sentences],
              "text": [s.text for s in sentences]}
    table = pa.table({name: values[name] for name in SENTENCE_COLUMNS})
    rows = annotate_sentences(table, annotator, batch_size, sections=section_contexts(),
                              conclusion=conclusion()).to_pylist()
    return [row_finding(row) for row in sorted(rows, key=_finding_order)]


def _finding_order(row: dict[str, Any]) -> tuple[int, int]:
    return row["sentence_index"], row["start"]


class SentenceFindings:
    """Every sentence's findings with offsets into the sentence, to mark them in search hits.

    The rows are read once and made Findings only when their sentence is asked for: making
    them all took a second of a server's start on IU X-ray (3,826 reports), and a search
    shows a few sentences."""

    def __init__(self, gen: Generation) -> None:
        table = FindingsTable.optional(gen)
        self._table = table.table(_FINDING_COLUMNS) if table else None
        sentences = gen.table("sentences", ["id", "start"])
        self._starts = dict(zip(sentences.column("id").to_pylist(),
                                sentences.column("start").to_pylist(), strict=True))
        self._rows: dict[str, list[int]] = {}  # each sentence's rows, in table order
        ids = self._table.column("sentence_id").to_pylist() if self._table else []
        for row, sentence_id in enumerate(ids):
            self._rows.setdefault(sentence_id, []).append(row)

    def of(self, sentence_id: str) -> list[Finding]:
        """The findings of sentence ``sentence_id``, in text order."""
        return self.of_many([sentence_id])[0]

    def of_many(self, sentence_ids: Sequence[str]) -> list[list[Finding]]:
        """The findings of each sentence of ``sentence_ids``, in text order (one read)."""
        wanted = [self._rows.get(sentence_id, []) for sentence_id in sentence_ids]
        rows = [row for of_sentence in wanted for row in of_sentence]
        if not rows or self._table is None:
            return [[] for _ in sentence_ids]
        read = iter(self._table.take(rows).to_pylist())
        found = []
        for sentence_id, of_sentence in zip(sentence_ids, wanted, strict=True):
            base = self._starts.get(sentence_id, 0)
            findings = [row_finding(_shifted(next(read), base)) for _ in of_sentence]
            found.append(sorted(findings, key=lambda f: f.start))
        return found


_FINDING_COLUMNS = ["sentence_id", "concept", "name", "type", "text", "start", "end",
                    "polarity", "context", "modifiers", "trigger"]  # what ``row_finding`` reads


def _shifted(row: dict[str, Any], base: int) -> dict[str, Any]:
    """A findings-table row with its offsets (and its modifiers' and trigger's) moved back by
    ``base``: from the report to the sentence that starts there."""
    trigger = row.get("trigger")
    if trigger is not None and trigger["start"] is not None:
        trigger = trigger | {"start": trigger["start"] - base, "end": trigger["end"] - base}
    return row | {
        "start": row["start"] - base,
        "end": row["end"] - base,
        "modifiers": [m | {"start": m["start"] - base, "end": m["end"] - base}
                      for m in row["modifiers"] or ()],
        "trigger": trigger,
    }
