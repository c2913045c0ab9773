"""The corpus as integer-coded arrays for cohort evaluation, loaded once from an index generation.

Units are numbered as the index numbers them (``index.unit_map``: sentence and report rows,
visits, patients). "Rows" are the sentences (row i is sentence i) followed by the reports that
have no sentence, so that every report counts in the corpus even when empty. Finding lookups go
to the findings service (``index.finding_match``); everything else is numpy over these arrays.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsearch.duck import connect
from clinsearch.index.finding_match import FindingMatcher, FindingSpec
from clinsearch.index.unit_map import UnitMap
from clinsearch.search.cohort.syntax import UNITS, Filter, Unit, fold

if TYPE_CHECKING:
    from clinsearch.index import Index


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
    """Unit hierarchy, filter columns and the findings of one index generation."""

    def __init__(self, reports: pa.Table, sentences: pa.Table, findings: FindingMatcher) -> None:
        """``reports`` and ``sentences`` are the index's tables (numbered by row, the shared
        numbering); ``findings`` answers finding specs in that sentence numbering."""
        self.findings = findings
        report_ids = reports.column("id").to_pylist()
        patient_ids = reports.column("patient_id").to_pylist()
        visit_ids = reports.column("visit_id").to_pylist()
        row_of = {rid: row for row, rid in enumerate(report_ids)}
        self.sentence_report = np.array(
            [row_of[r] for r in sentences.column("report_id").to_pylist()], dtype=np.int64)
        self.unit_map = UnitMap.from_ids(self.sentence_report, patient_ids, visit_ids)
        report_type, self.types, self.report_type = _folded(reports.column("type"))
        self.reports = Reports(
            self.unit_map.report_visit, self.unit_map.report_patient,
            np.array(report_ids, dtype=object), np.array(visit_ids, dtype=object),
            np.array(patient_ids, dtype=object), report_type,
            np.array([d or "" for d in reports.column("date").to_pylist()], dtype=object),
        )
        self.sentence_index = sentences.column("index").to_numpy().astype(np.int64)
        self.sentence_ids = np.array(sentences.column("id").to_pylist(), dtype=object)
        self.sentence_sections, self.sections, section_code = _folded(sentences.column("section"))
        self.sentence_texts = np.array(sentences.column("text").to_pylist(), dtype=object)
        self._text = connect({"texts": pa.table({
            "sentence": pa.array(np.arange(len(self.sentence_ids)), pa.int64()),
            "text": sentences.column("text")})})
        self._text.execute("CREATE TABLE s AS SELECT sentence, lower(text) AS ltext FROM texts")
        self._text.unregister("texts")
        self._local = threading.local()
        n_reports = len(self.reports.ids)
        empty = np.setdiff1d(np.arange(n_reports), self.sentence_report)
        self.row_report = np.concatenate([self.sentence_report, empty])
        # Filter columns as integer codes: comparing codes is ~10x faster than strings.
        self.row_section = np.concatenate([section_code, np.full(len(empty), -1)])
        self.report_date = np.array([int(d.replace("-", "")) if d else 0
                                     for d in self.reports.date], dtype=np.int64)
        self.size: dict[Unit, int] = {u: self.unit_map.size(u) for u in UNITS}
        self.row_unit = {u: self._of_reports(u, self.row_report) for u in UNITS[1:]}
        self.everything = {u: np.ones(self.size[u], dtype=bool) for u in UNITS}
        self.row_unit["sentence"] = np.concatenate(
            [np.arange(len(self.sentence_ids)), np.full(len(empty), -1)])
        self.sentence_unit = {u: self.unit_map.of(u, "sentence", np.arange(len(self.sentence_ids)))
                              for u in UNITS}
        # A report of each report, visit and patient, to show the unit's ids.
        reports_ = np.arange(n_reports)
        self.first_report: dict[Unit, np.ndarray] = {}
        for unit in ("report", "visit", "patient"):
            first = np.zeros(self.size[unit], dtype=np.int64)
            first[self._of_reports(unit, reports_)[::-1]] = reports_[::-1]
            self.first_report[unit] = first
        # Evidence order: earliest report date first (undated last), then report id, then
        # sentence.
        id_rank = np.empty(n_reports, dtype=np.int64)
        id_rank[np.argsort(self.reports.ids.astype(str), kind="stable")] = reports_
        dates = self.reports.date[self.sentence_report]
        self.sentence_rank = np.empty(len(dates), dtype=np.int64)
        order = np.lexsort((self.sentence_index, id_rank[self.sentence_report], dates == "",
                            dates))
        self.sentence_rank[order] = np.arange(len(order))

    @classmethod
    def from_index(cls, index: Index) -> CohortCorpus:
        """Load an index's live generation: its core tables and its findings service."""
        gen = index.generation
        reports = gen.table("reports", ["id", "patient_id", "visit_id", "type", "date"])
        sentences = gen.table("sentences", ["report_id", "id", "index", "section", "text"])
        matcher = index.component("findings").matcher(sentences.column("id"))
        return cls(reports, sentences, matcher)

    @classmethod
    def from_arrow(cls, reports: pa.Table, sentences: pa.Table, findings: pa.Table) -> CohortCorpus:
        """Load from in-memory Arrow tables with the index's column names (used by tests)."""
        return cls(reports, sentences,
                   FindingMatcher(findings, sentences.column("id").to_pylist()))

    def _of_reports(self, unit: Unit, reports: np.ndarray) -> np.ndarray:
        """The ``unit`` id of each report in ``reports`` (report, visit or patient)."""
        return self.unit_map.of(unit, "report", reports)

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

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor on the text table (one connection is not safe across threads)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = self._text.cursor()
        return cursor

    def finding_sentences(self, spec: FindingSpec) -> np.ndarray:
        """Sentences holding a finding that matches ``spec`` (the findings service's answer)."""
        return self.findings.sentences(spec)

    def text_sentences(self, phrase: str) -> np.ndarray:
        """Sentences whose text contains ``phrase`` (case-insensitive)."""
        got = self._cursor().execute("SELECT sentence FROM s WHERE contains(ltext, ?)",
                                     [phrase.lower()]).fetchnumpy()
        return np.asarray(got["sentence"], dtype=np.int64)


def _folded(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A filter column: each row's value lower-cased (missing: ""), the sorted distinct folded
    values (``syntax.fold``) and each row's code into them; the string work is done once per
    distinct value, not per row."""
    encoded = pc.dictionary_encode(column, null_encoding="encode").combine_chunks()
    lowered = np.array([(v or "").lower() for v in encoded.dictionary.to_pylist()], dtype=object)
    folded = np.array([fold(v) for v in lowered], dtype=str)
    values, code = np.unique(folded, return_inverse=True)
    rows = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return lowered[rows], values, code[rows].astype(np.int64)


def _code(values: np.ndarray, value: str) -> int:
    """The index of ``value`` in the sorted distinct ``values``, or -1 when absent."""
    i = int(np.searchsorted(values, value))
    return i if i < len(values) and values[i] == value else -1
