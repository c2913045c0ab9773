"""Hierarchy-aware comparison of predicted and gold concept sets."""

from __future__ import annotations

import pytest

from clinsearch.annotate.finding import Finding
from clinsearch.annotate.lexicon import Concept
from clinsearch.evaluate.finding_sets import (
    PRF,
    SetScores,
    ancestors,
    credit_to_gold,
    lift,
    present_concepts,
)

CONCEPTS = {
    c.id: c
    for c in [
        Concept("opacity", "opacity", "finding"),
        Concept("airspace_disease", "airspace disease", "finding", parents=("opacity",)),
        Concept("pneumonia", "pneumonia", "disease", parents=("airspace_disease",)),
        Concept("lobar_pneumonia", "lobar pneumonia", "disease", parents=("pneumonia",)),
        Concept("granuloma", "granuloma", "finding"),
        Concept("calcification", "calcification", "finding"),
        Concept(
            "calcified_granuloma",
            "calcified granuloma",
            "finding",
            parents=("granuloma", "calcification"),
        ),
        Concept("lung", "lung", "anatomy"),
    ]
}


def _finding(concept: str, polarity: str = "present", context: tuple[str, ...] = ()) -> Finding:
    return Finding(concept, concept, "finding", concept, 0, 1, polarity, context)  # type: ignore[arg-type]


def test_present_concepts_keeps_asserted_findings_only() -> None:
    found = [
        _finding("pneumonia"),
        _finding("opacity", "absent"),
        _finding("granuloma", "uncertain"),
        _finding("calcification", context=("hypothetical",)),
        _finding("lung", context=("historical",)),
    ]
    assert present_concepts(found) == {"pneumonia", "lung"}
    assert present_concepts(found, uncertain=True) == {"pneumonia", "lung", "granuloma"}


def test_ancestors_by_distance() -> None:
    assert ancestors(CONCEPTS, "lobar_pneumonia") == [
        {"pneumonia"},
        {"airspace_disease"},
        {"opacity"},
    ]
    assert ancestors(CONCEPTS, "calcified_granuloma") == [{"granuloma", "calcification"}]
    assert ancestors(CONCEPTS, "opacity") == []
    assert ancestors(CONCEPTS, "not_in_lexicon") == []


def test_lift_to_nearest_target_ancestor() -> None:
    targets = frozenset({"pneumonia", "opacity", "calcification"})
    assert lift(CONCEPTS, ["lobar_pneumonia"], targets) == {"pneumonia"}
    assert lift(CONCEPTS, ["airspace_disease"], targets) == {"opacity"}
    assert lift(CONCEPTS, ["calcified_granuloma"], targets) == {"calcification"}
    assert lift(CONCEPTS, ["lung", "granuloma"], targets) == set()
    assert lift(CONCEPTS, ["opacity"], targets) == {"opacity"}


def test_credit_to_gold_counts_a_child_for_its_gold_parent() -> None:
    assert credit_to_gold(CONCEPTS, {"pneumonia"}, {"airspace_disease"}) == {"airspace_disease"}
    assert credit_to_gold(CONCEPTS, {"calcified_granuloma"}, {"granuloma", "calcification"}) == {
        "granuloma",
        "calcification",
    }
    # a parent never counts for its child, and unrelated concepts stay false positives
    assert credit_to_gold(CONCEPTS, {"opacity"}, {"pneumonia"}) == {"opacity"}
    assert credit_to_gold(CONCEPTS, {"pneumonia"}, {"pneumonia", "opacity"}) == {"pneumonia"}


def test_prf_values() -> None:
    prf = PRF(tp=3, fp=1, fn=2)
    assert prf.precision == pytest.approx(0.75)
    assert prf.recall == pytest.approx(0.6)
    assert prf.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert PRF(0, 0, 0).f1 == 0.0


def test_set_scores_micro_and_per_concept() -> None:
    scores = SetScores()
    scores.add({"opacity", "pneumonia"}, {"opacity"})
    scores.add(set(), {"opacity", "granuloma"})
    assert scores.concept("opacity") == PRF(1, 0, 1)
    assert scores.concept("pneumonia") == PRF(0, 1, 0)
    assert scores.micro == PRF(1, 1, 2)
    assert scores.concepts() == ["opacity", "granuloma", "pneumonia"]
    assert scores.macro_f1(["opacity", "granuloma"]) == pytest.approx((2 / 3 + 0) / 2)
