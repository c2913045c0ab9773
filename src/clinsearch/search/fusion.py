"""Fuse ranked lists from several retrievers: reciprocal rank fusion and weighted score fusion.

A ranking is a list of ``(id, score)`` pairs, best first. Fused lists are sorted by fused score,
ties broken by id so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

Ranking = Sequence[tuple[str, float]]
Normalisation = Literal["minmax", "zscore"]
RRF_K = 60  # Cormack et al. 2009


def reciprocal_rank_fusion(
    rankings: Sequence[Ranking], *, k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """``score(d) = sum_i w_i / (k + rank_i(d))`` with 1-based ranks; absent ids add nothing."""
    weights = _weights(rankings, weights)
    fused: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, (doc, _) in enumerate(ranking, start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k + rank)
    return _sorted(fused)


def weighted_score_fusion(
    rankings: Sequence[Ranking],
    *,
    weights: Sequence[float] | None = None,
    normalisation: Normalisation = "minmax",
) -> list[tuple[str, float]]:
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


def normalise(ranking: Ranking, normalisation: Normalisation) -> dict[str, float]:
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


def _sorted(fused: dict[str, float]) -> list[tuple[str, float]]:
    """Fused scores best first, ties broken by id."""
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))
