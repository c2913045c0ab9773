"""Evaluate a cohort syntax tree to the set of matching units, as a boolean mask over unit ids.

AND intersects, OR unions, NOT subtracts from every unit of the (restricted) corpus, and a
scoped group is evaluated at its own unit and lifted to the enclosing one through the rows it
covers. Filters restrict every finding of the AND group they stand in, and of groups nested in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from clinsearch.index.finding_match import FindingSpec
from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.syntax import And, Filter, Group, Node, Not, Or, Term, TextMatch
from clinsearch.units import Level

# a term's finding spec, or (a term naming no lexicon finding, where allowed) its text match
Resolver = Callable[[Term], FindingSpec | TextMatch]
# a phrase as written -> the sentences mentioning it as asked; the context flags a context
# filter requires (empty: the default)
TextReader = Callable[[str, tuple[str, ...]], np.ndarray]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Candidate evidence sentences of a positive term, and the scoped groups they must lie in."""

    label: str
    sentences: np.ndarray  # sentence uids
    within: tuple[tuple[Level, np.ndarray], ...]  # (scope unit, mask over its ids)
    spec: FindingSpec | None = None  # the findings the term matched (None: a text match)


class Evaluator:
    """Evaluates the nodes of one query; term lookups and filter masks are memoised."""

    def __init__(self, arrays: CohortArrays, resolve: Resolver,
                 within: np.ndarray | None = None, read_text: TextReader | None = None
                 ) -> None:
        """``within``: a mask over reports the query is restricted to (None: every report);
        NOT then means "within these reports and not". ``read_text``: how text matches are
        found (default: sentences containing the phrase, whatever its polarity)."""
        self.arrays = arrays
        self._resolve = resolve
        self._within = None if within is None else within[arrays.row_report]
        self._read_text = read_text or (lambda phrase, _context: arrays.text_sentences(phrase))
        self._sentences: dict[tuple[Term | TextMatch, tuple[str, ...]], np.ndarray] = {}
        self._rows: dict[tuple[Filter, ...], np.ndarray] = {}
        self._labels: dict[Term | TextMatch, str] = {}
        self._specs: dict[Term | TextMatch, FindingSpec] = {}

    def rows(self, filters: tuple[Filter, ...]) -> np.ndarray:
        """The row mask of ``filters`` (memoised)."""
        if filters not in self._rows:
            within = self._within
            if not filters:
                assert within is not None  # rows are asked for when restricted only
                self._rows[filters] = within
            else:
                mask = self.arrays.row_mask(filters)
                self._rows[filters] = mask if within is None else mask & within
        return self._rows[filters]

    def restricted(self, filters: tuple[Filter, ...]) -> bool:
        """Whether rows are restricted (by filters or by the reports given)."""
        return bool(filters) or self._within is not None

    def matching(self, node: Term | TextMatch, filters: tuple[Filter, ...]) -> np.ndarray:
        """Uids of the sentences where a term (or text) matches, under ``filters``; context
        filters choose which findings count, the others which rows."""
        context = tuple(sorted({f.value for f in filters if f.key == "context"}))
        key = (node, context)
        if key not in self._sentences:
            target = node if isinstance(node, TextMatch) else self._resolve(node)
            if isinstance(target, TextMatch):
                self._sentences[key] = self._read_text(target.phrase, context)
                self._labels[node] = f'text "{target.phrase}"'
            else:
                self._specs[node] = target.narrowed(context)
                self._sentences[key] = self.arrays.finding_sentences(self._specs[node])
                self._labels[node] = target.label
        sentences = self._sentences[key]
        if self.restricted(filters):
            sentences = sentences[self.rows(filters)[sentences]]
        return sentences

    def units(self, node: Node, unit: Level, filters: tuple[Filter, ...] = ()) -> np.ndarray:
        """A boolean mask over the ids of ``unit``: the units that satisfy ``node``."""
        if isinstance(node, Term | TextMatch):
            mask = np.zeros(self.arrays.size[unit], dtype=bool)
            mask[self.arrays.sentence_units(unit, self.matching(node, filters))] = True
            return mask
        if isinstance(node, Filter):
            return self.universe(unit, (*filters, node))
        if isinstance(node, Not):
            return self.universe(unit, filters) & ~self.units(node.operand, unit, filters)
        if isinstance(node, Or):
            out = np.zeros(self.arrays.size[unit], dtype=bool)
            for op in node.operands:
                out |= self.units(op, unit, filters)
            return out
        if isinstance(node, And):
            inner = (*filters, *(op for op in node.operands if isinstance(op, Filter)))
            out = self.universe(unit, inner)
            for op in node.operands:
                if not isinstance(op, Filter):
                    out &= self.units(op, unit, inner)
            return out
        assert isinstance(node, Group)
        if node.scope is None or node.scope == unit:
            return self.units(node.expr, unit, filters)
        return self.lift(self.units(node.expr, node.scope, filters), node.scope, unit, filters)

    def universe(self, unit: Level, filters: tuple[Filter, ...]) -> np.ndarray:
        """Every ``unit`` with at least one row satisfying ``filters``."""
        return self.arrays.units(unit, self.rows(filters) if self.restricted(filters) else None)

    def lift(self, mask: np.ndarray, source: Level, target: Level,
             filters: tuple[Filter, ...]) -> np.ndarray:
        """``target`` units holding (or lying within) a ``source`` unit of ``mask``, via rows."""
        if not self.restricted(filters):
            return self.arrays.lift(mask, source, target)
        ids = self.arrays.row_unit[source]
        rows = self.rows(filters) & (ids >= 0) & mask[np.maximum(ids, 0)]
        return self.arrays.units(target, rows)

    def evidence(self, node: Node, unit: Level, filters: tuple[Filter, ...] = (),
                 within: tuple[tuple[Level, np.ndarray], ...] = (),
                 negated: bool = False) -> list[Evidence]:
        """The positive terms of ``node`` (under an even number of NOTs) as evidence sources."""
        if isinstance(node, Term | TextMatch):
            if negated:
                return []
            sentences = self.matching(node, filters)
            return [Evidence(self._labels[node], sentences, within, self._specs.get(node))]
        if isinstance(node, Not):
            return self.evidence(node.operand, unit, filters, within, not negated)
        if isinstance(node, Or | And):
            if isinstance(node, And):
                filters = (*filters, *(op for op in node.operands if isinstance(op, Filter)))
            return [e for op in node.operands
                    for e in self.evidence(op, unit, filters, within, negated)]
        if isinstance(node, Group):
            scope = node.scope or unit
            if node.scope is not None and not negated:
                within = (*within, (scope, self.units(node.expr, scope, filters)))
            return self.evidence(node.expr, scope, filters, within, negated)
        return []  # filters carry no evidence
