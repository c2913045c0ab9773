"""Evaluate cohort queries with DuckDB over an index's reports, sentences and findings tables.

The tables are loaded once into an in-memory DuckDB database as ``u`` (one row per sentence,
plus one per report without sentences) and ``f`` (one row per finding, with its report's type
and date), so each query is a handful of set operations over ids.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from clinsearch.search.cohort.sql import Compiler, Evidence, Query, Resolver
from clinsearch.search.cohort.syntax import UNITS, Node, Unit, parse

ResolverFor = Callable[[str], Resolver]  # the term resolver for one query text

COUNT_LEVELS: tuple[Unit, ...] = ("patient", "visit", "report")

_LOAD_UNITS = """
CREATE OR REPLACE TABLE u AS
SELECT s.id AS sentence_uid, r.id AS report_uid, r.patient_id || chr(31) || r.visit_id AS visit_uid,
       r.patient_id AS patient_uid, s.id AS sentence_id, r.id AS report_id, r.visit_id,
       r.patient_id, coalesce(s.section, '') AS section, coalesce(r.type, '') AS rtype,
       coalesce(r.date, '') AS rdate, s."index" AS sidx, s.text AS text, lower(s.text) AS ltext
FROM reports r LEFT JOIN sentences s ON s.report_id = r.id
"""
_LOAD_FINDINGS = """
CREATE OR REPLACE TABLE f AS
SELECT u.sentence_uid, u.report_uid, u.visit_uid, u.patient_uid, u.sentence_id, u.report_id,
       u.section, u.rtype, u.rdate, u.sidx, x.concept, x.polarity,
       string_split(x.pattern, '|')[4:] AS mods
FROM findings x JOIN u ON u.sentence_uid = x.sentence_id
"""
# The id columns shown for a unit of each level: its own id and those of the units above it.
ID_COLUMNS: dict[Unit, tuple[str, ...]] = {
    "patient": ("patient_id",),
    "visit": ("patient_id", "visit_id"),
    "report": ("patient_id", "visit_id", "report_id"),
    "sentence": ("patient_id", "visit_id", "report_id", "sentence_id"),
}


@dataclass(frozen=True, slots=True)
class Member:
    """A unit in the cohort with one evidence sentence (empty when only negations matched)."""

    ids: tuple[str, ...]  # the unit's ID_COLUMNS values
    report_id: str
    sentence_id: str
    term: str
    section: str
    sentence: str


class CohortEngine:
    """Parses, compiles and runs cohort queries against one loaded index generation."""

    def __init__(self, con: duckdb.DuckDBPyConnection, resolver_for: ResolverFor) -> None:
        self._con = con
        self._resolver_for = resolver_for

    @classmethod
    def from_parquet(
        cls, reports: Path, sentences: Path, findings: Path, resolver_for: ResolverFor
    ) -> CohortEngine:
        """Load the three Parquet tables of an index generation."""
        con = duckdb.connect()
        for name, path in (("reports", reports), ("sentences", sentences), ("findings", findings)):
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet(?)", [str(path)])
        return cls._loaded(con, resolver_for)

    @classmethod
    def from_arrow(cls, reports: object, sentences: object, findings: object,
                   resolver_for: ResolverFor) -> CohortEngine:
        """Load from in-memory Arrow tables with the index's column names (used by tests)."""
        con = duckdb.connect()
        for name, table in (("reports", reports), ("sentences", sentences), ("findings", findings)):
            con.register(name, table)
        return cls._loaded(con, resolver_for)

    @classmethod
    def _loaded(cls, con: duckdb.DuckDBPyConnection, resolver_for: ResolverFor) -> CohortEngine:
        con.execute(_LOAD_UNITS)
        con.execute(_LOAD_FINDINGS)
        return cls(con, resolver_for)

    def _compiled(self, query: str, level: Unit) -> tuple[Compiler, Node, Query]:
        if level not in UNITS:
            raise ValueError(f"level must be one of {UNITS}, not {level!r}")
        tree = parse(query)
        compiler = Compiler(self._resolver_for(query))
        return compiler, tree, compiler.ids(tree, level)

    def ids(self, query: str, level: Unit) -> list[tuple[str, ...]]:
        """The ``ID_COLUMNS`` of each ``level`` unit matching ``query``, sorted."""
        _, _, (sql, params) = self._compiled(query, level)
        cols = ", ".join(f"k.{c}" for c in ID_COLUMNS[level])
        rows = self._con.execute(
            f"SELECT {cols} FROM ({sql}) res JOIN ({_keys(level)}) k ON k.uid = res.id"
            f" ORDER BY {cols}",
            list(params),
        ).fetchall()
        return [tuple(r) for r in rows]

    def count(self, query: str, level: Unit) -> int:
        """How many ``level`` units match ``query``, exactly."""
        _, _, (sql, params) = self._compiled(query, level)
        return self._con.execute(f"SELECT count(*) FROM ({sql})", list(params)).fetchone()[0]

    def counts(self, query: str) -> dict[Unit, int]:
        """Exact counts of matching patients, visits and reports (the query evaluated at each)."""
        return {level: self.count(query, level) for level in COUNT_LEVELS}

    def members(self, query: str, level: Unit) -> list[Member]:
        """Matching ``level`` units, each with its earliest evidence sentence, sorted by id."""
        compiler, tree, (sql, params) = self._compiled(query, level)
        sources = compiler.evidence(tree, level)
        ev_sql, ev_params = _evidence_rows(sources, level)
        cols = ", ".join(f"k.{c}" for c in ID_COLUMNS[level])
        full = (
            f"WITH res AS ({sql}), ev AS ({ev_sql}), best AS ("
            " SELECT * FROM ev WHERE id IN (SELECT id FROM res)"
            " QUALIFY row_number() OVER"
            " (PARTITION BY id ORDER BY rdate, report_id, sidx, term) = 1)"
            f" SELECT [{cols}], coalesce(best.report_id, ''), coalesce(best.sentence_id, ''),"
            " coalesce(best.term, ''), coalesce(u.section, ''), coalesce(u.text, '')"
            f" FROM res JOIN ({_keys(level)}) k ON k.uid = res.id"
            " LEFT JOIN best ON best.id = res.id"
            f" LEFT JOIN u ON u.sentence_uid = best.sentence_id ORDER BY {cols}"
        )
        rows = self._con.execute(full, [*params, *ev_params]).fetchall()
        return [Member(tuple(row[0]), *row[1:]) for row in rows]


