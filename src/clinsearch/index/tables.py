"""The core tables of a segment: reports and sentences as Parquet, written in batches.

Each report gets an integer ``key`` that stays the same across generations and merges, so that
component files linked from a previous generation (tantivy documents, vectors) still point at it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.arrow_numbers import numpy_of
from clinsearch.corpus.model import Report, SegmentedReport
from clinsearch.duck import connect
from clinsearch.index.component import (
    KEY_COLUMNS,
    REPORTS_FILE,
    SENTENCE_COUNTS_FILE,
    SENTENCES_FILE,
    Generation,
    Segment,
    without_keys,
)

REPORTS_SCHEMA = pa.schema(
    [
        ("key", pa.int64()),
        ("id", pa.string()),
        ("patient_id", pa.string()),
        ("visit_id", pa.string()),
        ("type", pa.string()),
        ("date", pa.string()),
        ("text", pa.string()),
        ("metadata", pa.map_(pa.string(), pa.string())),
        ("source", pa.string()),
    ]
)

SENTENCES_SCHEMA = pa.schema(
    [
        ("report_key", pa.int64()),
        ("id", pa.string()),
        ("report_id", pa.string()),
        ("visit_id", pa.string()),
        ("patient_id", pa.string()),
        ("index", pa.int32()),
        ("section", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("text", pa.string()),
    ]
)


@dataclass(frozen=True, slots=True)
class Counts:
    """How many reports, sentences, visits and patients a generation holds."""

    reports: int
    sentences: int
    visits: int
    patients: int


# At most this many rows per Parquet row group: a merge appends whole segments, and readers
# that fetch ids or texts for a few rows read whole row groups.
ROW_GROUP_ROWS = 32_768


class SegmentWriter:
    """Writes the reports and sentences tables of one new segment, batch by batch."""

    def __init__(self, folder: Path, segment_id: str) -> None:
        folder.mkdir(parents=True)
        self.id = segment_id
        self._reports = pq.ParquetWriter(folder / REPORTS_FILE, REPORTS_SCHEMA)
        self._sentences = pq.ParquetWriter(folder / SENTENCES_FILE, SENTENCES_SCHEMA)
        self._folder = folder
        self._keys: list[int] = []  # first and last key written
        self._rows = [0, 0]
        # sentences per report, in row order; None once an append's sentences were not all
        # of its own reports (then no counts file is written and readers count the keys)
        self._counts: list[np.ndarray] | None = []

    @property
    def reports(self) -> int:
        """How many reports are written so far."""
        return self._rows[0]

    def write(self, keyed: Sequence[tuple[int, SegmentedReport]]) -> None:
        """Append segmented reports, each with its report key (keys rising)."""
        self.append(reports_table(list(keyed)), sentences_table(list(keyed)))

    def append(self, reports: pa.Table, sentences: pa.Table) -> None:
        """Append rows already in the tables' schemas (computed elsewhere, keys assigned and
        rising)."""
        self._reports.write_table(reports.select(REPORTS_SCHEMA.names).cast(REPORTS_SCHEMA),
                                  row_group_size=ROW_GROUP_ROWS)
        self._sentences.write_table(
            sentences.select(SENTENCES_SCHEMA.names).cast(SENTENCES_SCHEMA),
            row_group_size=ROW_GROUP_ROWS,
        )
        if self._counts is not None:
            counts = sentence_counts(numpy_of(reports.column("key")),
                                     numpy_of(sentences.column("report_key")))
            self._counts = ([*self._counts, counts]
                            if int(counts.sum()) == sentences.num_rows else None)
        if reports.num_rows:
            keys = reports.column("key")
            self._keys = [self._keys[0] if self._keys else pc.min(keys).as_py(),
                          pc.max(keys).as_py()]
        self._rows = [self._rows[0] + reports.num_rows, self._rows[1] + sentences.num_rows]

    def close(self) -> Segment:
        """Finish both files (their footers are written here); the segment's record."""
        self._reports.close()
        self._sentences.close()
        if self._counts is not None:  # beside the tables, in report row order
            np.save(self._folder / SENTENCE_COUNTS_FILE,
                    np.concatenate([np.zeros(0, np.int32), *self._counts]))
        first, last = self._keys or [0, -1]
        return Segment(self.id, first, last, *self._rows)


