"""Search over an open index: the session that makes retrievers once and the searchable Index.

The index stage is a store (build, open, add, delete); searching belongs to this stage, which
caches one retriever per method and options for the generation the index has open.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from clinsearch.errors import ClinsearchError, InputError
from clinsearch.hit import Hit
from clinsearch.index.index_store import IndexStore
from clinsearch.search.method_spec import MethodSpec
from clinsearch.search.registry import (
    checked_options,
    default_method,
    make_retriever,
    parse_method,
)
from clinsearch.search.retriever import RankedUnits, Retriever, rank_many
from clinsearch.text_checks import check_text
from clinsearch.units import Level, check_level

MAX_RETRIEVERS = 32  # a server sees many filter values; each makes its own retriever


class SearchSession:
    """Searches one index; retrievers are made once per (generation, method, options) and the
    least recently used beyond ``MAX_RETRIEVERS`` are dropped (models stay cached by path)."""

    def __init__(self, index: IndexStore) -> None:
        self.index = index
        self._generation: Path | None = None
        self._retrievers: dict[tuple[str, tuple[tuple[str, Any], ...]], Retriever] = {}
        self._lock = threading.Lock()  # server threads share one session

    def search(
        self, query: str, level: Level = "report", top: int = 10,
        method: str | MethodSpec | None = None, **options: Any,
    ) -> list[Hit]:
        """The ``top`` best hits for ``query`` at ``level`` by ``method`` (options go to it;
        default ``default_method``: hybrid when the index has vectors, else concept)."""
        return self.search_many([query], level, top, method, **options)[0]

    def search_many(
        self, queries: Sequence[str], level: Level = "report", top: int = 10,
        method: str | MethodSpec | None = None, **options: Any,
    ) -> list[list[Hit]]:
        """``search`` for each query, in order."""
        retriever, top = self._prepared(queries, level, top, method, options)
        return retriever.search_many(list(queries), level, top)

    def rank(
        self, query: str, level: Level = "report", top: int = 10,
        method: str | MethodSpec | None = None, **options: Any,
    ) -> RankedUnits:
        """What ``search`` finds, with each hit (sentence, highlights, explanation) built only
        when its position is asked for: a page of a deep ranking builds that page alone."""
        retriever, top = self._prepared([query], level, top, method, options)
        return rank_many(retriever, [query], level, top)[0]

    def _prepared(
        self, queries: Sequence[str], level: Level, top: int,
        method: str | MethodSpec | None, options: dict[str, Any],
    ) -> tuple[Retriever, int]:
        """The retriever of ``method`` (default ``default_method``) and ``top``, no more than
        the units at ``level``, once level and queries are valid."""
        check_level(level)
        if top < 1:
            raise ClinsearchError(f"top must be at least 1 (got {top})")
        for query in queries:
            if not query.strip():
                raise InputError("empty query", field="query")
            check_text(query, "the query")
        top = min(top, self.index.level_size(level))  # more than exist would only waste memory
        method = method or default_method(self.index.config.components)
        return self.retriever(method, options), top

    def retriever(self, method: str | MethodSpec, options: dict[str, Any]) -> Retriever:
        """The retriever for ``method`` (a name or method spec) and ``options`` over the index's
        open generation; options given both ways must agree."""
        spec = parse_method(method) if isinstance(method, str) else method
        chosen = checked_options(spec.method, spec.options)
        given = checked_options(spec.method, options)
        clash = [k for k in given if k in chosen and given[k] != chosen[k]]
        if clash:
            raise ClinsearchError(
                f"option {clash[0]!r} is given twice, in the method spec {spec.label!r} and"
                " as an option, with different values"
            )
        chosen |= given
        key = (spec.method, tuple(sorted(chosen.items())))
        with self._lock:
            if self._generation != self.index.generation.path:
                self._retrievers.clear()
                self._generation = self.index.generation.path
            generation = self._generation
            retriever = self._retrievers.pop(key, None)
            if retriever is not None:
                self._retrievers[key] = retriever  # most recently used last
                return retriever
        # made outside the lock: a model loading for one method never holds up the others
        made = make_retriever(self.index, MethodSpec(spec.label, spec.method, chosen))
        with self._lock:
            if self.index.generation.path != generation:  # moved on meanwhile: not kept
                return made
            retriever = self._retrievers.setdefault(key, made)  # another thread's, if first
            while len(self._retrievers) > MAX_RETRIEVERS:
                del self._retrievers[next(iter(self._retrievers))]
        return retriever


class Index(IndexStore):
    """An index you can search: the store (build, open, add, delete) with a search session."""

    def search(
        self, query: str, level: Level = "report", top: int = 10,
        method: str | MethodSpec | None = None, **options: Any,
    ) -> list[Hit]:
        """The ``top`` best hits for ``query`` at ``level`` by ``method`` (options go to it)."""
        return self.session.search(query, level, top, method, **options)

    def search_many(
        self, queries: Sequence[str], level: Level = "report", top: int = 10,
        method: str | MethodSpec | None = None, **options: Any,
    ) -> list[list[Hit]]:
        """``search`` for each query, in order."""
        return self.session.search_many(queries, level, top, method, **options)

    def rank(
        self, query: str, level: Level = "report", top: int = 10,
        method: str | MethodSpec | None = None, **options: Any,
    ) -> RankedUnits:
        """``search``'s ranking, its hits built only for the positions asked for."""
        return self.session.rank(query, level, top, method, **options)

    @property
    def default_method(self) -> str:
        """hybrid when the index has vectors, else concept (both read negation), else bm25."""
        return default_method(self.config.components)

    @cached_property
    def session(self) -> SearchSession:
        """This index's search session (made on first use)."""
        return SearchSession(self)


def session_for(index: IndexStore) -> SearchSession:
    """The search session of ``index`` (its own when it is searchable, else a new one)."""
    return index.session if isinstance(index, Index) else SearchSession(index)
