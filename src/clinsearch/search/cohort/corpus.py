"""The corpus as integer-coded arrays for cohort evaluation, loaded once from an index generation.

Units get dense integer ids (sentence, report, visit = (patient, visit), patient). "Rows" are the
sentences (row i is sentence i) followed by the reports that have no sentence, so that every
report counts in the corpus even when empty. Finding lookups go to DuckDB over a findings table
clustered by concept; everything else is numpy over these arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from clinsearch.search.cohort.syntax import UNITS, Filter, Unit, fold

_LOAD = (
    """CREATE OR REPLACE TABLE r AS
    SELECT (row_number() OVER (ORDER BY id) - 1)::INTEGER AS report_uid,
           (dense_rank() OVER (ORDER BY patient_id, visit_id) - 1)::INTEGER AS visit_uid,
           (dense_rank() OVER (ORDER BY patient_id) - 1)::INTEGER AS patient_uid,
           id AS report_id, visit_id, patient_id,
           lower(coalesce(type, '')) AS rtype, coalesce(date, '') AS rdate
    FROM reports""",
    """CREATE OR REPLACE TABLE s AS
    SELECT (row_number() OVER (ORDER BY r.report_uid, x."index") - 1)::INTEGER AS sentence_uid,
           r.report_uid, x.id AS sentence_id, x."index" AS sidx,
           lower(coalesce(x.section, '')) AS section, x.text, lower(x.text) AS ltext
    FROM sentences x JOIN r ON r.report_id = x.report_id""",
    """CREATE OR REPLACE TABLE f AS
    SELECT s.sentence_uid, x.concept, x.polarity, string_split(x.pattern, '|')[4:] AS mods,
           coalesce(x.context, []) AS ctx
    FROM findings x JOIN s ON s.sentence_id = x.sentence_id
    ORDER BY x.concept, x.polarity, s.sentence_uid""",
)


@dataclass(frozen=True, slots=True)
class Reports:
    """Per-report arrays, indexed by report uid."""

    visit: np.ndarray
    patient: np.ndarray
    ids: np.ndarray  # object arrays of strings from here on
    visit_ids: np.ndarray
    patient_ids: np.ndarray
    type: np.ndarray  # lower-case
    date: np.ndarray


class CohortCorpus:
    """Unit hierarchy, filter columns and the findings table of one index generation."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        for sql in _LOAD:
            con.execute(sql)
        self.con = con
        r = con.sql("SELECT visit_uid, patient_uid, report_id, visit_id, patient_id, rtype, rdate"
                    " FROM r ORDER BY report_uid").fetchnumpy()
        self.reports = Reports(*(np.asarray(r[k]) for k in r))
        s = con.sql("SELECT report_uid, sidx, sentence_id, section, text FROM s"
                    " ORDER BY sentence_uid").fetchnumpy()
        self.sentence_report = np.asarray(s["report_uid"], dtype=np.int64)
        self.sentence_index = np.asarray(s["sidx"], dtype=np.int64)
        self.sentence_ids = np.asarray(s["sentence_id"])
        self.sentence_sections = np.asarray(s["section"])
        self.sentence_texts = np.asarray(s["text"])
        n_reports = len(self.reports.ids)
        empty = np.setdiff1d(np.arange(n_reports), self.sentence_report)
        self.row_report = np.concatenate([self.sentence_report, empty])
        # Filter columns as integer codes: comparing codes is ~10x faster than strings.
        folded = np.array([fold(v) for v in self.sentence_sections], dtype=object)
        self.sections, section_code = np.unique(folded.astype(str), return_inverse=True)
        self.row_section = np.concatenate([section_code, np.full(len(empty), -1)])
        folded = np.array([fold(v) for v in self.reports.type], dtype=object)
        self.types, self.report_type = np.unique(folded.astype(str), return_inverse=True)
        self.report_date = np.array([int(d.replace("-", "")) if d else 0
                                     for d in self.reports.date], dtype=np.int64)
        self.size: dict[Unit, int] = {
            "sentence": len(self.sentence_ids), "report": n_reports,
            "visit": int(self.reports.visit.max(initial=-1)) + 1,
            "patient": int(self.reports.patient.max(initial=-1)) + 1,
        }
        self.row_unit = {u: self._of_reports(u, self.row_report) for u in UNITS}
        self.everything = {u: np.ones(self.size[u], dtype=bool) for u in UNITS}
        self.row_unit["sentence"] = np.concatenate(
            [np.arange(len(self.sentence_ids)), np.full(len(empty), -1)])
        self.sentence_unit = {u: self._of_reports(u, self.sentence_report) for u in UNITS}
        self.sentence_unit["sentence"] = np.arange(len(self.sentence_ids))
        # A report of each report, visit and patient, to show the unit's ids.
        reports = np.arange(n_reports)
        self.first_report: dict[Unit, np.ndarray] = {}
        for unit in ("report", "visit", "patient"):
            first = np.zeros(self.size[unit], dtype=np.int64)
            first[self._of_reports(unit, reports)[::-1]] = reports[::-1]
            self.first_report[unit] = first
        # Evidence order: earliest report date first (undated last), then report, then sentence.
        dates = self.reports.date[self.sentence_report]
        self.sentence_rank = np.empty(len(dates), dtype=np.int64)
        order = np.lexsort((self.sentence_index, self.sentence_report, dates == "", dates))
        self.sentence_rank[order] = np.arange(len(order))

    @classmethod
    def from_parquet(cls, reports: Path, sentences: Path, findings: Path) -> CohortCorpus:
        """Load the three Parquet tables of an index generation."""
        con = duckdb.connect()
        for name, path in (("reports", reports), ("sentences", sentences), ("findings", findings)):
            quoted = str(path).replace("'", "''")  # views cannot take prepared parameters
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{quoted}')")
        return cls(con)

    @classmethod
    def from_arrow(cls, reports: object, sentences: object, findings: object) -> CohortCorpus:
        """Load from in-memory Arrow tables with the index's column names (used by tests)."""
        con = duckdb.connect()
        for name, table in (("reports", reports), ("sentences", sentences), ("findings", findings)):
            con.register(name, table)
        return cls(con)

    def _of_reports(self, unit: Unit, reports: np.ndarray) -> np.ndarray:
        """The ``unit`` id of each report in ``reports`` (report, visit or patient)."""
        if unit == "visit":
            return self.reports.visit[reports].astype(np.int64)
        if unit == "patient":
            return self.reports.patient[reports].astype(np.int64)
        return reports

    def row_mask(self, filters: tuple[Filter, ...]) -> np.ndarray:
        """Rows satisfying every filter (report type, report date range, sentence section)."""
        report_ok = np.ones(self.size["report"], dtype=bool)
        row_ok = np.ones(len(self.row_report), dtype=bool)
        for flt in filters:
            if flt.key == "context":
                continue  # restricts findings, not rows (``Evaluator.matching``)
            if flt.key == "type":
                report_ok &= self.report_type == _code(self.types, flt.value)
            elif flt.key == "section":
                row_ok &= self.row_section == _code(self.sections, flt.value)
            else:
                date = self.report_date
                report_ok &= date > 0
                if flt.low:
                    report_ok &= date >= int(flt.low.replace("-", ""))
                if flt.high:
                    report_ok &= date <= int(flt.high.replace("-", ""))
        return row_ok & report_ok[self.row_report]

    def filter_warnings(self, filters: list[Filter]) -> list[str]:
        """Why a filter would select nothing: a type or section no report has (with the
        values that exist), a date range where reports have no date."""
        out = []
        for flt in filters:
            if flt.key in ("type", "section"):
                raw = self.reports.type if flt.key == "type" else self.sentence_sections
                codes = self.types if flt.key == "type" else self.sections
                if _code(codes, flt.value) < 0:
                    values, counts = np.unique(np.asarray(raw, dtype=str), return_counts=True)
                    shown = ", ".join(f'"{v}" ({n})' for v, n in zip(values, counts, strict=True)
                                      if v) or "none recorded"
                    out.append(f"{flt.key}:{flt.value!r} matches nothing (compared without case,"
                               f" spaces or punctuation); {flt.key}s in this index: {shown}")
            elif flt.key == "date":
                undated = int((self.report_date == 0).sum())
                if undated:
                    out.append(f"date: {undated:,} of {len(self.report_date):,} reports have no"
                               " date and never match a date filter")
        return out

    def units(self, unit: Unit, rows: np.ndarray | None) -> np.ndarray:
        """A boolean mask over ``unit`` ids: those of the selected rows (None: of every row)."""
        if rows is None:
            return self.everything[unit].copy()
        mask = np.zeros(self.size[unit], dtype=bool)
        ids = self.row_unit[unit][rows]
        mask[ids[ids >= 0]] = True
        return mask

    def lift(self, mask: np.ndarray, source: Unit, target: Unit) -> np.ndarray:
        """``target`` units holding (or lying within) a ``source`` unit of ``mask``."""
        if UNITS.index(source) < UNITS.index(target):  # finer to coarser: project
            out = np.zeros(self.size[target], dtype=bool)
            out[self.parent(source, target)[np.flatnonzero(mask)]] = True
            return out
        return mask[self.parent(target, source)]  # coarser to finer: broadcast

    def parent(self, unit: Unit, above: Unit) -> np.ndarray:
        """For each ``unit`` id, the id of the ``above`` unit holding it."""
        if unit == "sentence":
            return self.sentence_unit[above]
        return self._of_reports(above, self.first_report[unit])

    def finding_sentences(self, where: str, params: list[object]) -> np.ndarray:
        """Sentence uids of the findings rows satisfying a SQL condition over ``f``."""
        got = self.con.execute(f"SELECT sentence_uid FROM f WHERE {where}", params).fetchnumpy()
        return np.asarray(got["sentence_uid"], dtype=np.int64)

    def text_sentences(self, phrase: str) -> np.ndarray:
        """Sentence uids whose text contains ``phrase`` (case-insensitive)."""
        got = self.con.execute("SELECT sentence_uid FROM s WHERE contains(ltext, ?)",
                               [phrase.lower()]).fetchnumpy()
        return np.asarray(got["sentence_uid"], dtype=np.int64)


def _code(values: np.ndarray, value: str) -> int:
    """The index of ``value`` in the sorted distinct ``values``, or -1 when absent."""
    i = int(np.searchsorted(values, value))
    return i if i < len(values) and values[i] == value else -1
