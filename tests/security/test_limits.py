"""Item 7: huge --top is capped; deep or huge cohort queries get a clear error, no RecursionError;
item 8: long sentences are annotated in pieces, counted and reported."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.annotate.annotator import annotator_for
from clinsearch.annotate.pieces import PIECE_CHARS, cut
from clinsearch.limits import MAX_CLAUSES
from clinsearch.limits import MAX_NESTING as MAX_DEPTH

from .hostile import run


def test_top_is_capped_to_the_index_size(built_once: Path) -> None:
    code, out, err = run("search", built_once, "pneumonia", "--top", "1000000000",
                         "--format", "json")
    assert code == 0, err
    assert len(json.loads(out)["hits"]) <= 4
    hits = Index.open(built_once).search("effusion", level="sentence", top=10**12)
    assert 1 <= len(hits) <= Index.open(built_once).manifest.counts.sentences


def _cohort_error(index: Path, query: str) -> str:
    code, _, err = run("cohort", index, query)
    assert code == 2 and "Traceback" not in err and "RecursionError" not in err, err
    assert err.startswith("error: cohort query")
    return err


@pytest.mark.parametrize("query", [
    "(" * 300 + "pneumonia" + ")" * 300,
    "NOT " * 1000 + "pneumonia",
    " OR ".join(["pneumonia"] * 10_000)[:9_990],
])
def test_hostile_cohort_queries_are_refused_clearly(built_once: Path, query: str) -> None:
    err = _cohort_error(built_once, query)
    assert f"more than {MAX_DEPTH}" in err or f"more than {MAX_CLAUSES}" in err


def test_queries_within_the_limits_work(built_once: Path) -> None:
    deep = "(" * (MAX_DEPTH - 1) + "pneumonia" + ")" * (MAX_DEPTH - 1)
    wide = " OR ".join(["pneumonia", "cardiomegaly"] * (MAX_CLAUSES // 2))
    for query in (deep, wide, "NOT NOT pneumonia"):
        code, out, err = run("cohort", built_once, query, "--json")
        assert code == 0, err
        assert json.loads(out)["counts"]["report"] >= 1
    code, _, err = run("cohort", built_once, "pneumonia " * 2_000)
    assert code == 2 and "too long" in err


def test_cut_bounds_every_piece_and_prefers_sentence_ends() -> None:
    text = ("No pleural effusion. " * 300) + ("mild edema, " * 1000) + "x" * 5000
    pieces = cut(text)
    bounds = (*pieces.starts, len(text))
    assert all(0 < b - a <= PIECE_CHARS for a, b in pairwise(bounds))
    assert text[pieces.starts[1] - 2 : pieces.starts[1]] == ". "
    assert pieces.long_sentence
    assert not cut("No effusion. " * 10).long_sentence and cut("short").starts == (0,)


def test_a_text_over_spacys_limit_is_annotated_in_pieces() -> None:
    annotator = annotator_for(None)
    clause = "right lower lobe pneumonia without pleural effusion, "
    text = clause * 60  # ~3k characters
    limit = annotator.nlp.max_length
    annotator.nlp.max_length = 1_000  # so that a few kB exceed it, as 1M+ would by default
    try:
        before = annotator.long_sentences
        findings = annotator.annotate(text)
        assert annotator.long_sentences == before + 1
    finally:
        annotator.nlp.max_length = limit
    assert len([f for f in findings if f.concept == "pneumonia"]) == text.count("pneumonia")
    assert all(text[f.start : f.end] == f.text for f in findings)
    assert all(text[m.start : m.end] == m.text for f in findings for m in f.modifiers)


def test_index_reports_long_sentences(tmp_path: Path) -> None:
    long_text = "mild cardiomegaly, " * 300 + "and no pneumothorax."
    corpus = tmp_path / "r.jsonl"
    corpus.write_text(json.dumps({"id": "r1", "text": long_text}) + "\n")
    code, _, err = run("index", corpus, "-f", "jsonl", "--out", tmp_path / "idx")
    assert code == 0, err
    assert "warning: 1 long sentence(s)" in err
    assert Index.open(tmp_path / "idx").manifest.components["findings"]["long_sentences"] == 1
