"""Fusion arithmetic on hand-made rankings; expected values worked out by hand in the comments."""

from __future__ import annotations

import pytest

from clinsearch.search.fusion import normalise, reciprocal_rank_fusion, weighted_score_fusion

BM25 = [("a", 12.0), ("b", 8.0), ("c", 4.0)]
DENSE = [("c", 0.9), ("a", 0.6), ("d", 0.3)]


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = dict(reciprocal_rank_fusion([BM25, DENSE], k=60))
    # a: 1/61 + 1/62; c: 1/63 + 1/61; b: 1/62; d: 1/63
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["d"] == pytest.approx(1 / 63)
    assert [doc for doc, _ in reciprocal_rank_fusion([BM25, DENSE], k=60)] == ["a", "c", "b", "d"]


def test_rrf_weights_and_small_k() -> None:
    fused = reciprocal_rank_fusion([BM25, DENSE], k=1, weights=[1.0, 3.0])
    # a: 1/2 + 3/3 = 1.5; c: 1/4 + 3/2 = 1.75; b: 1/3; d: 3/4
    assert fused == [
        ("c", pytest.approx(1.75)),
        ("a", pytest.approx(1.5)),
        ("d", pytest.approx(0.75)),
        ("b", pytest.approx(1 / 3)),
    ]


def test_minmax_weighted_fusion() -> None:
    fused = dict(weighted_score_fusion([BM25, DENSE], weights=[0.5, 0.5]))
    # bm25 norm: a 1, b .5, c 0, (d absent -> 0); dense norm: c 1, a .5, d 0, (b absent -> 0)
    assert fused == {
        "a": pytest.approx(0.75),
        "b": pytest.approx(0.25),
        "c": pytest.approx(0.5),
        "d": pytest.approx(0.0),
    }


def test_zscore_weighted_fusion() -> None:
    # bm25: mean 8, std sqrt(32/3) = 3.266; z: a 1.2247, b 0, c -1.2247 (d -> min -1.2247)
    # dense: mean .6, std sqrt(.06) = .2449; z: c 1.2247, a 0, d -1.2247 (b -> min -1.2247)
    fused = dict(weighted_score_fusion([BM25, DENSE], weights=[1.0, 2.0], normalisation="zscore"))
    z = 1.224744871
    assert fused["a"] == pytest.approx(z + 0.0)
    assert fused["b"] == pytest.approx(0.0 - 2 * z)
    assert fused["c"] == pytest.approx(-z + 2 * z)
    assert fused["d"] == pytest.approx(-z - 2 * z)


def test_normalise_degenerate_rankings() -> None:
    assert normalise([("x", 3.0), ("y", 3.0)], "minmax") == {"x": 1.0, "y": 1.0}
    assert normalise([("x", 3.0)], "zscore") == {"x": 0.0}
    assert normalise([], "minmax") == {}
    with pytest.raises(ValueError, match="unknown normalisation"):
        normalise(BM25, "rank")  # type: ignore[arg-type]


def test_ties_break_by_id_and_weights_must_match() -> None:
    assert [d for d, _ in reciprocal_rank_fusion([[("b", 1.0)], [("a", 1.0)]])] == ["a", "b"]
    with pytest.raises(ValueError, match="2 weights given for 1 rankings"):
        weighted_score_fusion([BM25], weights=[1.0, 2.0])
