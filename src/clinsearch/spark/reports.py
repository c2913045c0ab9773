"""Reports as a Spark DataFrame with their ordinals, from any corpus format, Parquet or a table.

Every row carries ``_key`` (the report's ordinal in the input: the key a local build gives it)
and the fields of a ``Report``. File formats (csv, jsonl, txt-dir, iu-xray, mimic-notes) are
read on the driver by the same readers as a local build, with the same checks and messages,
and staged as Parquet that executors read; Parquet files and Spark tables are read by the
executors, each row checked there with the same rules (``make_report``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from itertools import islice
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import ReadStats, read_reports
from clinsearch.corpus.readers.csv_format import join_text
from clinsearch.corpus.readers.records import (
    ISO_DATE,
    ReadContext,
    RecordError,
    check_date_format,
    make_report,
)
from clinsearch.errors import InputError
from clinsearch.index.tables import report_rows

SPARK_FORMATS = ("parquet", "spark-table")  # read by executors; the others on the driver
KEY = "_key"
_STAGE_BATCH = 10_000


@dataclass(frozen=True, slots=True)
class ColumnMap:
    """Columns of a Parquet file or table that hold each report field (None: not mapped)."""

    id_column: str = "id"
    text_columns: tuple[str, ...] = ("text",)
    patient_column: str | None = None
    visit_column: str | None = None
    type_column: str | None = None
    date_column: str | None = None
    date_format: str = ISO_DATE

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> ColumnMap:
        """From the reader options of ``read_reports`` (``text_columns`` comma-separated)."""
        texts = options.get("text_columns") or "text"
        return cls(
            id_column=options.get("id_column") or "id",
            text_columns=tuple(c.strip() for c in texts.split(",")) if isinstance(texts, str)
            else tuple(texts),
            patient_column=options.get("patient_column"),
            visit_column=options.get("visit_column"),
            type_column=options.get("type_column"),
            date_column=options.get("date_column"),
            date_format=check_date_format(options.get("date_format") or ISO_DATE),
        )

    @property
    def columns(self) -> list[str]:
        """Every mapped column."""
        optional = (self.patient_column, self.visit_column, self.type_column, self.date_column)
        return [self.id_column, *self.text_columns, *(c for c in optional if c)]


def read_frame(
    spark: Any,
    corpus: str | Path,
    fmt: str,
    staging: Path,
    *,
    skip_bad: bool = False,
    stats: ReadStats | None = None,
    **options: Any,
) -> tuple[Any, str]:
    """(DataFrame, kind) of the corpus: kind "staged" (driver-read) or "raw" (mapped rows)."""
    options = {k: v for k, v in options.items() if v is not None}
    if fmt in SPARK_FORMATS:
        mapping = ColumnMap.of(options)
        unknown = set(options) - {field.name for field in fields(ColumnMap)}
        if unknown:
            raise InputError(f"format {fmt!r} takes no option {', '.join(sorted(unknown))}",
                             field="format")
        frame = _read_spark(spark, corpus, fmt)
        missing = [c for c in mapping.columns if c not in frame.columns]
        if missing:
            raise InputError(f"no column {missing[0]!r} (columns: {', '.join(frame.columns)})",
                             file=str(corpus), field=missing[0])
        return with_ordinals(spark, frame), "raw"
    path = stage_reports(read_reports(Path(corpus), fmt, skip_bad=skip_bad, stats=stats,
                                      **options), staging / "input")
    if path is None:
        raise InputError("no reports found", file=corpus)
    return spark.read.parquet(str(path)), "staged"


def stage_reports(reports: Iterator[Report], folder: Path) -> Path | None:
    """Write reports with their ordinals as Parquet files in ``folder`` (None when empty)."""
    folder.mkdir(parents=True, mode=0o700)
    key = 0
    stream = iter(reports)
    while batch := list(islice(stream, _STAGE_BATCH)):
        table = report_rows([(key + i, r) for i, r in enumerate(batch)])
        pq.write_table(table.rename_columns([KEY, *table.column_names[1:]]),
                       folder / f"reports-{key // _STAGE_BATCH:06d}.parquet")
        key += len(batch)
    return folder if key else None


def _read_spark(spark: Any, corpus: str | Path, fmt: str) -> Any:
    """A Parquet file/folder or a table of the Spark catalog."""
    if fmt == "spark-table":
        if not spark.catalog.tableExists(str(corpus)):
            raise InputError(f"no Spark table or view named {str(corpus)!r}", field="corpus")
        return spark.table(str(corpus))
    if not Path(corpus).exists() and "://" not in str(corpus):
        raise InputError("no such file or folder", file=corpus)
    return spark.read.parquet(str(corpus))


def with_ordinals(spark: Any, frame: Any) -> Any:
    """``frame`` with ``_key``: each row's ordinal in input order (partition, then position)."""
    from pyspark.sql import functions as sf
    from pyspark.sql.types import LongType, StructField, StructType

    counted = frame.groupBy(sf.spark_partition_id().alias("p")).count().collect()
    sizes = {int(row["p"]): int(row["count"]) for row in counted}
    offsets, total = {}, 0
    for part in range(frame.rdd.getNumPartitions()):
        offsets[part] = total
        total += sizes.get(part, 0)

    def number(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        position = offsets[TaskContext.get().partitionId()]
        for batch in batches:
            yield batch.assign(**{KEY: range(position, position + len(batch))})
            position += len(batch)

    schema = StructType([*frame.schema.fields, StructField(KEY, LongType())])
    return frame.mapInPandas(number, schema)


def staged_report(row: Mapping[str, Any]) -> Report:
    """A Report from a staged row (already checked by the driver's reader)."""
    return Report(
        id=row["id"], text=row["text"], patient_id=row["patient_id"], visit_id=row["visit_id"],
        type=row["type"], date=row["date"], metadata=dict(row["metadata"] or {}),
        source=row["source"],
    )


def mapped_report(row: Mapping[str, Any], mapping: ColumnMap, name: str) -> Report | RecordError:
    """A Report from a raw row, checked as the readers check records (line: row ordinal + 1)."""
    values = {k: "" if v is None else str(v) for k, v in row.items() if k != KEY}
    mapped = set(mapping.columns)
    try:
        return make_report(
            file=Path(name),
            line=int(row[KEY]) + 1,
            report_id=values[mapping.id_column],
            text=join_text(mapping.text_columns, values),
            fields={"id": mapping.id_column, "text": ",".join(mapping.text_columns),
                    "date": mapping.date_column or "date"},
            patient_id=values.get(mapping.patient_column or "", ""),
            visit_id=values.get(mapping.visit_column or "", ""),
            type_=values.get(mapping.type_column or "", ""),
            date_value=values.get(mapping.date_column or "", ""),
            metadata={k: v for k, v in values.items() if k not in mapped and v},
            seen=ReadContext(mapping.date_format),
        )
    except RecordError as error:
        return error
