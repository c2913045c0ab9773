"""Dense retrieval: the query is encoded with the index's model and matched to sentence vectors.

Sentences are scored by cosine similarity (best window for long sentences) and lifted to
report, visit and patient by their best sentence, exactly as BM25 does.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from clinsearch.hit import Hit
from clinsearch.index.dense import DenseSearcher, SentenceScores, check_same_model
from clinsearch.search.aggregate import Scored, top_groups
from clinsearch.search.hit_builder import make_hits
from clinsearch.search.retriever import RankedUnits
from clinsearch.search.vocabulary import DefaultEncoder
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore

_MIN_FIRST_FETCH = 64



class DenseRetriever:
    """Cosine similarity between the query and every sentence embedding of the index."""

    def __init__(self, index: IndexStore, *, model: str | Path | None = None) -> None:
        """``model`` must be the model the index was embedded with (default: that one)."""
        self.lookup = index.lookup
        self.dense: DenseSearcher = index.component("dense")
        # loaded when a query is first encoded: a few short ones need no torch (numpy_bert)
        self.encoder = DefaultEncoder(model or self.dense.meta.model_path, "dense model")
        check_same_model(self.dense.meta, self.encoder)

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` for ``query``."""
        return self.search_many([query], level, top)[0]

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """Encode the queries in one batch, then rank for each."""
        return [ranked.hits() for ranked in self.rank_many(queries, level, top)]

    def rank_many(self, queries: Sequence[str], level: Level, top: int) -> list[RankedUnits]:
        """Encode the queries in one batch, then rank for each (hits built when asked)."""
        vectors = self.encoder.encode_queries(list(queries))
        return [self.rank_vector(vector, level, top) for vector in vectors]

    def rank_vector(self, vector: np.ndarray, level: Level, top: int) -> RankedUnits:
        """The ``top`` best units at ``level`` for an encoded query."""
        first = top if level == "sentence" else max(4 * top, _MIN_FIRST_FETCH)
        best = top_groups(
            partial(self._fetch, self.dense.scorer(vector)),
            partial(self.lookup.groups, level, "sentence"),
            top,
            first,
        )
        explanation = {"method": "dense", "scored": "sentence", "model": str(self.encoder.path)}

        def build(positions: Sequence[int]) -> list[Hit]:
            at = np.asarray(positions, dtype=np.int64)
            return make_hits(self.lookup, level, best.scores[at], best.rows[at],
                             [()] * len(at), [explanation] * len(at), (at + 1).tolist())

        return RankedUnits.of_rows(self.lookup, level, best.scores, best.rows, build)

    def _fetch(self, scorer: object, limit: int) -> Scored:
        """The ``limit`` best sentences, as row lookup rows."""
        ranked: SentenceScores = scorer(limit)  # type: ignore[operator]
        rows = self.lookup.sentence_rows(ranked.report_keys, ranked.sentence_indexes)
        return Scored(ranked.scores, rows, ranked.exhausted)
