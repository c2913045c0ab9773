"""The cohort SQL compiler (DuckDB dialect) gives the engine's ids on every test query."""

from __future__ import annotations

import duckdb
import pytest

from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.engine import CohortEngine
from clinsearch.search.cohort.sql import SOURCES, SQLCompiler, cohort_views
from clinsearch.search.cohort.syntax import fold, parse
from clinsearch.sql_dialect import DUCKDB, SPARK
from clinsearch.units import LEVELS

from .corpus_gen import Corpus, generate
from .test_cohort_engine import QUERIES, resolve


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate(seed=11, patients=60)


@pytest.fixture(scope="module")
def engine(corpus: Corpus) -> CohortEngine:
    return CohortEngine(CohortArrays.from_arrow(*corpus.arrow()), lambda _query: resolve)


@pytest.fixture(scope="module")
def con(corpus: Corpus) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name, table in zip(SOURCES, corpus.arrow(), strict=True):
        con.register(name, table)
    for statement in cohort_views(DUCKDB):
        con.execute(statement)
    return con


@pytest.mark.parametrize("query", QUERIES)
def test_compiled_sql_matches_the_engine(query: str, engine: CohortEngine,
                                         con: duckdb.DuckDBPyConnection) -> None:
    tree = parse(query)
    for level in LEVELS:
        compiled = SQLCompiler(DUCKDB, resolve).units(tree, level)
        got = [tuple(row) for row in con.execute(compiled.sql, compiled.params).fetchall()]
        assert got == engine.ids(query, level), (query, level)


def test_values_are_parameters_never_sql_text() -> None:
    query = """text:"it's'; DROP TABLE x; --" type:"o'brien" section:a\\b """
    for dialect in (DUCKDB, SPARK):
        compiled = SQLCompiler(dialect).units(parse(query), "report")
        assert "DROP" not in compiled.sql and "brien" not in compiled.sql
        assert "it's'; drop table x; --" in compiled.params.values()
        assert fold("o'brien") in compiled.params.values()  # type values are folded
