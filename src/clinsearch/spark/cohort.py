"""Cohort queries as Spark SQL, over findings tables too big for one machine, where they live.

The query is parsed and its terms resolved against the lexicon on the driver; the syntax tree is
compiled (``search.cohort.sql``) to one Spark SQL statement with every value a parameter, so the
counts and member ids equal those of the DuckDB engine over the same tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clinsearch.errors import ClinsearchError
from clinsearch.search.cohort.engine import COUNT_LEVELS
from clinsearch.search.cohort.sql import SOURCES, VIEWS, SQLCompiler, cohort_views
from clinsearch.search.cohort.syntax import Filter, Node, TextMatch, parse
from clinsearch.search.concept.ranking import DEFAULT_POLARITY, PolarityOptions
from clinsearch.spark.tables import read_rows
from clinsearch.sql_dialect import SPARK
from clinsearch.units import Level, check_level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore


@dataclass(frozen=True, slots=True)
class CohortAnswer:
    """Exact counts of matching patients, visits and reports, and the members of ``level``."""

    query: str
    counts: dict[Level, int]
    level: Level
    members: list[tuple[str, ...]]  # ID_COLUMNS[level] of each member, sorted


def cohort(
    spark: Any,
    findings_table: Any,
    query: str,
    *,
    reports_table: Any = None,
    sentences_table: Any = None,
    level: Level = "patient",
    members: bool = True,
    lexicon: str | Path | None = None,
    term_model: str | Path | None = None,
    options: PolarityOptions = DEFAULT_POLARITY,
) -> CohortAnswer:
    """Run cohort ``query`` on Spark over a findings table (a table name or a DataFrame with
    the index's findings columns).

    With ``reports_table`` and ``sentences_table`` (the index's tables) every report counts, as
    in the DuckDB engine; with the findings table alone only units with a finding exist, so
    ``NOT`` is relative to them and type, date and text filters are refused.
    """
    from clinsearch.search.concept.tools import checked_term_model, concept_tools

    tools = concept_tools(str(lexicon) if lexicon else None,
                          checked_term_model(term_model) if term_model else None)
    engine = SparkCohort(spark, tools, findings_table, reports_table=reports_table,
                         sentences_table=sentences_table, options=options)
    return engine.answer(query, level, members)


class SparkCohort:
    """Cohort queries on Spark over one set of tables, registered and cached once.

    Use it as a context manager (or ``close`` it) when it reads an index's files: Spark reads
    them lazily, at each query, so the index generation stays leased until then.
    """

    def __init__(self, spark: Any, tools: Any, findings_table: Any, *, reports_table: Any = None,
                 sentences_table: Any = None, options: PolarityOptions = DEFAULT_POLARITY,
                 index: IndexStore | None = None) -> None:
        """``tools``: the concept tools (lexicon, hierarchy, parser) that resolve terms;
        ``index``: the open index whose files the tables are (kept open until ``close``)."""
        if (reports_table is None) != (sentences_table is None):
            raise ClinsearchError("give both the reports and the sentences table, or neither")
        self.spark, self.tools, self.options, self._index = spark, tools, options, index
        self.full = reports_table is not None
        tables = (reports_table, sentences_table, findings_table) if self.full else (
            findings_table,)
        for name, table in zip(SOURCES if self.full else SOURCES[2:], tables, strict=True):
            frame = spark.table(table) if isinstance(table, str) else table
            frame.createOrReplaceTempView(name)
        for view in VIEWS:
            if spark.catalog.tableExists(view) and spark.catalog.isCached(view):
                spark.catalog.uncacheTable(view)
        for statement in cohort_views(SPARK, with_reports=self.full):
            spark.sql(statement)
        for view in VIEWS[: 3 if self.full else 2]:
            spark.catalog.cacheTable(view)  # each query reads them several times

    def close(self) -> None:
        """Let the index generation go (writers may then remove it)."""
        if self._index is not None:
            self._index.close()
            self._index = None

    def __enter__(self) -> SparkCohort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def counts_many(self, queries: list[str]) -> list[dict[Level, int]]:
        """The counts of each query (as ``answer`` gives them), computed by one Spark SQL
        statement: one job for the batch, not one per query."""
        params: dict[str, Any] = {}
        parts = []
        for number, query in enumerate(queries):
            tree = self._checked(query)
            counted = SQLCompiler(SPARK, self._resolver(query), params).counts(tree, COUNT_LEVELS)
            parts.append(f"SELECT {number} AS q, level, n FROM ({counted.sql}) AS q{number}")
        out: list[dict[Level, int]] = [{} for _ in queries]
        for row in self.spark.sql(" UNION ALL ".join(parts), args=params).collect():
            out[row["q"]][row["level"]] = int(row["n"])
        return [{unit: counts[unit] for unit in COUNT_LEVELS} for counts in out]

    def _checked(self, query: str) -> Node:
        """The syntax tree of ``query``, refused when it needs tables this cohort lacks."""
        tree = parse(query)
        if not self.full and _needs_reports(tree):
            raise ClinsearchError("type:, date: and text: filters need the reports and sentences"
                                  " tables (reports_table=, sentences_table=)")
        return tree

    def _resolver(self, query: str) -> Any:
        """The term resolver of ``query``."""
        from clinsearch.search.cohort.resolve import term_resolver

        return term_resolver(query, self.tools.parser, self.tools.hierarchy, self.options)

    def answer(self, query: str, level: Level = "patient", members: bool = True) -> CohortAnswer:
        """Counts at every level and, with ``members``, the ids of the matching ``level`` units."""
        check_level(level)
        tree = self._checked(query)
        resolve = self._resolver(query)
        counted = SQLCompiler(SPARK, resolve).counts(tree, COUNT_LEVELS)
        counts = {r["level"]: int(r["n"])
                  for r in self.spark.sql(counted.sql, args=counted.params).collect()}
        found: list[tuple[str, ...]] = []
        if members:
            listed = SQLCompiler(SPARK, resolve).units(tree, level)
            found = [tuple(r) for r in self.spark.sql(listed.sql, args=listed.params).collect()]
        return CohortAnswer(query, {unit: counts[unit] for unit in COUNT_LEVELS}, level, found)


def index_cohort(spark: Any, index_path: str | Path, *, term_model: str | Path | None = None,
                 options: PolarityOptions = DEFAULT_POLARITY) -> SparkCohort:
    """A ``SparkCohort`` over an index directory's live generation (its three tables), holding
    that generation until it is closed."""
    from clinsearch.index import IndexStore
    from clinsearch.search.cohort import cohort_tables
    from clinsearch.search.concept.tools import index_concept_tools

    index = IndexStore.open(index_path)
    try:
        reports, sentences, findings = cohort_tables(index)
        read = partial(read_rows, spark)
        return SparkCohort(
            spark, index_concept_tools(index, term_model), read(findings),
            reports_table=read(reports), sentences_table=read(sentences), options=options,
            index=index,
        )
    except BaseException:
        index.close()
        raise


def _needs_reports(node: Node) -> bool:
    """Whether the tree holds a type, date or text filter."""
    if isinstance(node, TextMatch):
        return True
    if isinstance(node, Filter):
        return node.key != "section"
    children = getattr(node, "operands", None) or [
        getattr(node, name) for name in ("operand", "expr") if hasattr(node, name)]
    return any(_needs_reports(child) for child in children)
