"""Exact aggregation: first K distinct groups, fetching more units until enough or exhausted."""

from __future__ import annotations

import numpy as np

from clinsearch.search.aggregate import Scored, top_groups

SCORES = np.array([9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0])
GROUPS = np.array([0, 0, 0, 0, 0, 1, 1, 2])  # unit row -> group


def _fetcher(asked: list[int]):
    def fetch(n: int) -> Scored:
        asked.append(n)
        return Scored(SCORES[:n], np.arange(len(SCORES))[:n], n >= len(SCORES))

    return fetch


def test_fetches_more_until_enough_groups() -> None:
    asked: list[int] = []
    best = top_groups(_fetcher(asked), lambda rows: GROUPS[rows], top=2, first=2)
    assert asked == [2, 8]
    assert best.rows.tolist() == [0, 5] and best.scores.tolist() == [9.0, 4.0]


def test_stops_when_exhausted() -> None:
    asked: list[int] = []
    best = top_groups(_fetcher(asked), lambda rows: GROUPS[rows], top=5, first=4)
    assert asked == [4, 16]
    assert best.rows.tolist() == [0, 5, 7] and best.exhausted


def test_units_as_groups() -> None:
    asked: list[int] = []
    best = top_groups(_fetcher(asked), lambda rows: rows, top=3)
    assert asked == [3] and best.rows.tolist() == [0, 1, 2]
