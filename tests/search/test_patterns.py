"""Pattern completeness scores: concept relations, polarity and modifiers."""

from __future__ import annotations

import pytest

from clinsearch.annotate.finding import Finding, Modifier
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.search.concept.patterns import concept_score, match

HIERARCHY = Hierarchy(
    {
        "opacity": (),
        "airspace_disease": ("opacity",),
        "pneumonia": ("airspace_disease",),
        "lobar_pneumonia": ("pneumonia",),
        "aspiration_pneumonia": ("pneumonia", "aspiration"),
        "aspiration": (),
        "pneumothorax": (),
    }
)


def finding(concept: str, polarity: str = "present", *mods: tuple[str, str]) -> Finding:
    modifiers = tuple(Modifier(cat, value, value, i, i + 1) for i, (cat, value) in enumerate(mods))
    return Finding(concept, concept, "disease", concept, 0, 1, polarity, (), modifiers)  # type: ignore[arg-type]


def test_hierarchy_depths_over_several_parents() -> None:
    assert HIERARCHY.ancestors("aspiration_pneumonia") == {
        "aspiration_pneumonia": 0, "pneumonia": 1, "aspiration": 1, "airspace_disease": 2,
        "opacity": 3,
    }
    assert HIERARCHY.descendants("airspace_disease") == {
        "airspace_disease": 0, "pneumonia": 1, "lobar_pneumonia": 2, "aspiration_pneumonia": 2,
    }
    assert HIERARCHY.descendants("unknown") == {"unknown": 0}


@pytest.mark.parametrize(
    ("query", "candidate", "relation", "score"),
    [
        ("pneumonia", "pneumonia", "exact", 1.0),
        ("pneumonia", "lobar_pneumonia", "narrower", 0.75),
        ("airspace_disease", "lobar_pneumonia", "narrower", 0.5),
        ("lobar_pneumonia", "pneumonia", "broader", 0.5),
        ("lobar_pneumonia", "opacity", "broader", 0.25),
        ("pneumonia", "pneumothorax", "none", 0.0),
    ],
)
def test_concept_relations(query: str, candidate: str, relation: str, score: float) -> None:
    assert concept_score(query, candidate, HIERARCHY) == (relation, score)


def test_full_match_scores_one_and_each_missing_part_costs_its_share() -> None:
    q = finding("pneumonia", "present", ("laterality", "right"), ("location", "lower lobe"))
    full = match(q, "pneumonia", "present", ["right", "lower lobe", "mild"], HIERARCHY)
    assert full.score == 1.0
    assert full.explain() == {"concept": "exact", "polarity": True,
                              "modifiers": {"right": 1.0, "lower lobe": 1.0}, "completeness": 1.0}
    no_side = match(q, "pneumonia", "present", ["lower lobe"], HIERARCHY)
    assert no_side.score == pytest.approx(3 / 4)
    bilateral = match(q, "pneumonia", "present", ["bilateral", "lower lobe"], HIERARCHY)
    assert bilateral.score == pytest.approx(3.5 / 4)
    child = match(q, "lobar_pneumonia", "present", ["right", "lower lobe"], HIERARCHY)
    assert child.score == pytest.approx(3.75 / 4)
    assert no_side.score < bilateral.score < child.score < full.score


def test_polarity_parts() -> None:
    q = finding("pneumothorax", "absent")
    assert match(q, "pneumothorax", "absent", [], HIERARCHY).score == 1.0
    assert match(q, "pneumothorax", "present", [], HIERARCHY).score == 0.5
    present = finding("pneumothorax")
    assert match(present, "pneumothorax", "uncertain", [], HIERARCHY).polarity == 0.5


def test_related_location_earns_partial_credit_below_exact() -> None:
    q = finding("pneumonia", "present", ("laterality", "left"), ("location", "base"))
    exact = match(q, "pneumonia", "present", ["left", "base"], HIERARCHY)
    related = match(q, "pneumonia", "present", ["left", "lower lobe"], HIERARCHY)
    other = match(q, "pneumonia", "present", ["left", "upper lobe"], HIERARCHY)
    assert exact.score > related.score > other.score
    assert related.explain()["modifiers"] == {"left": 1.0, "base": 0.5}