def _keys(level: Unit) -> str:
    """SQL mapping each ``level`` unit id to its ID_COLUMNS."""
    return f"SELECT DISTINCT {level}_uid AS uid, {', '.join(ID_COLUMNS[level])} FROM u" \
        f" WHERE {level}_uid IS NOT NULL"


def _evidence_rows(sources: list[Evidence], level: Unit) -> Query:
    """One SELECT of candidate evidence rows (id, sentence, report, term, order keys)."""
    parts: list[str] = []
    params: list[object] = []
    for src in sources:
        sql = (
            f"SELECT {level}_uid AS id, sentence_id, report_id, ? AS term, rdate, sidx"
            f" FROM {src.table} WHERE sentence_id IS NOT NULL AND {src.where[0]}"
        )
        params += [src.label, *src.where[1]]
        for unit, (wsql, wparams) in src.within:
            sql += f" AND {unit}_uid IN ({wsql})"
            params += wparams
        parts.append(sql)
    if not parts:
        parts.append(
            "SELECT NULL::VARCHAR AS id, NULL::VARCHAR AS sentence_id, NULL::VARCHAR AS report_id,"
            " NULL::VARCHAR AS term, NULL::VARCHAR AS rdate, NULL::BIGINT AS sidx WHERE false"
        )
    return " UNION ALL ".join(parts), tuple(params)


def write_members_csv(members: list[Member], level: Unit, path: Path) -> None:
    """Write the cohort to ``path`` as CSV atomically (a temporary file renamed into place)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(
                [*ID_COLUMNS[level], "evidence_report_id", "evidence_sentence_id", "matched",
                 "section", "evidence_sentence"]
            )
            for m in members:
                writer.writerow([*m.ids, m.report_id, m.sentence_id, m.term, m.section, m.sentence])
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
