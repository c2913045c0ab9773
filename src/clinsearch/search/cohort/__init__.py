"""Boolean cohort queries over an index: exact counts and member lists with evidence."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from copy import copy
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from clinsearch.annotate.finding import section_flags
from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.breakdown import Breakdown, cohort_breakdown, polarity_mix
from clinsearch.search.cohort.engine import (
    COUNT_LEVELS,
    EVERYWHERE,
    ID_COLUMNS,
    CohortEngine,
    Member,
    Scope,
    export_header,
    members_csv_rows,
    write_members_csv,
)
from clinsearch.search.cohort.syntax import (
    And,
    BundleTerm,
    CohortSyntaxError,
    Filter,
    Group,
    Node,
    Not,
    Or,
    Term,
    fold,
    parse,
)
from clinsearch.search.concept.ranking import DEFAULT_POLARITY, PolarityOptions
from clinsearch.search.phrase import phrase_sentences
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.duck import ParquetRows
    from clinsearch.index import IndexStore

N = TypeVar("N", bound=Node)

__all__ = ["COUNT_LEVELS", "EVERYWHERE", "ID_COLUMNS", "Breakdown", "BundleTerm", "Cohort",
           "CohortSyntaxError", "Member", "Scope", "export_header", "members_csv_rows", "parse",
           "write_members_csv"]


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
        from clinsearch.search.concept.tools import (
            index_concept_tools,
            index_section_contexts,
            index_tier_order,
        )

        index = index_path if isinstance(index_path, IndexStore) else IndexStore.open(index_path)
        cohort_tables(index)  # an index without findings is an error
        self.tools = index_concept_tools(index, term_model)
        self.tier_order = index_tier_order(index)
        self._sections = index_section_contexts(index)
        self.options = options
        self.engine = self._engine(CohortArrays.from_index(index))

    def _engine(self, arrays: CohortArrays) -> CohortEngine:
        """The engine reading ``arrays`` with this cohort's tools and options."""
        from clinsearch.search.cohort.resolve import term_resolver

        tools, options, sections = self.tools, self.options, self._sections
        return CohortEngine(
            arrays,
            lambda query: term_resolver(query, tools.parser, tools.hierarchy, options,
                                        as_text=True),
            partial(phrase_sentences, tools.parser.annotator, options, arrays.text_sentences,
                    lambda rows: arrays.values.sentences("text", rows),
                    lambda rows: section_flags(sections, arrays.sentence_sections(rows))),
        )

    def with_options(self, options: PolarityOptions) -> Cohort:
        """The same index's cohorts counted with other ``options`` (wider tiers: hedged,
        indication, ...); the loaded arrays and tools are shared, nothing is read again."""
        if options == self.options:
            return self
        other = copy(self)
        other.options = options
        other.engine = other._engine(self.engine.arrays)
        return other

    def counts(self, query: str, scope: Scope = EVERYWHERE) -> dict[Level, int]:
        """Exact numbers of matching patients, visits and reports."""
        return self.engine.counts(query, scope)

    def sets(self, query: str, scope: Scope = EVERYWHERE) -> dict[Level, np.ndarray]:
        """The matching patients, visits and reports, as masks over their ids."""
        return self.engine.sets(query, scope)

    def members(self, query: str, level: Level, scope: Scope = EVERYWHERE) -> list[Member]:
        """Matching units of ``level`` with an evidence sentence each."""
        return self.engine.members(query, level, scope)

    def member_page(self, query: str, level: Level, scope: Scope, offset: int, limit: int,
                    order: Callable[[tuple[str, ...]], Any]) -> tuple[int, list[Member]]:
        """How many units of ``level`` match, and one page of them in ``order`` of their ids
        with an evidence sentence each (``engine.member_page``)."""
        return self.engine.member_page(query, level, scope, offset, limit, order)

    def breakdown(self, query: str, scope: Scope = EVERYWHERE) -> Breakdown:
        """The matching reports by year, month, report type and evidence section."""
        return cohort_breakdown(self.engine, query, scope)

    def polarity_mix(self, term: str, scope: Scope = EVERYWHERE) -> dict[str, int]:
        """Reports stating the finding ``term`` names as present, absent, uncertain or
        historical (the term read as a cohort term: one finding of the lexicon)."""
        from clinsearch.search.cohort.resolve import term_resolver

        resolve = term_resolver(term, self.tools.parser, self.tools.hierarchy, self.options)
        return polarity_mix(self.engine, resolve(Term(term, 0, len(term))), scope)

    def bundle_terms(self, terms: Sequence[str]) -> tuple[BundleTerm, ...]:
        """Each term read as a finding when the lexicon names exactly one finding for it (its
        polarity as written), else as a text phrase."""
        parsed = self.tools.parser.parse_many(list(terms), map_unknown=False)
        return tuple(BundleTerm(text, not p.mappings and sum(map(len, p.groups)) == 1)
                     for text, p in zip(terms, parsed, strict=True))

    def scope(self, bundles: Mapping[str, Sequence[str]] | None = None,
              within: np.ndarray | None = None, min_filter_reports: int = 0) -> Scope:
        """A query scope: ``bundles`` (name -> terms), the reports to restrict to, and how
        many reports each filter expression must select (``cohort.width``)."""
        read = {fold(name): self.bundle_terms(terms) for name, terms in (bundles or {}).items()}
        return Scope(read, within, min_filter_reports)

    def id_mask(self, kind: Literal["patient", "report"], ids: Sequence[str]
                ) -> tuple[np.ndarray, list[str]]:
        """The reports of the patients (or the reports) ``ids`` name, as a mask over report
        ids, and the ids not in the index."""
        return self.engine.arrays.id_mask("patient_id" if kind == "patient" else "id", ids)

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
