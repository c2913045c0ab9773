"""The core tables of a generation: reports and sentences as Parquet, written in batches.

Each report gets an integer ``key`` that stays the same across generations, so that component
files copied from a previous generation (tantivy documents, vectors) still point at it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.corpus.model import Report, SegmentedReport
from clinsearch.duck import connect
from clinsearch.index.component import REPORTS_FILE, SENTENCES_FILE, Generation

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


class TableWriter:
    """Writes the reports and sentences tables of a new generation, batch by batch."""

    def __init__(self, gen_path: Path) -> None:
        self._reports = pq.ParquetWriter(gen_path / REPORTS_FILE, REPORTS_SCHEMA)
        self._sentences = pq.ParquetWriter(gen_path / SENTENCES_FILE, SENTENCES_SCHEMA)

    def write(self, keyed: Iterable[tuple[int, SegmentedReport]]) -> None:
        """Append segmented reports, each with its report key."""
        keyed = list(keyed)
        self._reports.write_table(reports_table(keyed))
        self._sentences.write_table(sentences_table(keyed))

    def append(self, reports: pa.Table, sentences: pa.Table) -> None:
        """Append rows already in the tables' schemas (computed elsewhere, keys assigned)."""
        self._reports.write_table(reports.select(REPORTS_SCHEMA.names).cast(REPORTS_SCHEMA))
        self._sentences.write_table(
            sentences.select(SENTENCES_SCHEMA.names).cast(SENTENCES_SCHEMA)
        )

    def copy(self, prev: Generation, drop_keys: Collection[int] = ()) -> None:
        """Append all rows of a previous generation except those of the reports in ``drop_keys``."""
        dropped = pa.array(sorted(drop_keys), type=pa.int64())
        for source, writer, key in (
            (prev.reports_path, self._reports, "key"),
            (prev.sentences_path, self._sentences, "report_key"),
        ):
            for batch in pq.ParquetFile(source).iter_batches(batch_size=8192):
                kept = batch.filter(pc.invert(pc.is_in(batch.column(key), value_set=dropped)))
                writer.write_batch(kept)

    def close(self) -> None:
        """Finish both files (their footers are written here)."""
        self._reports.close()
        self._sentences.close()


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
    """Count reports, sentences, visits (patient, visit pairs) and patients with DuckDB."""
    with connect({"reports": gen.reports_path}) as db:
        reports, visits, patients = db.execute(
            "SELECT count(*), count(DISTINCT (patient_id, visit_id)), count(DISTINCT patient_id)"
            " FROM reports"
        ).fetchone()
    sentences = pq.ParquetFile(gen.sentences_path).metadata.num_rows
    return Counts(reports=reports, sentences=sentences, visits=visits, patients=patients)
