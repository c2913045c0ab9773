"""The retriever registry behind ``--method``: a name maps to ``factory(index, **options)``.

Later methods (``concept``, ``dense``, ``hybrid``) register here and are reached through
``Index.search(..., method=NAME)`` and ``clinsearch search --method NAME`` unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from clinsearch.errors import ClinsearchError
from clinsearch.search.bm25 import BM25Retriever
from clinsearch.search.concept import ConceptRetriever
from clinsearch.search.dense import DenseRetriever
from clinsearch.search.hit import Hit, Level
from clinsearch.search.hybrid import HybridRetriever

if TYPE_CHECKING:
    from clinsearch.index import Index


class Retriever(Protocol):
    """Ranks sentences, reports, visits or patients of one index for a text query."""

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level``, best first."""
        ...

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """``search`` for each query (a retriever may batch the work)."""
        ...


RetrieverFactory = Callable[..., Retriever]

METHODS: dict[str, RetrieverFactory] = {
    "bm25": BM25Retriever,
    "concept": ConceptRetriever,
    "dense": DenseRetriever,
    "hybrid": HybridRetriever,
}


def default_method(components: Sequence[str]) -> str:
    """The method a search uses unless told: hybrid with vectors, concept with concept postings
    (both read negation, unlike BM25), bm25 only for an index with neither."""
    if "dense" in components:
        return "hybrid"
    return "concept" if "concepts" in components else "bm25"


def make_retriever(
    index: Index,
    method: str,
    *,
    polarity_filter: str | None = None,
    rerank: str | None = None,
    rerank_depth: int | None = None,
    rerank_input: str | None = None,
    **options: Any,
) -> Retriever:
    """The retriever ``method`` over ``index``; unknown methods or options are user errors.

    ``polarity_filter`` wraps it in a concept polarity filter; ``rerank`` (a cross-encoder
    folder) in a re-ranker of its top ``rerank_depth`` hits reading ``rerank_input`` passages.
    """
    try:
        factory = METHODS[method]
    except KeyError:
        raise ClinsearchError(
            f"unknown search method {method!r}; known methods: {', '.join(METHODS)}"
        ) from None
    try:
        inspect.signature(factory).bind(index, **options)
    except TypeError as exc:
        raise ClinsearchError(f"method {method!r} does not take these options: {exc}") from None
    retriever: Retriever = factory(index, **options)
    if polarity_filter is not None:
        from clinsearch.search.polarity import PolarityFilter

        retriever = PolarityFilter(index, retriever, polarity_filter)
    if rerank is not None:
        from clinsearch.search.rerank import DEFAULT_DEPTH, Reranker

        retriever = Reranker(
            index,
            retriever,
            rerank,
            depth=rerank_depth or DEFAULT_DEPTH,
            passage=rerank_input or "report",
        )
    elif rerank_depth is not None or rerank_input is not None:
        raise ClinsearchError("--rerank-depth and --rerank-input need --rerank MODEL")
    return retriever
