"""The retriever protocol every search method implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

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
