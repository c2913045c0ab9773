"""In-memory lookups over one generation's live core tables, for turning hits into records.

Reports marked deleted are left out (their keys map to no row).

Sentences are stored grouped by report, in index order, so a (report, sentence index) pair maps
to a sentence row by arithmetic; ``units`` maps sentences and reports to visits and patients.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property
from typing import overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsearch.index.component import Generation
from clinsearch.index.unit_map import UnitMap


class Column(Sequence[str]):
    """A read-only string column kept as Arrow data: no Python object per row until read."""

    def __init__(self, array: pa.ChunkedArray) -> None:
        self._array = array.cast(pa.large_string()).combine_chunks()  # beyond 2 GB of text too

    def __len__(self) -> int:
        return len(self._array)

    @overload
    def __getitem__(self, row: int) -> str: ...
    @overload
    def __getitem__(self, row: slice) -> list[str]: ...
    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return self._array[row].to_pylist()
        return self._array[int(row)].as_py()

    def __iter__(self) -> Iterator[str]:
        for chunk in range(0, len(self._array), 65_536):
            yield from self._array[chunk : chunk + 65_536].to_pylist()

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same strings (as the lists it replaces were)."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def take(self, rows: np.ndarray) -> list[str]:
        """The values at ``rows``."""
        return self._array.take(pa.array(rows, pa.int64())).to_pylist()


class Store:
    """Ids, groups and sentence texts of a generation, indexed by row.

    Strings stay Arrow columns (read in a fraction of a second even for millions of sentences)
    and become Python strings only for the rows a query shows.
    """

    def __init__(self, gen: Generation) -> None:
        reports = gen.table("reports", ["key", "id", "patient_id", "visit_id"])
        sentences = gen.table("sentences", ["report_key", "id", "index", "text"])
        keys = reports.column("key").to_numpy()
        self.report_keys: np.ndarray = keys
        self.report_ids = Column(reports.column("id"))
        self.visit_ids = Column(reports.column("visit_id"))
        self.patient_ids = Column(reports.column("patient_id"))
        self.sentence_ids = Column(sentences.column("id"))
        self.sentence_texts = Column(sentences.column("text"))
        self.report_row_by_key = np.full(int(keys.max(initial=-1)) + 1, -1, np.int64)
        self.report_row_by_key[keys] = np.arange(len(keys))
        sentence_keys = sentences.column("report_key").to_numpy()
        self.sentence_report_row = self.report_row_by_key[sentence_keys]
        self.first_sentence_row = np.searchsorted(
            self.sentence_report_row, np.arange(len(keys)), side="left"
        )
        self.end_sentence_row = np.append(self.first_sentence_row[1:], len(sentence_keys))
        patients = reports.column("patient_id")
        visits = pc.binary_join_element_wise(patients, reports.column("visit_id"), "\x1f")
        self.units = UnitMap(
            np.asarray(self.sentence_report_row, np.int64), _ordinals(visits), _ordinals(patients)
        )

    @cached_property
    def row_by_report_id(self) -> dict[str, int]:
        """The row of each report id (built on first use)."""
        return {rid: row for row, rid in enumerate(self.report_ids)}

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


def _ordinals(values: pa.ChunkedArray) -> np.ndarray:
    """A dense integer per distinct value, in order of first appearance (as ``ordinals``)."""
    codes = pc.dictionary_encode(values).combine_chunks().indices
    return codes.to_numpy(zero_copy_only=False).astype(np.int64)
