"""Compile a cohort syntax tree into DuckDB SQL over the ``f`` (findings) and ``u`` (units) tables.

Both tables carry a unique id column per unit, ``sentence_uid``, ``report_uid``, ``visit_uid``
(patient and visit id together: visit ids need only be unique per patient) and ``patient_uid``.

Every expression evaluates to the set of ids of one unit (sentence, report, visit or patient):
AND intersects, OR unions, NOT subtracts from every unit of the (restricted) corpus, and a
scoped group is evaluated at its own unit and then lifted to the enclosing one through ``u``.
Filters restrict every finding of the AND group they stand in, and of the groups nested in it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clinsearch.search.cohort.syntax import (
    And,
    Filter,
    Group,
    Node,
    Not,
    Or,
    Term,
    TextMatch,
    Unit,
)

Query = tuple[str, tuple[object, ...]]  # SQL text with "?" placeholders, and its parameters


@dataclass(frozen=True, slots=True)
class FindingSpec:
    """The findings rows a term matches: any concept, any polarity, all the modifiers."""

    label: str  # shown as the matched term in exports, e.g. "pneumonia (present)"
    concepts: tuple[str, ...]  # the concept and its descendants
    polarities: tuple[str, ...]
    modifiers: tuple[str, ...] = ()  # modifier values the finding must carry


Resolver = Callable[[Term], FindingSpec]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Rows that may serve as evidence: a positive term's matches, inside its scoped groups."""

    label: str
    table: str  # "f" (findings) or "u" (sentences, for text matches)
    where: Query  # condition over ``table``
    within: tuple[tuple[Unit, Query], ...]  # (unit, id set) the evidence row must fall in


def _restrict(filters: tuple[Filter, ...]) -> Query:
    """A WHERE fragment (starting with AND, or empty) for report type, date and section filters."""
    sql: list[str] = []
    params: list[object] = []
    for flt in filters:
        if flt.key == "type":
            sql.append("lower(rtype) = ?")
            params.append(flt.value)
        elif flt.key == "section":
            sql.append("lower(section) = ?")
            params.append(flt.value)
        else:
            sql.append("rdate <> ''")
            if flt.low:
                sql.append("rdate >= ?")
                params.append(flt.low)
            if flt.high:
                sql.append("rdate <= ?")
                params.append(flt.high)
    return "".join(f" AND {s}" for s in sql), tuple(params)


def _spec_where(spec: FindingSpec) -> Query:
    """The condition over ``f`` selecting rows that match ``spec``."""
    marks = ", ".join("?" * len(spec.concepts))
    pols = ", ".join("?" * len(spec.polarities))
    sql = f"concept IN ({marks}) AND polarity IN ({pols})"
    params: tuple[object, ...] = (*spec.concepts, *spec.polarities)
    if spec.modifiers:
        sql += " AND list_has_all(mods, ?)"
        params += (list(spec.modifiers),)
    return sql, params


