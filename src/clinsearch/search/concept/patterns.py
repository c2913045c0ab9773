"""How completely a candidate finding pattern matches a query pattern ([SyedaMahmood2021] 3.5).

A query pattern has parts: its core concept, its polarity and each of its modifiers. Every part
scores 1 when the candidate matches it exactly, a fraction when it matches partially (a
narrower or broader concept, uncertain for present, a related modifier value such as
bilateral for right or base for lower lobe: see ``modifier_relations``), and 0 otherwise; the
pattern score is the mean over parts, so a candidate carrying every query part scores 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from clinsearch.annotate.finding import Finding, modifier_values
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.search.concept.modifier_relations import modifier_credit

NARROWER_STEP = 0.25  # each level below the query concept costs this much
BROADER_BASE = 0.75  # a parent concept scores BROADER_BASE - NARROWER_STEP * depth
MIN_RELATED = 0.25
_POLARITY_PARTIAL = {("present", "uncertain"): 0.5, ("uncertain", "present"): 0.5}


@dataclass(frozen=True, slots=True)
class PatternMatch:
    """Part-by-part agreement of a candidate with a query pattern."""

    relation: str  # "exact", "narrower" (candidate is a child concept), "broader", or "none"
    concept: float
    polarity: float
    modifiers: tuple[tuple[str, float], ...]  # (query modifier value, score)
    sites: tuple[tuple[str, float], ...] = ()  # (query anatomy, 1 if in the same sentence)

    @property
    def parts(self) -> int:
        """How many query parts there are."""
        return 2 + len(self.modifiers) + len(self.sites)

    @property
    def total(self) -> float:
        """The summed part scores."""
        return (self.concept + self.polarity + sum(s for _, s in self.modifiers)
                + sum(s for _, s in self.sites))

    @property
    def score(self) -> float:
        """Mean over the query parts: 1.0 when every part matches exactly."""
        return self.total / self.parts

    def explain(self) -> dict[str, object]:
        """The matched parts as a JSON-ready dict."""
        out: dict[str, object] = {
            "concept": self.relation,
            "polarity": self.polarity == 1.0,
            "modifiers": {value: s for value, s in self.modifiers},
        }
        if self.sites:
            out["anatomy"] = {name: s for name, s in self.sites}
        out["completeness"] = round(self.score, 4)
        return out


def concept_score(query: str, candidate: str, hierarchy: Hierarchy) -> tuple[str, float]:
    """How well ``candidate`` stands for ``query``: exact, narrower, broader or unrelated."""
    return _concept_score(query, candidate, hierarchy.descendants(query),
                          hierarchy.ancestors(query))


def _concept_score(query: str, candidate: str, descendants: Mapping[str, int],
                   ancestors: Mapping[str, int]) -> tuple[str, float]:
    if candidate == query:
        return "exact", 1.0
    down = descendants.get(candidate)
    if down is not None:
        return "narrower", max(MIN_RELATED, 1.0 - NARROWER_STEP * down)
    up = ancestors.get(candidate)
    if up is not None:
        return "broader", max(MIN_RELATED, BROADER_BASE - NARROWER_STEP * up)
    return "none", 0.0


def match(
    query: Finding, concept: str, polarity: str, modifiers: Sequence[str], hierarchy: Hierarchy,
    categories: Mapping[str, str] | None = None,
) -> PatternMatch:
    """Score the candidate (concept, polarity, modifier values) against a query pattern;
    with ``categories`` (value -> category) an unstated modifier beats a conflicting one."""
    return matcher(query, hierarchy, categories)(concept, polarity, modifiers)


def matcher(query: Finding, hierarchy: Hierarchy, categories: Mapping[str, str] | None = None
            ) -> Callable[[str, str, Sequence[str]], PatternMatch]:
    """``match`` against ``query`` as a function of the candidate alone, with what depends on
    the query worked out once (a query pattern meets hundreds of candidates, many of them with
    the same modifier values)."""
    descendants = hierarchy.descendants(query.concept)
    ancestors = hierarchy.ancestors(query.concept)
    category = {m.value: m.category for m in query.modifiers}
    values = modifier_values(query.modifiers)
    credits: dict[tuple[str, ...], tuple[tuple[str, float], ...]] = {}

    def scored(concept: str, polarity: str, modifiers: Sequence[str]) -> PatternMatch:
        relation, cscore = _concept_score(query.concept, concept, descendants, ancestors)
        if polarity == query.polarity:
            pscore = 1.0
        else:
            pscore = _POLARITY_PARTIAL.get((query.polarity, polarity), 0.0)
        have = tuple(modifiers)
        mods = credits.get(have)
        if mods is None:
            mods = credits[have] = tuple(
                (value, modifier_credit(value, have, category.get(value), categories))
                for value in values)
        return PatternMatch(relation, cscore, pscore, mods)

    return scored
