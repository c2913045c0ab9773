"""Hybrid retrieval: fused rankings equal the fusion of the methods' own rankings."""

from __future__ import annotations

import pytest

from clinsearch.errors import ClinsearchError
from clinsearch.index import Index
from clinsearch.search.fusion import RRF_K, reciprocal_rank_fusion, weighted_score_fusion
from clinsearch.search.hybrid import DEFAULT_FUSION, DEFAULT_NORMALISATION, DEFAULT_WEIGHTS

QUERIES = ("pleural effusion", "enlarged heart", "collapsed lung")


def _ranking(index: Index, method: str, query: str, level: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in index.search(query, level, 100, method)]


@pytest.mark.parametrize("level", ["report", "patient"])
def test_rrf_hybrid_fuses_bm25_and_dense(dense_index: Index, level: str) -> None:
    for query in QUERIES:
        runs = [_ranking(dense_index, m, query, level) for m in ("bm25", "dense")]
        expected = reciprocal_rank_fusion(runs)[:5]
        hits = dense_index.search(query, level, 5, "hybrid", fusion="rrf", weights="dense=1")
        assert [(h.id, h.score) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert hits[0].explanation["method"] == "hybrid"
        assert set(hits[0].explanation["ranks"]) <= {"bm25", "dense"}


def test_weighted_hybrid_uses_the_given_weights(dense_index: Index) -> None:
    runs = [_ranking(dense_index, m, "pleural effusion", "report") for m in ("bm25", "dense")]
    expected = weighted_score_fusion(runs, weights=[1.0, 3.0], normalisation="zscore")[:4]
    hits = dense_index.search(
        "pleural effusion",
        "report",
        4,
        "hybrid",
        fusion="weighted",
        weights="dense=3",
        normalisation="zscore",
    )
    assert [(h.id, h.score) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]


def test_defaults_are_the_dev_tuned_settings(dense_index: Index) -> None:
    weights = ",".join(f"{m}={DEFAULT_WEIGHTS.get(m, 1.0)}" for m in ("bm25", "dense"))
    explicit = {"fusion": DEFAULT_FUSION, "weights": weights}
    explicit |= {"normalisation": DEFAULT_NORMALISATION, "rrf_k": RRF_K}
    for query in QUERIES:
        default = dense_index.search(query, "report", 5, "hybrid")
        given = dense_index.search(query, "report", 5, "hybrid", **explicit)
        assert [(h.id, h.score) for h in default] == [(h.id, h.score) for h in given]


def test_dense_finds_what_bm25_cannot(dense_index: Index) -> None:
    # "cardiomegaly" shares no word with h1's "enlargement of the cardiac silhouette"
    bm25 = {h.id for h in dense_index.search("cardiomegaly", "report", 5, "bm25")}
    hybrid = [h.id for h in dense_index.search("cardiomegaly", "report", 3, "hybrid")]
    assert bm25 == {"d1", "e2"} and "h1" in hybrid


def test_hybrid_option_errors(dense_index: Index) -> None:
    with pytest.raises(ClinsearchError, match="bad weight 'sparse=2'"):
        dense_index.search("effusion", method="hybrid", weights="sparse=2")
    with pytest.raises(ClinsearchError, match="two or more"):
        dense_index.search("effusion", method="hybrid", methods="bm25")
    with pytest.raises(ClinsearchError, match="unknown fusion 'max'"):
        dense_index.search("effusion", method="hybrid", fusion="max")
