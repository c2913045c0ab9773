"""Partial credit between related modifier values ([SyedaMahmood2021] 3.5: partial matches).

Which values are related is lexicon data (``modifier_relations`` in the lexicon YAML, e.g. the
shipped chest X-ray lexicon's "base ~ lower lobe" and "right ~ bilateral"), so a user's lexicon
brings its own. A candidate that states no value of the queried category (the sentence does not
say which side) earns a little, less than a related value; one that states a conflicting value
(left for right) earns nothing.
An unstated value that another finding of the same report carries ("opacity at the left base.
This may be atelectasis.") earns ``ELSEWHERE_CREDIT``: the report probably says it, the
sentence does not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

from clinsearch.annotate.lexicon import RELATED_CREDIT

if TYPE_CHECKING:
    from clinsearch.annotate.lexicon import Lexicon

__all__ = ["ELSEWHERE_CREDIT", "RELATED_CREDIT", "UNSTATED_CREDIT", "ModifierVocabulary",
           "modifier_categories", "modifier_credit", "shipped_relations"]

UNSTATED_CREDIT = 0.25  # no value of the category: maybe right, surely not conflicting
ELSEWHERE_CREDIT = 0.5  # unstated in the sentence, stated by another finding of the report


class ModifierVocabulary(dict[str, str]):
    """A lexicon's modifier value -> category, with its related-value credits (``related``)."""

    def __init__(self, categories: Mapping[str, str],
                 related: Mapping[tuple[str, str], float]) -> None:
        super().__init__(categories)
        self.related = dict(related)


def modifier_categories(lexicon: Lexicon) -> ModifierVocabulary:
    """Modifier value -> its category, from a ``Lexicon``'s modifier vocabularies, with the
    lexicon's modifier relations."""
    categories = {value: category for category, values in lexicon.modifiers.items()
                  for value in values}
    return ModifierVocabulary(categories, lexicon.modifier_relations)


@lru_cache(maxsize=1)
def shipped_relations() -> dict[tuple[str, str], float]:
    """The modifier relations of the shipped chest X-ray lexicon (the default lexicon)."""
    from clinsearch.annotate.lexicon import Lexicon

    return Lexicon.load().modifier_relations


def __getattr__(name: str) -> object:
    """``RELATED``: the shipped lexicon's relations, loaded on first use."""
    if name == "RELATED":
        return shipped_relations()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def modifier_credit(value: str, candidate_values: Iterable[str], category: str | None = None,
                    categories: Mapping[str, str] | None = None) -> float:
    """Credit for query modifier ``value`` (of ``category``): 1 if the candidate has it, else
    the best related value's, else ``UNSTATED_CREDIT`` when ``categories`` shows the candidate
    states no value of that category, else 0. Relations come from ``categories`` (a lexicon's
    ``ModifierVocabulary``), else from the shipped lexicon."""
    related_to = (categories.related if isinstance(categories, ModifierVocabulary)
                  else shipped_relations())
    have = set(candidate_values)
    if value in have:
        return 1.0
    related = max((related_to.get((value, h), 0.0) for h in have), default=0.0)
    if related or category is None or categories is None:
        return related
    if any(categories.get(h) == category for h in have):
        return 0.0
    return UNSTATED_CREDIT
