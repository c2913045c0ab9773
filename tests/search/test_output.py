"""Output formats: the table with highlighted sentences, JSON records and TREC run lines."""

from __future__ import annotations

import json

from rich.console import Console

from clinsearch import Index
from clinsearch.search.output import (
    HIGHLIGHT_STYLE,
    highlighted,
    hits_table,
    json_record,
    json_text,
    trec_lines,
)


def _render(table) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def test_table_shows_rank_ids_score_and_sentence(index: Index) -> None:
    hits = index.search("right lower lobe pneumonia", method="bm25", level="visit", top=2)
    text = _render(hits_table(hits, "visit", title="q"))
    assert "visit" in text and "patient" in text and "best sentence" in text
    first = text.splitlines()[4]
    assert "V3" in first and "P2" in first and "b1" in first and f"{hits[0].score:.3f}" in first
    assert "Right lower lobe pneumonia." in first
    assert "no matches" in _render(hits_table([], "report"))


def test_highlight_styles_matched_words(index: Index) -> None:
    hit = index.search("pleural effusions", method="bm25", level="sentence", top=10)
    styled = highlighted(next(h for h in hit if h.id == "d1#2"))
    spans = [(s.start, s.end) for s in styled.spans if s.style == HIGHLIGHT_STYLE]
    assert [styled.plain[a:b] for a, b in spans] == ["pleural", "effusions"]


def test_json_record(index: Index) -> None:
    hits = index.search("cardiomegaly", method="bm25", level="patient", top=2)
    record = json.loads(
        json_text(json_record("7", "cardiomegaly", "patient", "bm25", hits), lines=True)
    )
    assert record["qid"] == "7" and record["level"] == "patient" and record["method"] == "bm25"
    assert [h["id"] for h in record["hits"]] == [h.id for h in hits]
    assert "\n" not in json_text(record, lines=True) and "\n" in json_text(record, lines=False)


def test_trec_lines(index: Index) -> None:
    hits = index.search("pneumothorax", method="bm25", level="report", top=3)
    lines = trec_lines("q1", hits, "clinsearch-bm25")
    assert len(lines) == 3
    for rank, (line, hit) in enumerate(zip(lines, hits, strict=True), start=1):
        qid, q0, docid, r, score, tag = line.split(" ")
        assert (qid, q0, docid, int(r), tag) == ("q1", "Q0", hit.id, rank, "clinsearch-bm25")
        assert float(score) == hit.score  # full precision: tie-breaks below 1e-6 survive
