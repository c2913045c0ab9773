"""Aggregation of scored units (sentences or reports) to any level, exactly.

A report scores as its best sentence, a visit and a patient as their best report, so the
top-K groups are the first K distinct groups met when walking the units best first. The
retriever is asked for more units until K groups are found or every match has been seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Scored:
    """Units (rows of sentences or reports), best first, and whether that is every match."""

    scores: np.ndarray
    rows: np.ndarray
    exhausted: bool


Fetch = Callable[[int], Scored]


def top_groups(
    fetch: Fetch, groups: Callable[[np.ndarray], np.ndarray], top: int, first: int | None = None
) -> Scored:
    """The best unit of each of the ``top`` best groups, best first.

    ``fetch(n)`` returns the ``n`` best units; ``groups(rows)`` maps unit rows to group ids.
    ``first`` is the first number of units to ask for (default: ``top``, grown x4 as needed).
    """
    wanted = first or top
    while True:
        scored = fetch(wanted)
        keys = groups(scored.rows)
        _, first_seen = np.unique(keys, return_index=True)
        best = np.sort(first_seen)[:top]
        if len(best) >= top or scored.exhausted:
            return Scored(scored.scores[best], scored.rows[best], scored.exhausted)
        wanted *= 4