def sentence_counts(report_keys: np.ndarray, sentence_keys: np.ndarray) -> np.ndarray:
    """How many of ``sentence_keys`` (sorted) each of ``report_keys`` has (int32)."""
    return (np.searchsorted(sentence_keys, report_keys, side="right")
            - np.searchsorted(sentence_keys, report_keys, side="left")).astype(np.int32)


def merge_segments(
    prev: Generation, sources: Sequence[Segment], dropped: np.ndarray, writer: SegmentWriter
) -> Segment:
    """Write the rows of ``sources`` (segments of ``prev``, in key order) without those of the
    ``dropped`` report keys into one new segment spanning their key range."""
    for segment in sources:
        folder = prev.segment_path(segment)
        writer.append(*(
            without_keys(pq.ParquetFile(folder / f"{name}.parquet").read(), KEY_COLUMNS[name],
                         dropped)
            for name in ("reports", "sentences")
        ))
    return replace(writer.close(), first_key=sources[0].first_key, last_key=sources[-1].last_key)


def reports_table(keyed: list[tuple[int, SegmentedReport]]) -> pa.Table:
    """One row per report."""
    return report_rows([(key, seg.report) for key, seg in keyed])


def report_rows(keyed: list[tuple[int, Report]]) -> pa.Table:
    """One row per report, from unsegmented reports with their keys."""
    reports = [r for _, r in keyed]
    return pa.Table.from_pydict(
        {
            "key": [key for key, _ in keyed],
            "id": [r.id for r in reports],
            "patient_id": [r.patient_id for r in reports],
            "visit_id": [r.visit_id for r in reports],
            "type": [r.type for r in reports],
            "date": [r.date for r in reports],
            "text": [r.text for r in reports],
            "metadata": [list(r.metadata.items()) for r in reports],
            "source": [r.source for r in reports],
        },
        schema=REPORTS_SCHEMA,
    )


def sentences_table(keyed: list[tuple[int, SegmentedReport]]) -> pa.Table:
    """One row per sentence, carrying its report's key and ids for aggregation."""
    rows = [(key, seg.report, s) for key, seg in keyed for s in seg.sentences]
    return pa.Table.from_pydict(
        {
            "report_key": [key for key, _, _ in rows],
            "id": [s.id for _, _, s in rows],
            "report_id": [r.id for _, r, _ in rows],
            "visit_id": [r.visit_id for _, r, _ in rows],
            "patient_id": [r.patient_id for _, r, _ in rows],
            "index": [s.index for _, _, s in rows],
            "section": [s.section for _, _, s in rows],
            "start": [s.start for _, _, s in rows],
            "end": [s.end for _, _, s in rows],
            "text": [s.text for _, _, s in rows],
        },
        schema=SENTENCES_SCHEMA,
    )


def count(gen: Generation) -> Counts:
    """Count the live reports, sentences, visits (patient, visit pairs) and patients."""
    dropped = gen.deleted_keys()  # read once for both tables
    live = {name: gen.rows(name, dropped) for name in ("reports", "sentences")}
    with connect(live) as db:
        reports, visits, patients = db.execute(
            "SELECT count(*), count(DISTINCT (patient_id, visit_id)), count(DISTINCT patient_id)"
            " FROM reports"
        ).fetchone()
        if len(dropped):
            (sentences,) = db.execute("SELECT count(*) FROM sentences").fetchone()
        else:
            sentences = sum(s.sentences for s in gen.segments)
    return Counts(reports=reports, sentences=sentences, visits=visits, patients=patients)
