"""The retriever protocol every search method implements, and the ranking a fusion reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from clinsearch.hit import Hit
from clinsearch.search.hit_builder import unit_ids
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index.row_lookup import RowLookup


class Retriever(Protocol):
    """Ranks sentences, reports, visits or patients of one index for a text query."""

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level``, best first."""
        ...

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """``search`` for each query (a retriever may batch the work)."""
        ...


@dataclass(frozen=True)
class RankedUnits:
    """One query's ranking at a level, best first: scores, unit ids read when first asked, and
    the full hits (sentence, highlights, explanation) built only for the positions asked, as a
    fusion shows a few of the many units it reads. ``keys`` number the units as the index
    does (at the level: sentence or report rows, visit or patient groups), read from nothing:
    a fusion matches units by them and reads the ids of the few it shows."""

    scores: list[float]
    read_ids: Callable[[Sequence[int]], list[str]]  # the ids of the units at these positions
    build: Callable[[Sequence[int]], list[Hit]]  # the hits at these positions, ranked 1 + p
    keys: np.ndarray | None = None  # None: a ranking of hits built at once (no unit numbers)

    @cached_property
    def ids(self) -> list[str]:
        """The id of each unit, best first."""
        return self.read_ids(range(len(self.scores)))

    def ids_at(self, positions: Sequence[int]) -> list[str]:
        """The ids of the units at ``positions``, reading only theirs unless all were read."""
        if "ids" in self.__dict__:
            return [self.ids[p] for p in positions]
        return self.read_ids(positions)

    def hits(self, positions: Sequence[int] | None = None) -> list[Hit]:
        """The hits at ``positions`` (0-based; default: all), each keeping its rank."""
        return self.build(range(len(self.scores)) if positions is None else positions)

    @classmethod
    def of_rows(cls, lookup: RowLookup, level: Level, scores: np.ndarray,
                sentence_rows: np.ndarray, build: Callable[[Sequence[int]], list[Hit]]
                ) -> RankedUnits:
        """A ranking of units by their shown sentence's row: keys from the rows, ids read
        from the index for the positions asked."""
        def read_ids(positions: Sequence[int]) -> list[str]:
            return unit_ids(lookup, level, sentence_rows[np.asarray(positions, np.int64)])

        return cls(scores.tolist(), read_ids, build,
                   lookup.groups(level, "sentence", sentence_rows))

    @classmethod
    def of_hits(cls, hits: list[Hit]) -> RankedUnits:
        """A ranking of hits already built."""
        return cls([hit.score for hit in hits], lambda positions: [hits[p].id for p in positions],
                   lambda positions: [hits[p] for p in positions])


@runtime_checkable
class UnitRanker(Protocol):
    """A retriever that can rank without building every hit."""

    def rank_many(self, queries: Sequence[str], level: Level, top: int) -> list[RankedUnits]:
        """The ``top`` best units at ``level`` for each query, hits built on demand."""
        ...


def rank_many(retriever: Retriever, queries: Sequence[str], level: Level, top: int
              ) -> list[RankedUnits]:
    """Each query's ranking by ``retriever``: hits built on demand where it can rank without
    them (every built-in method), else built at once (a method registered as a plain
    factory)."""
    if isinstance(retriever, UnitRanker):
        return retriever.rank_many(queries, level, top)
    return [RankedUnits.of_hits(hits) for hits in retriever.search_many(queries, level, top)]
