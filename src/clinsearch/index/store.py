"""In-memory lookups over one generation's core tables, for turning hits into records.

Sentences are stored grouped by report, in index order, so a (report, sentence index) pair maps
to a sentence row by arithmetic; ``units`` maps sentences and reports to visits and patients.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pyarrow.parquet as pq

from clinsearch.index.component import Generation
from clinsearch.index.unit_map import UnitMap


class Store:
    """Ids, groups and sentence texts of a generation, indexed by row."""

    def __init__(self, gen: Generation) -> None:
        reports = pq.read_table(gen.reports_path, columns=["key", "id", "patient_id", "visit_id"])
        sentences = pq.read_table(gen.sentences_path, columns=["report_key", "id", "index", "text"])
        keys = reports.column("key").to_numpy()
        self.report_keys: np.ndarray = keys
        self.report_ids: list[str] = reports.column("id").to_pylist()
        self.visit_ids: list[str] = reports.column("visit_id").to_pylist()
        self.patient_ids: list[str] = reports.column("patient_id").to_pylist()
        self.sentence_ids: list[str] = sentences.column("id").to_pylist()
        self.sentence_texts: list[str] = sentences.column("text").to_pylist()
        self.report_row_by_key = np.full(int(keys.max(initial=-1)) + 1, -1, np.int64)
        self.report_row_by_key[keys] = np.arange(len(keys))
        self.row_by_report_id = {rid: row for row, rid in enumerate(self.report_ids)}
        sentence_keys = sentences.column("report_key").to_numpy()
        self.sentence_report_row = self.report_row_by_key[sentence_keys]
        self.first_sentence_row = np.searchsorted(
            self.sentence_report_row, np.arange(len(keys)), side="left"
        )
        self.end_sentence_row = np.append(self.first_sentence_row[1:], len(sentence_keys))
        self.units = UnitMap.from_ids(self.sentence_report_row, self.patient_ids, self.visit_ids)

    @cached_property
    def row_by_sentence_id(self) -> dict[str, int]:
        """The row of each sentence id (built on first use)."""
        return {sid: row for row, sid in enumerate(self.sentence_ids)}

    @property
    def num_reports(self) -> int:
        """How many reports the generation holds."""
        return len(self.report_ids)

    def report_rows(self, report_keys: np.ndarray) -> np.ndarray:
        """Report rows of report keys."""
        return self.report_row_by_key[report_keys]

    def sentence_rows(self, report_keys: np.ndarray, indexes: np.ndarray) -> np.ndarray:
        """Sentence rows of (report key, sentence index) pairs."""
        return self.first_sentence_row[self.report_rows(report_keys)] + indexes

    def sentence_counts(self, report_rows: np.ndarray) -> np.ndarray:
        """How many sentences each report has."""
        return self.end_sentence_row[report_rows] - self.first_sentence_row[report_rows]

    def groups(self, level: str, unit: str, rows: np.ndarray) -> np.ndarray:
        """The group (at ``level``) of each row of ``unit`` ("sentence" or "report") rows."""
        return self.units.of(level, unit, rows)  # type: ignore[arg-type]
