"""Partial credit between related modifier values (paper 001, 3.5: partial pattern matches).

Reports and labels name the same place in different words: a "left base" opacity is usually
written "left lower lobe" or "left lower zone", and a bilateral finding is also on the right.
Each entry is a symmetric pair of lexicon modifier values that denote overlapping anatomy,
with the credit a candidate carrying one earns for a query asking the other.
"""

from __future__ import annotations

from collections.abc import Iterable

RELATED_CREDIT = 0.5  # a related value is worth half an exact one

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
)
RELATED: dict[tuple[str, str], float] = {
    pair: RELATED_CREDIT for a, b in _RELATED_PAIRS for pair in ((a, b), (b, a))
}


def modifier_credit(value: str, candidate_values: Iterable[str]) -> float:
    """Credit for query modifier ``value``: 1 if the candidate has it, else the best related."""
    have = set(candidate_values)
    if value in have:
        return 1.0
    return max((RELATED.get((value, h), 0.0) for h in have), default=0.0)
