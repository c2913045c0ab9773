"""Smoke test on the real IU X-ray CSV (skipped when ../shared data is absent)."""

from __future__ import annotations

from pathlib import Path

from clinsearch.corpus.readers import ReadStats, read_reports
from clinsearch.corpus.segment import Segmenter

IU_ROWS = 3851


def test_iu_xray_reads_every_row_and_keeps_labels_out_of_text(iu_csv: Path) -> None:
    stats = ReadStats()
    reports = list(read_reports(iu_csv, "iu-xray", skip_bad=True, stats=stats))
    assert stats.reports + stats.skipped_total == IU_ROWS
    assert set(stats.skipped) <= {"empty text"} and stats.skipped_total < 50
    assert len({r.id for r in reports}) == len(reports)
    labelled = 0
    for report in reports:
        assert report.text.startswith(("FINDINGS: ", "IMPRESSION: "))
        mesh = report.metadata.get("MeSH", "")
        for term in mesh.split(";"):
            if "/" in term:  # e.g. "Opacity/lung/base/left": a label, never report prose
                labelled += 1
                assert term not in report.text
        assert set(report.metadata) <= {"MeSH", "Problems", "image", "indication", "comparison"}
    assert labelled > 1000


def test_iu_xray_segments_with_exact_offsets(iu_csv: Path) -> None:
    reports = read_reports(iu_csv, "iu-xray", skip_bad=True)
    sentences = 0
    for segmented in Segmenter().segment_many(reports):
        text = segmented.report.text
        assert segmented.sentences, segmented.report.id
        for sentence in segmented.sentences:
            assert text[sentence.start : sentence.end] == sentence.text
        sentences += len(segmented.sentences)
    assert sentences > 20_000
