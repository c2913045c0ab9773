"""The retriever protocol every search method implements, and the ranking a fusion reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol, runtime_checkable

from clinsearch.hit import Hit
from clinsearch.units import Level


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
    fusion shows a few of the many units it reads."""

    scores: list[float]
    read_ids: Callable[[], list[str]]
    build: Callable[[Sequence[int]], list[Hit]]  # the hits at these positions, ranked 1 + p

    @cached_property
    def ids(self) -> list[str]:
        """The id of each unit, best first."""
        return self.read_ids()

    def hits(self, positions: Sequence[int] | None = None) -> list[Hit]:
        """The hits at ``positions`` (0-based; default: all), each keeping its rank."""
        return self.build(range(len(self.scores)) if positions is None else positions)

    @classmethod
    def of_hits(cls, hits: list[Hit]) -> RankedUnits:
        """A ranking of hits already built."""
        return cls([hit.score for hit in hits], lambda: [hit.id for hit in hits],
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
