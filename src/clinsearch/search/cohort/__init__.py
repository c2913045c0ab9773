"""Boolean cohort queries over an index: exact counts and member lists with evidence."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

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
    Term,
    parse,
)
from clinsearch.search.concept.ranking import DEFAULT_POLARITY, PolarityOptions
from clinsearch.search.phrase import phrase_sentences
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.duck import ParquetRows
    from clinsearch.index import IndexStore

N = TypeVar("N", bound=Node)

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
        arrays = CohortArrays.from_index(index)
        self.engine = CohortEngine(
            arrays,
            lambda query: term_resolver(query, tools.parser, tools.hierarchy, options,
                                        as_text=True),
            partial(phrase_sentences, tools.parser.annotator, options, arrays.text_sentences,
                    lambda rows: arrays.values.sentences("text", rows)),
        )

    def counts(self, query: str) -> dict[Level, int]:
        """Exact numbers of matching patients, visits and reports."""
        return self.engine.counts(query)

    def members(self, query: str, level: Level) -> list[Member]:
        """Matching units of ``level`` with an evidence sentence each."""
        return self.engine.members(query, level)

    def warnings(self, query: str) -> list[str]:
        """Why filters of ``query`` may silently select nothing (values that exist, undated
        reports), and which terms name no lexicon finding and are matched as text, so that a
        zero count is never a surprise."""
        tree = parse(query)
        notes = self.engine.arrays.filter_warnings(nodes_of(tree, Filter))
        parser = self.tools.parser
        for term in nodes_of(tree, Term):
            parsed = parser.parse(term.text, map_unknown=False)
            if parsed.mappings or not parsed.groups:
                why = "; ".join(
                    f"'{m.phrase}' is not in the lexicon (nearest terms: "
                    + ", ".join(f'"{t.text}" ({sim:.2f})' for t, sim in m.nearest) + ")"
                    for m in parsed.mappings) or f"'{term.text}' names no lexicon finding"
                notes.append(f"{why}: '{term.text}' is matched as text, negation read by"
                             " ConText")
        return notes


def nodes_of(node: Node, kind: type[N]) -> list[N]:
    """Every node of ``kind`` (``Filter``, ``Term``) in a cohort syntax tree, in query order."""
    if isinstance(node, kind):
        return [node]
    if isinstance(node, Not):
        return nodes_of(node.operand, kind)
    if isinstance(node, Group):
        return nodes_of(node.expr, kind)
    if isinstance(node, And | Or):
        return [f for op in node.operands for f in nodes_of(op, kind)]
    return []
