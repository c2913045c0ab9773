"""The row lookup reads ids and texts lazily: only the rows a query shows, deletions left out."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from clinsearch import Index
from clinsearch.corpus.model import SegmentedReport
from clinsearch.index import row_lookup as row_lookup_module
from clinsearch.search.bm25 import BM25Retriever

from .conftest import segmented


def test_open_and_bm25_search_read_only_the_texts_shown(
    built: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[tuple[str, list[int]]] = []
    real = row_lookup_module.LiveRows.take

    def counted(rows: row_lookup_module.LiveRows, column: str, wanted: np.ndarray) -> pa.Array:
        read.append((column, np.asarray(wanted).tolist()))
        return real(rows, column, wanted)

    monkeypatch.setattr(row_lookup_module.LiveRows, "take", counted)
    index = Index.open(built.path)
    lookup = index.lookup
    assert read == []  # opening reads no id or text
    hits = BM25Retriever(index).search("pleural effusion", "report", 2)
    assert len(hits) == 2
    texts = {row for column, rows in read if column == "text" for row in rows}
    assert len(texts) == 2  # of the 8 reports' 17 sentences, the 2 shown
    assert "units" not in vars(lookup)  # report hits need no visit or patient map
    assert sorted(lookup.sentence_texts.take(np.array(list(texts)))) == sorted(
        h.sentence for h in hits)


def test_rows_across_segments_and_deletions_match_the_generation_tables(
    built: Index, corpus: list[SegmentedReport]
) -> None:
    built.add([segmented("r9", ("New nodule.", "No effusion."), "p9", "v9")], progress=False)
    built.delete(["r2", "r5"])
    assert len(built.generation.segments) > 1
    index = Index.open(built.path)
    lookup, gen = index.lookup, index.generation
    sentences = gen.table("sentences", ["id", "text"])
    reports = gen.table("reports", ["id", "patient_id"])
    assert list(lookup.sentence_texts) == sentences.column("text").to_pylist()
    rows = np.array([len(sentences) - 1, 0, 3, 3])
    assert lookup.sentence_ids.take(rows) == sentences.column("id").take(rows).to_pylist()
    assert lookup.report_ids[-1] == "r9" and lookup.patient_ids[:2] == ["p1", "p2"]
    assert lookup.report_ids == reports.column("id").to_pylist()
    assert lookup.report_ids.rows_of(["r9", "r2", "r1", "r9"]).tolist() == [6, -1, 0, 6]
    assert lookup.groups("patient", "report", np.arange(lookup.num_reports)).tolist() == [
        0, 1, 1, 2, 3, 3, 4]


def test_the_report_of_a_sentence_is_found_without_the_per_sentence_array(
    built: Index,
) -> None:
    built.add([segmented("r9", (), "p9", "v9"),  # a report without sentences
               segmented("r10", ("Small effusion.", "No pneumothorax."), "p9", "v9")],
              progress=False)
    built.delete(["r2"])
    index = Index.open(built.path)
    lookup, gen = index.lookup, index.generation
    sentences = gen.table("sentences", ["report_id"]).column("report_id").to_pylist()
    rows = np.arange(len(sentences))
    assert "sentence_report_row" not in vars(lookup)  # not built at open
    found = lookup.sentence_reports(rows)
    assert [lookup.report_ids[r] for r in found.tolist()] == sentences
    assert lookup.sentence_report_row.tolist() == found.tolist()
    assert lookup.sentence_rows(*lookup.sentence_keys(rows)).tolist() == rows.tolist()
    assert lookup.sentence_counts(lookup.report_ids.rows_of(["r9", "r10"])).tolist() == [0, 2]
