"""The bundled sample corpus loads, segments, and covers what the demo and tests rely on."""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import defaultdict
from pathlib import Path

from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.corpus.segment import Segmenter

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_sample_corpus.py"


def test_sample_corpus_loads_and_segments() -> None:
    reports = list(read_reports(sample_reports_path(), SAMPLE_FORMAT))
    assert 150 <= len(reports) <= 250
    segmenter = Segmenter()
    for segmented in segmenter.segment_many(reports):
        text = segmented.report.text
        assert {s.name for s in segmented.sections} >= {"findings", "impression", "indication"}
        assert all(text[s.start : s.end] == s.text for s in segmented.sentences)
        assert all(s.section for s in segmented.sentences)


def test_sample_corpus_covers_the_phenomena() -> None:
    reports = list(read_reports(sample_reports_path(), SAMPLE_FORMAT))
    text = "\n".join(r.text for r in reports)
    for phrase in (
        "no pneumothorax, pleural effusion, or focal consolidation",  # coordinated negation
        "may represent",
        "cannot be excluded",  # uncertainty
        "New ",
        "Stable ",
        "resolved",  # change over time
        "Endotracheal tube",
        "ETT",
        "Nasogastric tube",
        "NG tube",
        "PICC",  # devices
        "right lower lobe",
        "left upper lobe",
        "lingula",  # laterality and lobes
        "Dr. ",
    ):
        assert phrase.lower() in text.lower(), phrase
    assert re.search(r"IMPRESSION: 1\. .+\n2\. ", text)  # numbered impressions
    dates_by_patient: dict[str, set[str]] = defaultdict(set)
    visits_by_patient: dict[str, set[str]] = defaultdict(set)
    for report in reports:
        dates_by_patient[report.patient_id].add(report.date)
        visits_by_patient[report.patient_id].add(report.visit_id)
    assert sum(len(v) >= 2 for v in visits_by_patient.values()) >= 30
    assert sum(len(d) >= 3 for d in dates_by_patient.values()) >= 10
    assert any(r.metadata.get("scenario") == "normal" for r in reports)


def test_sample_corpus_is_reproducible(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_sample_corpus", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_sample_corpus"] = module  # dataclasses resolve annotations via sys.modules
    spec.loader.exec_module(module)
    out = tmp_path / "sample.jsonl"
    module.write_rows(module.generate(), out)
    assert out.read_bytes() == sample_reports_path().read_bytes()
