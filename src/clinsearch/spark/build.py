"""Build or extend an index with Spark: executors compute the tables, the driver commits.

Reports are range-partitioned by ordinal; each executor task segments, annotates (one
annotator per Python worker, reused across tasks) and, with ``dense``, embeds its reports with
``mapInPandas``, and writes them as a part (``index.parts``) under a staging folder that driver
and executors share. The driver then commits one generation from the parts in ordinal order,
through the same writers, checks and components as a local build: the same index results.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clinsearch.corpus.readers import ReadStats
from clinsearch.corpus.readers.records import RecordError
from clinsearch.index import IndexConfig
from clinsearch.index.parts import PartOptions, Parts, compute_part, write_part
from clinsearch.search.session import Index
from clinsearch.spark.reports import KEY, ColumnMap, mapped_report, read_frame, staged_report
from clinsearch.trust import allow

_RESULT_SCHEMA = (
    "folder string, first_key long, reports long, error_line long, reason string,"
    " error_file string, error_field string, message string"
)  # one row per part written, and one per bad record
_RESULT_COLUMNS = [column.split()[0] for column in _RESULT_SCHEMA.split(",")]


def build_index(
    spark: Any,
    corpus: str | Path,
    out: str | Path,
    fmt: str,
    *,
    config: IndexConfig | None = None,
    partitions: int | None = None,
    staging: str | Path | None = None,
    skip_bad: bool = False,
    stats: ReadStats | None = None,
    progress: bool = True,
    **options: Any,
) -> Index:
    """Index a corpus (any reader format, ``parquet`` or ``spark-table``) into ``out`` on Spark.

    ``partitions``: how many tasks share the work (default: the session's parallelism);
    ``staging``: a folder all executors and the driver can write (default: a private temporary
    folder, which suits ``local[N]``); ``options``: the format's column mapping.
    """
    config = (config or IndexConfig()).with_paths(lambda value, _: allow(value))
    with computed_parts(spark, corpus, fmt, config, partitions, staging, skip_bad, stats,
                   options) as parts:
        return Index.build_from_parts(parts, out, config, progress)


def add_to_index(
    spark: Any,
    index_dir: str | Path,
    corpus: str | Path,
    fmt: str,
    *,
    partitions: int | None = None,
    staging: str | Path | None = None,
    skip_bad: bool = False,
    stats: ReadStats | None = None,
    progress: bool = True,
    **options: Any,
) -> int:
    """Add a corpus's reports to an index, computed on Spark; returns how many were added."""
    index = Index.open(index_dir)
    with computed_parts(spark, corpus, fmt, index.config, partitions, staging, skip_bad, stats,
                   options) as parts:
        return index.add_parts(parts, progress)


@contextmanager
def computed_parts(
    spark: Any,
    corpus: str | Path,
    fmt: str,
    config: IndexConfig,
    partitions: int | None,
    staging: str | Path | None,
    skip_bad: bool,
    stats: ReadStats | None,
    options: dict[str, Any],
) -> Iterator[Parts]:
    """The corpus's parts, computed by executors into a staging folder removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="clinsearch-spark-", dir=staging))
    try:
        frame, kind = read_frame(spark, corpus, fmt, root, skip_bad=skip_bad, stats=stats,
                                 **options)
        count = partitions or spark.sparkContext.defaultParallelism
        frame = frame.repartitionByRange(count, KEY).sortWithinPartitions(KEY)
        mapping = {k: v for k, v in options.items() if v is not None}
        work = _partition_worker(root / "parts", PartOptions.of(config),
                                 ColumnMap.of(mapping) if kind == "raw" else None, str(corpus))
        rows = frame.mapInPandas(work, _RESULT_SCHEMA).collect()
        _check_errors(rows, skip_bad, stats)
        done = sorted((r["first_key"], r["folder"]) for r in rows if r["folder"])
        if stats is not None and kind == "raw":
            stats.reports += sum(r["reports"] for r in rows if r["folder"])
        yield Parts(tuple(Path(folder) for _, folder in done))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _partition_worker(
    folder: Path, options: PartOptions, mapping: ColumnMap | None, name: str
) -> Any:
    """The ``mapInPandas`` function: each batch of reports becomes one part folder."""

    def work(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd
        from pyspark import TaskContext

        task = TaskContext.get()
        for number, batch in enumerate(batches):
            keyed, errors = [], []
            for row in batch.to_dict("records"):
                report = staged_report(row) if mapping is None else mapped_report(row, mapping,
                                                                                  name)
                if isinstance(report, RecordError):
                    errors.append(["", -1, 0, report.line or 0, report.reason,
                                   report.file or "", report.field or "", report.message])
                else:
                    keyed.append((int(row[KEY]), report))
            out = []
            if keyed:
                part = folder / (f"part-{task.partitionId():05d}-{number:05d}"
                                 f"-{task.attemptNumber()}")
                write_part(part, compute_part(keyed, options))
                out.append([str(part), keyed[0][0], len(keyed), -1, "", "", "", ""])
            yield pd.DataFrame([*out, *errors], columns=_RESULT_COLUMNS)

    return work


def _check_errors(rows: list[Any], skip_bad: bool, stats: ReadStats | None) -> None:
    """Raise the first bad record (by line), or count them all with ``skip_bad``."""
    errors = sorted((r for r in rows if r["reason"]), key=lambda r: r["error_line"])
    for row in errors:
        error = RecordError(row["reason"], row["message"], file=row["error_file"] or None,
                            line=row["error_line"], field=row["error_field"] or None)
        if not skip_bad:
            raise error
        if stats is not None:
            stats.count_skip(error)
