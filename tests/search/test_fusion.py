"""Fusion arithmetic on hand-made rankings; expected values worked out by hand in the comments."""

from __future__ import annotations

import pytest

from clinsearch.search.fusion import (
    Fusion,
    normalise,
    reciprocal_rank_fusion,
    score_tiers,
    tiered_fusion,
    weighted_score_fusion,
)

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


# Concept-like scores: completeness plus tie-breaks smaller than 0.002.
CONCEPT = [("a", 1.0008), ("b", 0.9995), ("c", 0.7504), ("d", 0.7497), ("e", 0.5)]


def test_score_tiers_group_scores_within_the_tolerance() -> None:
    # drops: a->b .0013, b->c .2491, c->d .0007, d->e .2497
    assert score_tiers(CONCEPT, 0.002) == {"a": 0, "b": 0, "c": 1, "d": 1, "e": 2}
    assert score_tiers(CONCEPT, 0.0) == {"a": 0, "b": 1, "c": 2, "d": 3, "e": 4}
    assert score_tiers([("x", 1.0), ("y", 1.0)], 0.0) == {"x": 0, "y": 0}
    assert score_tiers([], 0.1) == {}


def test_tiered_fusion_orders_tiers_then_fused_score() -> None:
    anchor = [("a", 1.0), ("b", 1.0), ("c", 0.5)]
    fused = [("d", 0.9), ("c", 0.8), ("b", 0.6), ("a", 0.2), ("e", 0.1)]
    # 2 tiers: {a, b} scores 2 + ..., {c} 1 + ..., d and e (no tier) 0 + ...
    # fused min-max: d 1, c .875, b .625, a .125, e 0; halved and added to the tier level
    assert tiered_fusion(anchor, fused, tolerance=0.0) == [
        ("b", pytest.approx(2.3125)),
        ("a", pytest.approx(2.0625)),
        ("c", pytest.approx(1.4375)),
        ("d", pytest.approx(0.5)),
        ("e", pytest.approx(0.0)),
    ]


def test_tiered_fusion_an_anchored_id_missing_from_fused_gets_the_lowest() -> None:
    fused = tiered_fusion([("a", 1.0), ("z", 1.0)], [("a", 3.0), ("b", 1.0)], tolerance=0.0)
    # a, z: tier level 1; a fused 1 -> 1.5, z absent -> min 0 -> 1.0; b: 0 + 0
    assert fused == [("a", 1.5), ("z", 1.0), ("b", 0.0)]


def test_fusion_dispatches_and_never_lifts_a_report_above_its_tier() -> None:
    bm25 = [("e", 50.0), ("d", 40.0), ("c", 1.0)]
    tiered = Fusion("tiered", (1.0, 1.0), anchor=1, tolerance=0.002).apply([bm25, CONCEPT])
    # e and d lead BM25 but concept puts them below a and b; within {c, d}, d's BM25 wins
    assert [doc for doc, _ in tiered] == ["a", "b", "d", "c", "e"]
    weighted = weighted_score_fusion([bm25, CONCEPT], weights=[1.0, 1.0])
    assert Fusion("weighted", (1.0, 1.0)).apply([bm25, CONCEPT]) == weighted
    assert Fusion("rrf", (1.0, 2.0), rrf_k=5).apply([bm25, CONCEPT]) == reciprocal_rank_fusion(
        [bm25, CONCEPT], k=5, weights=[1.0, 2.0]
    )
    with pytest.raises(ValueError, match="unknown fusion 'max'"):
        Fusion("max", (1.0,))
    with pytest.raises(ValueError, match="needs an anchor"):
        Fusion("tiered", (1.0, 1.0), anchor=2)
