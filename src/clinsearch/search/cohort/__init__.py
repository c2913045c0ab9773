"""Boolean cohort queries over an index: exact counts and member lists with evidence."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.engine import (
    COUNT_LEVELS,
    ID_COLUMNS,
    CohortEngine,
    Member,
    members_csv_rows,
    write_members_csv,
)
from clinsearch.search.cohort.syntax import (
    And,
    CohortSyntaxError,
    Filter,
    Group,
    Node,
    Not,
    Or,
    parse,
)
from clinsearch.search.concept.ranking import DEFAULT_POLARITY, PolarityOptions
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.duck import ParquetRows
    from clinsearch.index import IndexStore

__all__ = ["COUNT_LEVELS", "ID_COLUMNS", "Cohort", "CohortSyntaxError", "Member",
           "members_csv_rows", "parse", "write_members_csv"]


def cohort_tables(index: IndexStore) -> tuple[ParquetRows, ParquetRows, ParquetRows]:
    """The reports, sentences and findings tables of an index's live generation, deleted
    reports left out (an index without findings is an error)."""
    from clinsearch.errors import ClinsearchError

    if "findings" not in index.config.components:
        raise ClinsearchError(f"{index.path}: this index has no findings table; rebuild it"
                              " with the findings component")
    gen = index.generation
    return gen.rows("reports"), gen.rows("sentences"), gen.rows("findings")


class Cohort:
    """Cohort queries over one index directory (its live generation, loaded once)."""

    def __init__(self, index_path: str | Path | IndexStore,
                 options: PolarityOptions = DEFAULT_POLARITY,
                 term_model: str | Path | None = None) -> None:
        """``index_path``: an index directory or an open IndexStore (its generation is used);
        ``term_model``: the term encoder folder (default: the index's, else MiniLM)."""
        from clinsearch.index import IndexStore
        from clinsearch.search.cohort.resolve import term_resolver
        from clinsearch.search.concept.tools import index_concept_tools

        index = index_path if isinstance(index_path, IndexStore) else IndexStore.open(index_path)
        cohort_tables(index)  # an index without findings is an error
        self.tools = index_concept_tools(index, term_model)
        tools = self.tools
        self.engine = CohortEngine(
            CohortArrays.from_index(index),
            lambda query: term_resolver(query, tools.parser, tools.hierarchy, options),
        )

    def counts(self, query: str) -> dict[Level, int]:
        """Exact numbers of matching patients, visits and reports."""
        return self.engine.counts(query)

    def members(self, query: str, level: Level) -> list[Member]:
        """Matching units of ``level`` with an evidence sentence each."""
        return self.engine.members(query, level)

    def warnings(self, query: str) -> list[str]:
        """Why filters of ``query`` may silently select nothing (values that exist, undated
        reports), so that a zero count is never a surprise."""
        return self.engine.arrays.filter_warnings(filters_of(parse(query)))


def filters_of(node: Node) -> list[Filter]:
    """Every filter in a cohort syntax tree, in query order."""
    if isinstance(node, Filter):
        return [node]
    if isinstance(node, Not):
        return filters_of(node.operand)
    if isinstance(node, Group):
        return filters_of(node.expr)
    if isinstance(node, And | Or):
        return [f for op in node.operands for f in filters_of(op)]
    return []