class Compiler:
    """Turns a syntax tree into SQL id sets; terms are resolved once each through ``resolve``."""

    def __init__(self, resolve: Resolver) -> None:
        self._resolve = resolve
        self._specs: dict[Term, FindingSpec] = {}

    def spec(self, term: Term) -> FindingSpec:
        """The resolved finding spec of ``term`` (memoised, so errors surface once)."""
        if term not in self._specs:
            self._specs[term] = self._resolve(term)
        return self._specs[term]

    def ids(self, node: Node, unit: Unit, filters: tuple[Filter, ...] = ()) -> Query:
        """SQL selecting the distinct ``id`` of every ``unit`` that satisfies ``node``."""
        col = f"{unit}_uid"
        rsql, rparams = _restrict(filters)
        if isinstance(node, Term):
            where, wparams = _spec_where(self.spec(node))
            return f"SELECT DISTINCT {col} AS id FROM f WHERE {where}{rsql}", wparams + rparams
        if isinstance(node, TextMatch):
            sql = f"SELECT DISTINCT {col} AS id FROM u WHERE contains(ltext, ?){rsql}"
            return sql, (node.phrase.lower(), *rparams)
        if isinstance(node, Filter):
            return self.universe(unit, (*filters, node))
        if isinstance(node, Not):
            inner, iparams = self.ids(node.operand, unit, filters)
            outer, oparams = self.universe(unit, filters)
            return f"({outer}) EXCEPT ({inner})", oparams + iparams
        if isinstance(node, Or):
            parts = [self.ids(op, unit, filters) for op in node.operands]
            return _setop("UNION", parts)
        if isinstance(node, And):
            return self._and(node, unit, filters)
        assert isinstance(node, Group)
        if node.scope is None or node.scope == unit:
            return self.ids(node.expr, unit, filters)
        inner, iparams = self.ids(node.expr, node.scope, filters)
        return self.lift((inner, iparams), node.scope, unit, filters)

    def _and(self, node: And, unit: Unit, filters: tuple[Filter, ...]) -> Query:
        """Intersect the positive operands, subtract the negated ones, under the group's filters."""
        inner_filters = (*filters, *(op for op in node.operands if isinstance(op, Filter)))
        rest = [op for op in node.operands if not isinstance(op, Filter)]
        positive = [self.ids(op, unit, inner_filters) for op in rest if not isinstance(op, Not)]
        negative = [self.ids(op.operand, unit, inner_filters) for op in rest if isinstance(op, Not)]
        if not positive:
            positive = [self.universe(unit, inner_filters)]
        sql, params = _setop("INTERSECT", positive)
        for nsql, nparams in negative:
            sql, params = f"({sql}) EXCEPT ({nsql})", params + nparams
        return sql, params

    def universe(self, unit: Unit, filters: tuple[Filter, ...]) -> Query:
        """Every ``unit`` with at least one row of the corpus satisfying ``filters``."""
        rsql, rparams = _restrict(filters)
        col = f"{unit}_uid"
        return f"SELECT DISTINCT {col} AS id FROM u WHERE {col} IS NOT NULL{rsql}", rparams

    def lift(self, inner: Query, source: Unit, target: Unit, filters: tuple[Filter, ...]) -> Query:
        """Ids of ``target`` units that contain (or lie within) a ``source`` unit of ``inner``."""
        rsql, rparams = _restrict(filters)
        sql = (
            f"SELECT DISTINCT {target}_uid AS id FROM u WHERE {target}_uid IS NOT NULL"
            f" AND {source}_uid IN ({inner[0]}){rsql}"
        )
        return sql, inner[1] + rparams

    def evidence(
        self,
        node: Node,
        unit: Unit,
        filters: tuple[Filter, ...] = (),
        within: tuple[tuple[Unit, Query], ...] = (),
        negated: bool = False,
    ) -> list[Evidence]:
        """The positive terms of ``node`` (under an even number of NOTs) as evidence sources."""
        if isinstance(node, Term):
            if negated:
                return []
            where, wparams = _spec_where(self.spec(node))
            rsql, rparams = _restrict(filters)
            label = self.spec(node).label
            return [Evidence(label, "f", (where + rsql, wparams + rparams), within)]
        if isinstance(node, TextMatch):
            if negated:
                return []
            rsql, rparams = _restrict(filters)
            where = ("contains(ltext, ?)" + rsql, (node.phrase.lower(), *rparams))
            return [Evidence(f'text "{node.phrase}"', "u", where, within)]
        if isinstance(node, Not):
            return self.evidence(node.operand, unit, filters, within, not negated)
        if isinstance(node, Or | And):
            if isinstance(node, And):
                filters = (*filters, *(op for op in node.operands if isinstance(op, Filter)))
            out: list[Evidence] = []
            for op in node.operands:
                out += self.evidence(op, unit, filters, within, negated)
            return out
        if isinstance(node, Group):
            scope = node.scope or unit
            if node.scope is not None and not negated:
                within = (*within, (scope, self.ids(node.expr, scope, filters)))
            return self.evidence(node.expr, scope, filters, within, negated)
        return []  # filters carry no evidence


def _setop(op: str, parts: list[Query]) -> Query:
    """Combine id-set queries with a SQL set operator."""
    if len(parts) == 1:
        return parts[0]
    sql = f" {op} ".join(f"SELECT id FROM ({p[0]})" for p in parts)
    params: tuple[object, ...] = ()
    for p in parts:
        params += p[1]
    return sql, params
