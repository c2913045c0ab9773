"""BM25 retrieval: sentences are scored and lifted to report, visit and patient (best sentence).

With ``whole_report=True`` whole reports are scored instead (visit and patient still take their
best report); the sentence shown is the report's best BM25 sentence for the query.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from clinsearch.hit import Hit
from clinsearch.index.bm25 import BM25Searcher
from clinsearch.search.aggregate import Scored, top_groups
from clinsearch.search.hit_builder import make_hits
from clinsearch.search.retriever import RankedUnits
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore

_MIN_FIRST_FETCH = 64



class BM25Retriever:
    """Okapi BM25 (tantivy, k1=1.2, b=0.75) over the index's bm25 component."""

    def __init__(self, index: IndexStore, *, whole_report: bool = False) -> None:
        self.lookup = index.lookup
        self.bm25: BM25Searcher = index.component("bm25")
        self.whole_report = whole_report

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` for ``query``."""
        return self.rank(query, level, top).hits()

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """``search`` for each query in turn."""
        return [self.search(query, level, top) for query in queries]

    def rank_many(self, queries: Sequence[str], level: Level, top: int) -> list[RankedUnits]:
        """``rank`` for each query in turn."""
        return [self.rank(query, level, top) for query in queries]

    def rank(self, query: str, level: Level, top: int) -> RankedUnits:
        """The ``top`` best units at ``level`` for ``query``; their hits (best sentence, matched
        terms) are built when asked."""
        terms = self.bm25.terms(query)
        unit = "report" if self.whole_report and level != "sentence" else "sentence"
        first = top if level == unit else max(4 * top, _MIN_FIRST_FETCH)
        best = top_groups(
            partial(self._fetch, unit, terms),
            partial(self.lookup.groups, level, unit),
            top,
            first,
        )
        explanation = {"method": "bm25", "scored": unit, "query_terms": terms}

        def build(positions: Sequence[int]) -> list[Hit]:
            at = np.asarray(positions, dtype=np.int64)
            rows = best.rows[at]
            sentence_rows = rows if unit == "sentence" else self._best_sentences(terms, rows)
            matches = [
                self.bm25.matches(text, terms)
                for text in self.lookup.sentence_texts.take(sentence_rows)
            ]
            return make_hits(
                self.lookup,
                level,
                best.scores[at],
                sentence_rows,
                [tuple((start, end) for start, end, _ in found) for found in matches],
                [explanation | {"matched_terms": _matched_terms(terms, found)}
                 for found in matches],
                (at + 1).tolist(),
            )

        shown = best.rows if unit == "sentence" else self.lookup.first_sentence_row[best.rows]
        return RankedUnits.of_rows(self.lookup, level, best.scores, shown, build)

    def _fetch(self, unit: str, terms: list[str], limit: int) -> Scored:
        """The ``limit`` best sentences or reports, as row lookup rows."""
        if unit == "sentence":
            ranked = self.bm25.search("sentences", terms, limit)
            rows = self.lookup.sentence_rows(ranked.report_keys, ranked.sentence_indexes)
        else:
            ranked = self.bm25.search("reports", terms, limit)
            rows = self.lookup.report_rows(ranked.report_keys)
        return Scored(ranked.scores, rows, ranked.exhausted)

    def _best_sentences(self, terms: list[str], report_rows: np.ndarray) -> np.ndarray:
        """Each report's best BM25 sentence for ``terms`` (its first sentence if none matches)."""
        best = self.lookup.first_sentence_row[report_rows].copy()
        if len(report_rows) == 0:
            return best
        keys = self.lookup.report_keys[report_rows]
        limit = int(np.sum(self.lookup.sentence_counts(report_rows)))
        ranked = self.bm25.search("sentences", terms, limit, within_reports=keys.tolist())
        seen: set[int] = set()
        position = {int(key): i for i, key in enumerate(keys.tolist())}
        rows = self.lookup.sentence_rows(ranked.report_keys, ranked.sentence_indexes)
        for key, row in zip(ranked.report_keys.tolist(), rows.tolist(), strict=True):
            if key not in seen:
                seen.add(key)
                best[position[key]] = row
        return best


def _matched_terms(terms: list[str], found: list[tuple[int, int, str]]) -> list[str]:
    """The distinct query terms found in a sentence, in query order."""
    present = {term for _, _, term in found}
    return [t for t in dict.fromkeys(terms) if t in present]
