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
}


def make_retriever(index: Index, method: str, **options: Any) -> Retriever:
    """The retriever ``method`` over ``index``; unknown methods or options are user errors."""
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
    return factory(index, **options)
