"""Partial credit between related modifier values."""

from __future__ import annotations

import pytest

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.search.concept.modifier_relations import (
    RELATED,
    RELATED_CREDIT,
    UNSTATED_CREDIT,
    modifier_categories,
    modifier_credit,
)


@pytest.mark.parametrize(
    ("value", "candidate", "credit"),
    [
        ("lower lobe", ["lower lobe"], 1.0),
        ("base", ["lower lobe"], RELATED_CREDIT),
        ("lower lobe", ["base", "left"], RELATED_CREDIT),
        ("lower zone", ["base"], RELATED_CREDIT),
        ("apex", ["upper lobe"], RELATED_CREDIT),
        ("upper zone", ["apex"], RELATED_CREDIT),
        ("right", ["bilateral"], RELATED_CREDIT),
        ("bilateral", ["left"], RELATED_CREDIT),
        ("mild", ["minimal"], RELATED_CREDIT),
        ("minimal", ["mild", "left"], RELATED_CREDIT),
        ("base", ["upper lobe"], 0.0),
        ("apex", ["lower zone"], 0.0),
        ("right", ["left"], 0.0),
        ("base", [], 0.0),
    ],
)
def test_credit_for_exact_related_and_unrelated_values(value: str, candidate: list[str],
                                                       credit: float) -> None:
    assert modifier_credit(value, candidate) == credit


def test_relations_are_symmetric_and_below_an_exact_match() -> None:
    assert all(RELATED[(b, a)] == s for (a, b), s in RELATED.items())
    assert all(0 < s < 1 for s in RELATED.values())


def test_unstated_category_beats_conflicting_but_not_related() -> None:
    categories = modifier_categories(Lexicon.load())
    assert categories["left"] == "laterality" and categories["base"] == "location"
    assert modifier_credit("right", ["left"], "laterality", categories) == 0.0
    assert modifier_credit("right", ["lower lobe"], "laterality", categories) == UNSTATED_CREDIT
    assert modifier_credit("right", [], "laterality", categories) == UNSTATED_CREDIT
    assert modifier_credit("right", ["bilateral"], "laterality", categories) == RELATED_CREDIT
    assert 0 < UNSTATED_CREDIT < RELATED_CREDIT
    assert modifier_credit("right", [], "laterality") == 0.0  # categories unknown: no credit
