"""Index fixtures: a small corpus of pre-segmented reports and an index built from it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.corpus.model import Report, Section, SegmentedReport, Sentence, sentence_id

# (report id, patient, visit, sentences)
CORPUS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("r1", "p1", "v1", ("Heart size is normal.", "No pneumothorax or pleural effusion.")),
    ("r2", "p1", "v2", ("Small left pleural effusion.", "Heart size is normal.")),
    ("r3", "p2", "v3", ("Right lower lobe opacity, concerning for pneumonia.", "No effusion.")),
    ("r4", "p2", "v3", ("Interval improvement of right lower lobe pneumonia.",)),
    ("r5", "p3", "v4", ("Large right pneumothorax.", "Mediastinal shift to the left.")),
    ("r6", "p4", "v5", ("Cardiomegaly.", "Mild pulmonary edema.", "Bilateral pleural effusions.")),
    ("r7", "p5", "v6", ("The lungs are clear.", "No acute cardiopulmonary abnormality.")),
    ("r8", "p5", "v7", ("Stable cardiomegaly.", "Lungs are clear.")),
)


def segmented(
    report_id: str, sentences: Sequence[str], patient: str = "", visit: str = ""
) -> SegmentedReport:
    """A report whose text is ``sentences`` joined by spaces, with exact offsets."""
    text = " ".join(sentences)
    records, start = [], 0
    for i, sentence in enumerate(sentences):
        end = start + len(sentence)
        records.append(
            Sentence(sentence_id(report_id, i), report_id, i, "findings", start, end, sentence)
        )
        start += len(sentence) + 1
    report = Report(
        id=report_id,
        text=text,
        patient_id=patient,
        visit_id=visit,
        source=f"test.csv:{report_id[1:]}",
    )
    return SegmentedReport(report, (Section("findings", 0, len(text)),), tuple(records))


@pytest.fixture(scope="session")
def corpus() -> list[SegmentedReport]:
    """The small test corpus, segmented."""
    return [segmented(rid, sents, patient, visit) for rid, patient, visit, sents in CORPUS]


@pytest.fixture
def built(tmp_path: Path, corpus: list[SegmentedReport]) -> Index:
    """A fresh index of the test corpus (one per test: tests may change it)."""
    return Index.build(corpus, tmp_path / "idx", progress=False)


@pytest.fixture
def make_reports() -> Callable[..., SegmentedReport]:
    """Build one extra pre-segmented report: ``make_reports(id, sentences, patient, visit)``."""
    return segmented
