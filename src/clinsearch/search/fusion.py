"""Fuse ranked lists from several retrievers: reciprocal rank fusion, weighted score fusion,
and tiered fusion (one anchor ranking's score tiers first, a fused ranking within each tier).

A ranking is a list of ``(id, score)`` pairs, best first. Fused lists are sorted by fused score,
ties broken by id so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from clinsearch.search.method_params import FUSIONS, RRF_K

Unit = str | int  # a unit's id, or its number in one index
Ranking = Sequence[tuple[Unit, float]]
Normalisation = Literal["minmax", "zscore"]


@dataclass(frozen=True, slots=True)
class Fusion:
    """How rankings are fused: ``kind`` (one of ``FUSIONS``), a weight per ranking, and the
    kind's parameters. ``tiered`` ranks the ``anchor`` ranking's score tiers (``tolerance``)
    first and orders each tier, and the ids the anchor lacks, by weighted score fusion."""

    kind: str
    weights: tuple[float, ...]
    normalisation: Normalisation = "minmax"
    rrf_k: int = RRF_K
    anchor: int | None = None  # tiered: position of the anchor ranking
    tolerance: float = 0.0  # tiered: score drop that starts a new anchor tier

    def __post_init__(self) -> None:
        if self.kind not in FUSIONS:
            raise ValueError(f"unknown fusion {self.kind!r}; choose one of {', '.join(FUSIONS)}")
        anchored = self.anchor is not None and 0 <= self.anchor < len(self.weights)
        if self.kind == "tiered" and not anchored:
            raise ValueError(f"tiered fusion needs an anchor ranking (got {self.anchor!r})")

    def apply(self, rankings: Sequence[Ranking]) -> list[tuple[Unit, float]]:
        """The fused ranking of ``rankings`` (one per weight), best first."""
        if self.kind == "rrf":
            return reciprocal_rank_fusion(rankings, k=self.rrf_k, weights=self.weights)
        fused = weighted_score_fusion(
            rankings, weights=self.weights, normalisation=self.normalisation
        )
        if self.kind == "weighted":
            return fused
        assert self.anchor is not None
        return tiered_fusion(rankings[self.anchor], fused, tolerance=self.tolerance)


def reciprocal_rank_fusion(
    rankings: Sequence[Ranking], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[Unit, float]]:
    """``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks; absent ids add nothing."""
    weights = _weights(rankings, weights)
    fused: dict[Unit, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, (doc, _) in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return _sorted(fused)


def weighted_score_fusion(
    rankings: Sequence[Ranking],
    *,
    weights: Sequence[float] | None = None,
    normalisation: Normalisation = "minmax",
) -> list[tuple[Unit, float]]:
    """``score(d) = sum_i w_i * norm_i(d)``; an id absent from a ranking gets its lowest norm."""
    weights = _weights(rankings, weights)
    normalised = [normalise(ranking, normalisation) for ranking in rankings]
    ids = dict.fromkeys(doc for ranking in rankings for doc, _ in ranking)
    fused = {doc: 0.0 for doc in ids}
    for scores, weight in zip(normalised, weights, strict=True):
        floor = min(scores.values(), default=0.0)
        for doc in ids:
            fused[doc] += weight * scores.get(doc, floor)
    return _sorted(fused)


def score_tiers(ranking: Ranking, tolerance: float) -> dict[Unit, int]:
    """Tier of each id, 0 the best: going down the scores, a drop above ``tolerance`` starts
    the next tier, so scores that differ only by tie-breaks share one."""
    tiers: dict[Unit, int] = {}
    tier, last = 0, None
    for doc, score in sorted(ranking, key=lambda item: -item[1]):
        if last is not None and last - score > tolerance:
            tier += 1
        tiers[doc] = tier
        last = score
    return tiers


def tiered_fusion(
    anchor: Ranking, fused: Ranking, *, tolerance: float
) -> list[tuple[Unit, float]]:
    """The anchor's ids by tier (``score_tiers``), ordered by ``fused`` within a tier; ids the
    anchor lacks follow, in ``fused`` order.

    Score: the number of anchor tiers at or below the id's own (0 without one) plus its fused
    score min-max scaled to [0, 0.5], so the order is (tier, fused score).
    """
    tiers = score_tiers(anchor, tolerance)
    levels = max(tiers.values(), default=-1) + 1
    within = normalise(fused, "minmax")
    ids = dict.fromkeys([*(doc for doc, _ in fused), *tiers])
    floor = min(within.values(), default=0.0)
    return _sorted({
        doc: (levels - tiers[doc] if doc in tiers else 0) + 0.5 * within.get(doc, floor)
        for doc in ids
    })


def normalise(ranking: Ranking, normalisation: Normalisation) -> dict[Unit, float]:
    """Scores mapped to [0, 1] (min-max) or to zero mean and unit spread (z-score).

    A ranking whose scores are all equal maps to 1.0 (min-max) or 0.0 (z-score).
    """
    if not ranking:
        return {}
    ids = [doc for doc, _ in ranking]
    scores = np.array([score for _, score in ranking], dtype=np.float64)
    if normalisation == "minmax":
        spread = scores.max() - scores.min()
        values = (scores - scores.min()) / spread if spread > 0 else np.ones_like(scores)
    elif normalisation == "zscore":
        std = scores.std()
        values = (scores - scores.mean()) / std if std > 0 else np.zeros_like(scores)
    else:
        raise ValueError(f"unknown normalisation {normalisation!r}: use minmax or zscore")
    return dict(zip(ids, values.tolist(), strict=True))


def _weights(rankings: Sequence[Ranking], weights: Sequence[float] | None) -> list[float]:
    """The given weights (one per ranking), or 1.0 for each."""
    if weights is None:
        return [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights given for {len(rankings)} rankings")
    return [float(w) for w in weights]


def _sorted(fused: dict[Unit, float]) -> list[tuple[Unit, float]]:
    """Fused scores best first, ties broken by id."""
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
