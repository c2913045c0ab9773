"""The ``mimic-notes`` reader: a NOTEEVENTS-style CSV (MIMIC-III clinical notes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.csv_format import read_csv
from clinsearch.corpus.readers.records import ReadContext, RecordError


def read_mimic_notes(path: Path, seen: ReadContext) -> Iterator[Report | RecordError]:
    """Stream notes: ROW_ID id, SUBJECT_ID patient, HADM_ID visit, CHARTDATE date, CATEGORY type."""
    return read_csv(
        path,
        seen,
        id_column="ROW_ID",
        text_columns=("TEXT",),
        patient_column="SUBJECT_ID",
        visit_column="HADM_ID",
        type_column="CATEGORY",
        date_column="CHARTDATE",
    )
