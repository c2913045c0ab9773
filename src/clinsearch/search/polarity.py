"""Concept polarity as a hard filter on any retriever (``--polarity present|absent|any|query``).

The query's concepts are found by the lexicon annotator; a hit is kept only if its unit
(sentence, report, visit or patient) has a finding of every query concept with the wanted
polarity in the index's findings table: "any" means mentioned at all, "query" the polarity
the query states ("no pneumothorax": absent). The wrapped retriever is asked for more hits
until ``top`` survive or it has no more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from clinsearch.annotate.finding import POLARITIES
from clinsearch.errors import ClinsearchError
from clinsearch.hit import Hit
from clinsearch.index.finding_match import FindingSpec, finding_matcher
from clinsearch.search.method_params import POLARITY_FILTERS
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore



class PolarityFilter:
    """Wraps a retriever: only units with the query's concepts at the wanted polarity remain."""

    def __init__(self, index: IndexStore, base: Any, polarity: str) -> None:
        if "findings" not in index.config.components:
            raise ClinsearchError(
                f"{index.path}: this index has no findings table, needed by `polarity_filter`;"
                " rebuild it with the findings component"
            )
        self.base = base
        self.polarity = polarity
        self.lookup = index.lookup
        self.matcher = finding_matcher(index)
        from clinsearch.annotate.annotator import annotator_for
        from clinsearch.search.concept.tools import index_lexicon_path

        # the lexicon the findings were made with, so query and index concepts agree
        self.annotator = annotator_for(index_lexicon_path(index))

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` that pass the filter."""
        return self.search_many([query], level, top)[0]

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """Filter each query's hits, fetching deeper while too few pass."""
        return [self._search(query, level, top) for query in queries]

    def query_concepts(self, query: str) -> dict[str, str]:
        """The lexicon concepts mentioned in the query, each with the polarity it states."""
        concepts: dict[str, str] = {}
        for finding in self.annotator.annotate(query):
            concepts.setdefault(finding.concept, finding.polarity)
        if not concepts:
            raise ClinsearchError(
                f"`polarity_filter` needs a lexicon concept in the query; none found in {query!r}"
            )
        return concepts

    def spec(self, concept: str, stated: str) -> FindingSpec:
        """What a query concept matches: findings of that concept at the wanted polarity."""
        wanted = {"any": POLARITIES, "query": (stated,)}.get(self.polarity, (self.polarity,))
        return FindingSpec(concept, (concept,), tuple(wanted))

    def allowed_units(self, concepts: dict[str, str], level: Level) -> np.ndarray:
        """The ``level`` units holding every concept with the wanted polarity (sorted numbers;
        a report-level filter reads no visit or patient ids)."""
        allowed: np.ndarray | None = None
        for concept, stated in concepts.items():
            units = np.unique(self.lookup.groups(
                level, "sentence", self.matcher.sentences(self.spec(concept, stated))))
            allowed = units if allowed is None else np.intersect1d(allowed, units)
        return np.zeros(0, np.int64) if allowed is None else allowed

    def units_of(self, hits: Sequence[Hit], level: Level) -> np.ndarray:
        """The number of each hit's unit at ``level`` (the shared unit mapping)."""
        if level == "sentence":
            return self.lookup.sentence_ids.rows_of([h.sentence_id for h in hits])
        rows = self.lookup.report_ids.rows_of([h.report_id for h in hits])
        return self.lookup.groups(level, "report", rows)

    def _search(self, query: str, level: Level, top: int) -> list[Hit]:
        """Ask the wrapped retriever for 4x more hits each round until ``top`` pass."""
        allowed = self.allowed_units(self.query_concepts(query), level)
        depth = 4 * top
        while True:
            hits = self.base.search(query, level, depth)
            passes = np.isin(self.units_of(hits, level), allowed)
            kept = [h for h, ok in zip(hits, passes.tolist(), strict=True) if ok]
            if len(kept) >= top or len(hits) < depth:
                break
            depth *= 4
        return [
            replace(hit, rank=rank, explanation=hit.explanation | {"polarity": self.polarity})
            for rank, hit in enumerate(kept[:top], start=1)
        ]


def polarity_options(method: str, polarity: str) -> dict[str, str]:
    """Map a search polarity (--polarity) onto concept search's own mode and the filter
    every method takes."""
    if polarity not in POLARITY_FILTERS:
        raise ClinsearchError(
            f"unknown polarity {polarity!r}; choose one of {', '.join(POLARITY_FILTERS)}"
        )
    if polarity == "query":
        return {}
    native = {"polarity": "any"} if method == "concept" else {}
    if method == "concept" and polarity == "any":
        return native
    return native | {"polarity_filter": polarity}
