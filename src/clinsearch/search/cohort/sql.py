"""Compile a cohort syntax tree to SQL, for DuckDB or Spark SQL, with every value a parameter.

The compiled query runs over three views (``cohort_views`` defines them, in either dialect, from
the index's reports, sentences and findings tables registered as ``SOURCES``):

- ``c_rows``: one row per sentence, plus one per report without sentences (``sentence_id``
  NULL), with the ids of the units holding it and the filter columns (lower-cased type and
  section, ISO date or '');
- ``c_findings``: ``sentence_id, concept, polarity, mods`` (the pattern's modifier values);
- ``c_sentences``: ``sentence_id, ltext`` (lower-cased text).

A unit is identified by its ``ID_COLUMNS`` (patient; patient, visit; ...; sentence id), so the
query returns the members' ids directly. The semantics are those of ``evaluator.Evaluator``: AND
intersects, OR unions, NOT subtracts from every unit (under the filters in force), a scoped group
is evaluated at its unit and lifted through the rows, and filters restrict their AND group.
User values never enter the SQL text: they are bound as named parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clinsearch.index.finding_match import FindingSpec
from clinsearch.search.cohort.syntax import And, Filter, Group, Node, Not, Or, Term, TextMatch
from clinsearch.sql_dialect import Dialect
from clinsearch.units import Level

# The id columns of a unit of each level: its own id and those of the units above it.
ID_COLUMNS: dict[Level, tuple[str, ...]] = {
    "patient": ("patient_id",),
    "visit": ("patient_id", "visit_id"),
    "report": ("patient_id", "visit_id", "report_id"),
    "sentence": ("patient_id", "visit_id", "report_id", "sentence_id"),
}


SOURCES = ("cs_reports", "cs_sentences", "cs_findings")  # names the caller registers tables as
VIEWS = ("c_findings", "c_rows", "c_sentences")  # the views ``cohort_views`` defines


def cohort_views(dialect: Dialect, with_reports: bool = True) -> list[str]:
    """``CREATE VIEW`` statements for the compiled queries, over the index's reports, sentences
    and findings tables registered under the ``SOURCES`` names. Without the reports and sentences
    tables the rows come from the findings table: only units with a finding exist, and type,
    date and text filters cannot be used."""
    findings = ("CREATE OR REPLACE TEMPORARY VIEW c_findings AS SELECT sentence_id, concept,"
                f" polarity, {dialect.mods.format('pattern')} AS mods, context AS ctx"
                " FROM cs_findings")
    if not with_reports:
        section = dialect.fold.format("coalesce(section, '')")
        rows = ("CREATE OR REPLACE TEMPORARY VIEW c_rows AS SELECT DISTINCT sentence_id,"
                f" report_id, visit_id, patient_id, {section} AS section,"
                " '' AS rtype, '' AS rdate FROM cs_findings")
        return [rows, findings]
    section = dialect.fold.format("coalesce(s.section, '')")
    rtype = dialect.fold.format("coalesce(r.type, '')")
    rows = ("CREATE OR REPLACE TEMPORARY VIEW c_rows AS SELECT s.id AS sentence_id,"
            f" r.id AS report_id, r.visit_id, r.patient_id, {section} AS section,"
            f" {rtype} AS rtype, coalesce(r.date, '') AS rdate"
            " FROM cs_reports r LEFT JOIN cs_sentences s ON s.report_id = r.id")
    sentences = ("CREATE OR REPLACE TEMPORARY VIEW c_sentences AS SELECT id AS sentence_id,"
                 " lower(text) AS ltext FROM cs_sentences")
    return [rows, findings, sentences]


@dataclass
class Compiled:
    """SQL text and its named parameters."""

    sql: str
    params: dict[str, Any] = field(default_factory=dict)


Resolver = Callable[[Term], FindingSpec]


class SQLCompiler:
    """Compiles one query's tree in one dialect; values are collected as parameters."""

    def __init__(self, dialect: Dialect, resolve: Resolver | None = None,
                 params: dict[str, Any] | None = None) -> None:
        """``params``: a dictionary to collect the parameters in (shared by several queries
        compiled into one statement)."""
        self.dialect = dialect
        self._resolve = resolve
        self.params: dict[str, Any] = {} if params is None else params

    def units(self, tree: Node, unit: Level) -> Compiled:
        """The distinct ``ID_COLUMNS[unit]`` of the units matching ``tree``, sorted."""
        cols = ", ".join(ID_COLUMNS[unit])
        return Compiled(f"SELECT {cols} FROM ({self._units(tree, unit, ())}) AS m"
                        f" ORDER BY {cols}", self.params)

    def counts(self, tree: Node, levels: Sequence[Level]) -> Compiled:
        """Rows (level, n): the number of matching units at each of ``levels``."""
        parts = " UNION ALL ".join(
            f"SELECT {self.bind(level)} AS level, count(*) AS n"
            f" FROM ({self._units(tree, level, ())}) AS c{i}" for i, level in enumerate(levels))
        return Compiled(parts, self.params)

    def bind(self, value: Any) -> str:
        """A placeholder for ``value``."""
        name = f"p{len(self.params)}"
        self.params[name] = value
        return self.dialect.param(name)

    def spec_condition(self, spec: FindingSpec, table: str, key: str) -> str:
        """The condition over ``table`` selecting the findings rows that match ``spec``."""
        return spec.condition(self.dialect, self.bind, table, key)

    def _filters(self, filters: tuple[Filter, ...]) -> str:
        out = []
        for flt in filters:
            if flt.key == "context":
                continue  # restricts the findings of terms, not rows (``_units``)
            if flt.key == "type":
                out.append(f"rtype = {self.bind(flt.value)}")
            elif flt.key == "section":
                out.append(f"section = {self.bind(flt.value)}")
            else:
                out.append("rdate <> ''")
                if flt.low:
                    out.append(f"rdate >= {self.bind(flt.low)}")
                if flt.high:
                    out.append(f"rdate <= {self.bind(flt.high)}")
        return " AND ".join(out) or "TRUE"

    def _select(self, unit: Level, where: str, filters: tuple[Filter, ...], rows: str = "c_rows",
                prefix: str = "") -> str:
        cols = ", ".join(prefix + c for c in ID_COLUMNS[unit])
        return (f"SELECT DISTINCT {cols} FROM {rows} WHERE {prefix}{ID_COLUMNS[unit][-1]}"
                f" IS NOT NULL AND {where} AND {self._filters(filters)}")

    def _units(self, node: Node, unit: Level, filters: tuple[Filter, ...]) -> str:
        if isinstance(node, Term):
            assert self._resolve is not None, "a query with terms needs a resolver"
            context = tuple(sorted({f.value for f in filters if f.key == "context"}))
            spec = self._resolve(node).narrowed(context)
            found = (f"SELECT sentence_id FROM c_findings WHERE "
                     f"{self.spec_condition(spec, 'c_findings', 'sentence_id')}")
            return self._select(unit, f"sentence_id IN ({found})", filters)
        if isinstance(node, TextMatch):
            found = ("SELECT sentence_id FROM c_sentences WHERE "
                     f"instr(ltext, {self.bind(node.phrase.lower())}) > 0")
            return self._select(unit, f"sentence_id IN ({found})", filters)
        if isinstance(node, Filter):
            return self._select(unit, "TRUE", (*filters, node))
        if isinstance(node, Not):
            return _setop("EXCEPT", [self._select(unit, "TRUE", filters),
                                     self._units(node.operand, unit, filters)])
        if isinstance(node, Or):
            return _setop("UNION", [self._units(op, unit, filters) for op in node.operands])
        if isinstance(node, And):
            inner = (*filters, *(op for op in node.operands if isinstance(op, Filter)))
            return _setop("INTERSECT", [self._select(unit, "TRUE", inner)] + [
                self._units(op, unit, inner) for op in node.operands
                if not isinstance(op, Filter)])
        assert isinstance(node, Group)
        if node.scope is None or node.scope == unit:
            return self._units(node.expr, unit, filters)
        scoped = self._units(node.expr, node.scope, filters)
        on = " AND ".join(f"r.{c} = g.{c}" for c in ID_COLUMNS[node.scope])
        return self._select(unit, "TRUE", filters, f"c_rows r JOIN ({scoped}) AS g ON {on}",
                            prefix="r.")


def _setop(op: str, queries: list[str]) -> str:
    """Queries combined by a set operation (each wrapped, so any may itself be compound)."""
    if len(queries) == 1:
        return queries[0]
    return f" {op} ".join(f"SELECT * FROM ({q}) AS s{i}" for i, q in enumerate(queries))
