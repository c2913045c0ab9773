"""Search fixtures: a small pre-segmented corpus indexed with lexical and dense parts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from clinsearch.corpus.model import Report, Section, SegmentedReport, Sentence, sentence_id
from clinsearch.index import Index, IndexConfig
from clinsearch.models.tiny import build_tiny_bert

# (report id, patient, sentences)
REPORTS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("r1", "p1", ("Heart size is normal.", "No pneumothorax or pleural effusion.")),
    ("r2", "p1", ("Small left pleural effusion.", "Heart size is normal.")),
    ("r3", "p2", ("Right lower lobe opacity, concerning for pneumonia.", "No effusion.")),
    ("r4", "p2", ("Interval improvement of right lower lobe pneumonia.",)),
    ("r5", "p3", ("Large right pneumothorax.", "Mediastinal shift to the left.")),
    ("r6", "p4", ("Cardiomegaly.", "Mild pulmonary edema.", "Bilateral pleural effusions.")),
    ("r7", "p5", ("The lungs are clear.", "No acute cardiopulmonary abnormality.")),
    ("r8", "p5", ("Stable enlargement of the cardiac silhouette.", "Lungs are clear.")),
)


def segmented(report_id: str, patient: str, sentences: Sequence[str]) -> SegmentedReport:
    """A one-section report whose sentences are joined by spaces, with exact offsets."""
    text = " ".join(sentences)
    records, start = [], 0
    for i, sentence in enumerate(sentences):
        end = start + len(sentence)
        records.append(
            Sentence(sentence_id(report_id, i), report_id, i, "findings", start, end, sentence)
        )
        start = end + 1
    report = Report(id=report_id, text=text, patient_id=patient)
    return SegmentedReport(report, (Section("findings", 0, len(text)),), tuple(records))


@pytest.fixture(scope="session")
def search_corpus() -> list[SegmentedReport]:
    return [segmented(rid, patient, sentences) for rid, patient, sentences in REPORTS]


@pytest.fixture(scope="session")
def dense_index(tmp_path_factory: pytest.TempPathFactory, search_corpus) -> Index:
    """The corpus indexed with BM25 and MiniLM embeddings (read-only for the tests)."""
    config = IndexConfig(components=("lexical", "dense"))
    return Index.build(search_corpus, tmp_path_factory.mktemp("search") / "idx", config, False)


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-cross"), cross_encoder=True)
