"""The findings component: built with the index, kept in step with add and delete."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.annotate.annotator import annotator_for
from clinsearch.corpus.model import SegmentedReport
from clinsearch.errors import ClinsearchError
from clinsearch.index.config import IndexConfig
from clinsearch.index.findings import FINDINGS_SCHEMA, FindingsTable, _SegmentFiles

KEY = ("report_id", "sentence_id", "pattern", "start", "end", "text")


def rows(index: Index) -> list[tuple]:
    """The findings table as sorted tuples of the columns that identify a finding."""
    table: FindingsTable = index.component("findings")
    return sorted(tuple(r[c] for c in KEY) for r in table)


def expected(reports: list[SegmentedReport]) -> list[tuple]:
    """What the annotator finds in each sentence, located in its report."""
    annotator = annotator_for(None)
    out = []
    for seg in reports:
        for s in seg.sentences:
            for f in annotator.annotate(s.text):
                start, end = s.start + f.start, s.start + f.end
                out.append((seg.report.id, s.id, f.pattern, start, end, f.text))
    return sorted(out)


def test_findings_are_on_by_default() -> None:
    assert "findings" in IndexConfig().components


def test_build_stores_every_sentences_findings(built: Index, corpus: list[SegmentedReport]) -> None:
    assert rows(built) == expected(corpus)
    texts = {seg.report.id: seg.report.text for seg in corpus}
    for r in built.component("findings"):
        assert texts[r["report_id"]][r["start"] : r["end"]] == r["text"]
        assert r["sentence_id"] == f"{r['report_id']}#{r['sentence_index']}"
    assert built.manifest.components["findings"]["findings"] == len(rows(built))


def test_polarity_context_and_modifiers_round_trip(built: Index) -> None:
    table = built.component("findings")
    r1 = {(r["concept"], r["polarity"]) for r in table if r["report_id"] == "r1"}
    assert {("pneumothorax", "absent"), ("pleural_effusion", "absent")} <= r1
    [r2] = [r for r in table if r["report_id"] == "r2" and r["concept"] == "pleural_effusion"]
    assert r2["polarity"] == "present"
    assert {m["category"]: m["value"] for m in r2["modifiers"]}["laterality"] == "left"
    absent = table.sql(
        "SELECT DISTINCT report_id FROM findings WHERE concept = 'pneumothorax' "
        "AND polarity = 'absent' ORDER BY report_id"
    )
    assert absent.column("report_id").to_pylist() == ["r1"]


def test_add_and_delete_keep_the_table_in_step(
    built: Index,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tmp_path: Path,
) -> None:
    extra = [
        make_reports("r9", ("No pneumothorax.", "Evaluate for pneumonia."), "p9", "v9"),
        make_reports("r10", ("Moderate right pleural effusion.",), "p10", "v10"),
    ]
    built.add(extra, progress=False)
    assert rows(built) == expected(corpus + extra)
    fresh = Index.build(corpus + extra, tmp_path / "fresh", progress=False)
    assert rows(built) == rows(fresh)

    built.delete(["r1", "r10"])
    kept = [seg for seg in corpus + extra if seg.report.id not in {"r1", "r10"}]
    assert rows(built) == expected(kept)
    reopened = Index.open(built.path)
    assert rows(reopened) == expected(kept)
    assert reopened.manifest.components["findings"]["findings"] == len(expected(kept))


def test_lexicon_option_chooses_the_lexicon(tmp_path: Path, corpus: list[SegmentedReport]) -> None:
    mini = Path(__file__).parents[1] / "annotate" / "mini_lexicon.yaml"
    config = IndexConfig(options={"findings": {"lexicon": str(mini)}})
    index = Index.build(corpus, tmp_path / "idx", config, progress=False)
    assert index.manifest.components["findings"]["lexicon"] == "test-mini"
    concepts = {r["concept"] for r in index.component("findings")}
    assert concepts <= set(annotator_for(str(mini)).lexicon.concepts)
    assert "pneumothorax" in concepts


def test_findings_out_of_key_order_are_refused_not_misfiled(tmp_path: Path) -> None:
    rows = FINDINGS_SCHEMA.empty_table()
    files = _SegmentFiles([tmp_path / "0.parquet", tmp_path / "1.parquet"])
    files.write(1, rows)
    with pytest.raises(ClinsearchError, match="report-key order"):
        files.write(0, rows)  # would have gone into file 1
    files.close(complete=False)
