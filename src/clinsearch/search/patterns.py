"""Score how completely a candidate finding pattern matches a query pattern (paper 001, 3.5).

A query pattern has parts: its core concept, its polarity and each of its modifiers. Every part
scores 1 when the candidate matches it exactly, a fraction when it matches partially (a
narrower or broader concept, uncertain for present, bilateral for right), and 0 otherwise; the
pattern score is the mean over parts, so a candidate carrying every query part scores 1.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clinsearch.annotate.finding import Finding, modifier_values

NARROWER_STEP = 0.25  # each level below the query concept costs this much
BROADER_BASE = 0.75  # a parent concept scores BROADER_BASE - NARROWER_STEP * depth
MIN_RELATED = 0.25
_POLARITY_PARTIAL = {("present", "uncertain"): 0.5, ("uncertain", "present"): 0.5}
_MODIFIER_PARTIAL = {
    ("right", "bilateral"): 0.5,
    ("left", "bilateral"): 0.5,
    ("bilateral", "right"): 0.5,
    ("bilateral", "left"): 0.5,
}


class Hierarchy:
    """The concept graph of a lexicon (concepts may have several parents), with BFS depths."""

    def __init__(self, parents: Mapping[str, Sequence[str]]) -> None:
        self._parents = {c: tuple(p) for c, p in parents.items()}
        children: dict[str, list[str]] = {c: [] for c in self._parents}
        for child, ps in self._parents.items():
            for p in ps:
                children.setdefault(p, []).append(child)
        self._children = {c: tuple(k) for c, k in children.items()}
        self._up: dict[str, dict[str, int]] = {}
        self._down: dict[str, dict[str, int]] = {}

    @classmethod
    def from_lexicon(cls, lexicon: object) -> Hierarchy:
        """The hierarchy of a ``Lexicon`` (its concepts' ``parents``)."""
        return cls({cid: c.parents for cid, c in lexicon.concepts.items()})  # type: ignore[attr-defined]

    def ancestors(self, concept: str) -> dict[str, int]:
        """The concept itself (depth 0) and every ancestor with its shortest distance."""
        if concept not in self._up:
            self._up[concept] = _bfs(concept, self._parents)
        return self._up[concept]

    def descendants(self, concept: str) -> dict[str, int]:
        """The concept itself (depth 0) and every descendant with its shortest distance."""
        if concept not in self._down:
            self._down[concept] = _bfs(concept, self._children)
        return self._down[concept]


def _bfs(start: str, edges: Mapping[str, Sequence[str]]) -> dict[str, int]:
    depth = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in edges.get(node, ()):
            if nxt not in depth:
                depth[nxt] = depth[node] + 1
                queue.append(nxt)
    return depth


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
    if candidate == query:
        return "exact", 1.0
    down = hierarchy.descendants(query).get(candidate)
    if down is not None:
        return "narrower", max(MIN_RELATED, 1.0 - NARROWER_STEP * down)
    up = hierarchy.ancestors(query).get(candidate)
    if up is not None:
        return "broader", max(MIN_RELATED, BROADER_BASE - NARROWER_STEP * up)
    return "none", 0.0


def match(
    query: Finding, concept: str, polarity: str, modifiers: Sequence[str], hierarchy: Hierarchy
) -> PatternMatch:
    """Score the candidate (concept, polarity, modifier values) against a query pattern."""
    relation, cscore = concept_score(query.concept, concept, hierarchy)
    if polarity == query.polarity:
        pscore = 1.0
    else:
        pscore = _POLARITY_PARTIAL.get((query.polarity, polarity), 0.0)
    have = set(modifiers)
    mods = []
    for value in modifier_values(query.modifiers):
        if value in have:
            mods.append((value, 1.0))
        else:
            mods.append((value, max((_MODIFIER_PARTIAL.get((value, h), 0.0) for h in have),
                                    default=0.0)))
    return PatternMatch(relation, cscore, pscore, tuple(mods))
