"""Re-ranking of the top ``depth`` hits of any retriever by a cross-encoder ([Soni2020],
[CAPR2021]) or a poly-encoder ([CAPR2021]): ``rerank=FOLDER`` or ``cross:FOLDER`` names a
cross-encoder, ``poly:FOLDER`` a poly-encoder from ``clinsearch train poly``.

The scorer reads the query beside a passage for each hit: the hit's best sentence, its
report's text (long reports are windowed, best window counts) or its report's concept summary
without negated findings ([Soni2020] section 3). Re-ranked hits come first, in the scorer's
order; hits below ``depth`` follow in their first-stage order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clinsearch.hit import Hit
from clinsearch.search.method_params import RERANK_DEPTH
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore



def load_scorer(model: str | Path) -> Any:
    """The scorer a ``rerank`` value names: ``poly:FOLDER`` a poly-encoder, ``cross:FOLDER`` or
    a bare folder a cross-encoder; each has ``score(query, passages) -> scores``."""
    kind, _, rest = str(model).partition(":")
    if kind == "poly" and rest:
        from clinsearch.models.poly_encoder import load_poly_encoder

        return load_poly_encoder(rest)
    from clinsearch.models.cross_encoder import load_cross_encoder

    return load_cross_encoder(rest if kind == "cross" and rest else model)


class Reranker:
    """Wraps a retriever: its top ``depth`` hits are re-scored by a cross- or poly-encoder."""

    def __init__(
        self,
        index: IndexStore,
        base: Any,
        model: str | Path,
        *,
        depth: int = RERANK_DEPTH,
        passage: str = "report",
    ) -> None:
        self.index = index
        self.base = base
        self.scorer = load_scorer(model)
        self.depth = depth
        self.passage = passage

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` after re-ranking."""
        return self.search_many([query], level, top)[0]

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """First-stage hits for all queries, then each query's top ``depth`` re-scored."""
        depth = min(max(top, self.depth), self.index.level_size(level))
        first = self.base.search_many(list(queries), level, depth)
        return [self._rerank(q, hits, top) for q, hits in zip(queries, first, strict=True)]

    def _rerank(self, query: str, hits: list[Hit], top: int) -> list[Hit]:
        """Re-score the first ``depth`` hits and put them first, best first."""
        head, tail = hits[: self.depth], hits[self.depth :]
        scores = self.scorer.score(query, self._passages(head))
        order = sorted(range(len(head)), key=lambda i: (-scores[i], head[i].rank))
        reranked = [
            replace(
                head[i],
                score=float(scores[i]),
                explanation=head[i].explanation
                | {
                    "reranked": True,
                    "first_stage_rank": head[i].rank,
                    "first_stage_score": head[i].score,
                    "rerank_input": self.passage,
                },
            )
            for i in order
        ]
        # The tail keeps its first-stage order below the head; its scores are re-based so that
        # sorting by score (TREC evaluation) gives the same order as the ranks.
        floor = min((hit.score for hit in reranked), default=0.0)
        rebased = [
            replace(hit, score=floor - n,
                    explanation=hit.explanation | {"first_stage_score": hit.score})
            for n, hit in enumerate(tail, 1)
        ]
        return [replace(hit, rank=rank) for rank, hit in enumerate([*reranked, *rebased], 1)][:top]

    def _passages(self, hits: list[Hit]) -> list[str]:
        """What the scorer reads beside the query for each hit."""
        if self.passage == "sentence":
            return [hit.sentence for hit in hits]
        report_ids = [hit.report_id for hit in hits]
        if self.passage == "report":
            return report_texts(self.index, report_ids)
        from clinsearch.search.summary import concept_summaries

        return concept_summaries(self.index, report_ids)


def report_texts(index: IndexStore, report_ids: Sequence[str]) -> list[str]:
    """The text of each report, in the order of ``report_ids``."""
    if not report_ids:
        return []
    table = index.generation.table(
        "reports", ["id", "text"], filters=[("id", "in", list(set(report_ids)))]
    )
    texts = dict(zip(table.column("id").to_pylist(), table.column("text").to_pylist(), strict=True))
    return [texts[rid] for rid in report_ids]
