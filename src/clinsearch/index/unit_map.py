"""The one unit mapping: sentence -> report -> visit -> patient, as integer arrays.

Reports are numbered by their row, sentences by theirs (the shared sentence numbering: a
sentence's row in the sentences table); visits are the distinct (patient_id, visit_id) pairs and
patients the distinct patient ids, numbered in order of first appearance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsearch.arrow_numbers import numpy_of
from clinsearch.units import LEVELS, Level


@dataclass(frozen=True)
class UnitMap:
    """For each sentence its report, for each report its visit and patient."""

    sentence_report: np.ndarray  # report row of each sentence row
    report_visit: np.ndarray
    report_patient: np.ndarray

    @classmethod
    def from_ids(cls, sentence_report: np.ndarray, patient_ids: pa.ChunkedArray | pa.Array,
                 visit_ids: pa.ChunkedArray | pa.Array) -> UnitMap:
        """The map of reports with these patient and visit ids (one per report row; plain or
        dictionary-encoded strings), numbered through dictionary codes: no string per row."""
        patients = first_seen(row_codes(patient_ids))
        visits = row_codes(visit_ids).astype(np.int64)
        if not _one_patient_each(visits, patients):  # e.g. "v1" for every patient: use pairs
            visits = patients * (int(visits.max(initial=0)) + 1) + visits
        return cls(np.asarray(sentence_report, dtype=np.int64), first_seen(visits), patients)

    def size(self, level: Level) -> int:
        """How many units of ``level`` there are."""
        if level == "sentence":
            return len(self.sentence_report)
        if level == "report":
            return len(self.report_visit)
        ids = self.report_visit if level == "visit" else self.report_patient
        return int(ids.max(initial=-1)) + 1

    def of(self, level: Level, unit: Level, rows: np.ndarray) -> np.ndarray:
        """The ``level`` unit of each of ``rows`` (sentence or report rows, by ``unit``)."""
        if LEVELS.index(level) < LEVELS.index(unit):
            raise ValueError(f"cannot map {unit} rows down to {level}s")
        if level == unit:
            return rows
        report_rows = self.sentence_report[rows] if unit == "sentence" else rows
        if level == "report":
            return report_rows
        return (self.report_visit if level == "visit" else self.report_patient)[report_rows]


def first_seen(codes: np.ndarray) -> np.ndarray:
    """A dense integer per distinct code, in order of first appearance (the codes themselves
    when they are so already, as dictionary codes read from Parquet usually are: no sort)."""
    codes = np.asarray(codes)
    if not len(codes) or (codes[0] == 0 and bool(
            (codes[1:] <= np.maximum.accumulate(codes)[:-1] + 1).all())):
        return codes.astype(np.int64)  # each new code is one above those seen: 0, 1, 2, ...
    distinct, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(distinct))
    return rank[inverse.reshape(-1)]


def _one_patient_each(visits: np.ndarray, patients: np.ndarray) -> bool:
    """Whether every visit code occurs with one patient only (then the (patient, visit) pairs
    are numbered as the visit codes are)."""
    if not len(visits):
        return True
    patient_of = np.empty(int(visits.max()) + 1, np.int64)
    patient_of[visits] = patients
    return bool((patient_of[visits] == patients).all())


def dictionary_codes(column: pa.ChunkedArray | pa.Array) -> tuple[list[str | None], np.ndarray]:
    """A string column as its distinct values and each row's index into them (int32 or int64),
    with no Python string per row; ``column`` may already be dictionary-encoded (as Parquet reads
    it with ``read_dictionary``)."""
    dictionary, codes, missing = _encoded(column)
    return dictionary.to_pylist() + ([None] if missing else []), codes


def row_codes(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """``dictionary_codes`` without the distinct values (no Python string at all)."""
    return _encoded(column)[1]


def _encoded(column: pa.ChunkedArray | pa.Array) -> tuple[pa.Array, np.ndarray, bool]:
    """A string column's dictionary, each row's index into it (a missing value: one past its
    end) and whether a value is missing."""
    if not pa.types.is_dictionary(column.type):
        column = pc.dictionary_encode(column)  # nulls as null indices: chunks can be unified
    if isinstance(column, pa.ChunkedArray):
        column = (column.unify_dictionaries().combine_chunks() if column.num_chunks
                  else pa.array([], column.type))
    indices = column.indices
    missing = bool(indices.null_count)
    if missing:  # a missing value read as a null index: give it a value of its own
        indices = pc.fill_null(indices, len(column.dictionary))
    return column.dictionary, numpy_of(indices), missing
