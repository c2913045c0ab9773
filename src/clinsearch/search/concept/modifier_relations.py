"""Partial credit between related modifier values (paper 001, 3.5: partial pattern matches).

Reports and labels name the same place (or grade) in different words: a "left base" opacity is
usually written "left lower lobe" or "left lower zone", and a bilateral finding is also on the
right. Each entry is a symmetric pair of lexicon modifier values that denote overlapping anatomy
(or adjacent grades), with the credit a candidate carrying one earns for a query asking the
other. A candidate that
states no value of the queried category (the sentence does not say which side) earns a little,
less than a related value; one that states a conflicting value (left for right) earns nothing.
An unstated value that another finding of the same report carries ("opacity at the left base.
This may be atelectasis.") earns ``ELSEWHERE_CREDIT``: the report probably says it, the
sentence does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

RELATED_CREDIT = 0.5  # a related value is worth half an exact one
UNSTATED_CREDIT = 0.25  # no value of the category: maybe right, surely not conflicting
ELSEWHERE_CREDIT = 0.5  # unstated in the sentence, stated by another finding of the report

# Overlapping regions: (value, value); symmetric. Laterality: bilateral covers either side.
_RELATED_PAIRS: tuple[tuple[str, str], ...] = (
    ("right", "bilateral"),
    ("left", "bilateral"),
    # The lower lung: the lobe, the radiographic zone and the base are the same region.
    ("base", "lower lobe"),
    ("base", "lower zone"),
    ("lower lobe", "lower zone"),
    # The upper lung likewise.
    ("apex", "upper lobe"),
    ("apex", "upper zone"),
    ("upper lobe", "upper zone"),
    # The middle of the lung.
    ("middle lobe", "mid zone"),
    ("lingula", "mid zone"),
    # The hilum and the region around it.
    ("hilum", "perihilar"),
    # Adjacent grades: reports grade "minimal" below "mild"; MeSH (and most readers) have no
    # "minimal" and call it mild.
    ("minimal", "mild"),
)
RELATED: dict[tuple[str, str], float] = {
    pair: RELATED_CREDIT for a, b in _RELATED_PAIRS for pair in ((a, b), (b, a))
}


def modifier_categories(lexicon: object) -> dict[str, str]:
    """Modifier value -> its category, from a ``Lexicon``'s modifier vocabularies."""
    vocab: Mapping[str, Mapping[str, object]] = lexicon.modifiers  # type: ignore[attr-defined]
    return {value: category for category, values in vocab.items() for value in values}


def modifier_credit(value: str, candidate_values: Iterable[str], category: str | None = None,
                    categories: Mapping[str, str] | None = None) -> float:
    """Credit for query modifier ``value`` (of ``category``): 1 if the candidate has it, else
    the best related value's, else ``UNSTATED_CREDIT`` when ``categories`` shows the candidate
    states no value of that category, else 0."""
    have = set(candidate_values)
    if value in have:
        return 1.0
    related = max((RELATED.get((value, h), 0.0) for h in have), default=0.0)
    if related or category is None or categories is None:
        return related
    if any(categories.get(h) == category for h in have):
        return 0.0
    return UNSTATED_CREDIT
