"""An index generation's tables in Spark: each table's segment files, deleted reports left out."""

from __future__ import annotations

from functools import reduce
from typing import Any

from clinsearch.duck import ParquetRows
from clinsearch.spark.reports import KEY, with_ordinals


def read_rows(spark: Any, rows: ParquetRows) -> Any:
    """The table as a DataFrame (its files read by Spark, the deleted reports' rows dropped)."""
    return _live(spark.read.parquet(*(str(f) for f in rows.files)), rows)


def read_numbered(spark: Any, rows: ParquetRows) -> Any:
    """The table with ``_key``: each row's position in the logical table (segment files in key
    order, each numbered in file order, deleted rows dropped first)."""
    frames, offset = [], 0
    for path in rows.files:
        # numbered and materialised file by file: ordinals come from partition ids, which a
        # union would renumber
        numbered = with_ordinals(spark, _live(spark.read.parquet(str(path)), rows))
        numbered = numbered.withColumn(KEY, numbered[KEY] + offset).localCheckpoint()
        frames.append(numbered)
        offset += numbered.count()
    return reduce(lambda a, b: a.unionByName(b), frames)


def _live(frame: Any, rows: ParquetRows) -> Any:
    """``frame`` without the rows of the excluded report keys."""
    if not len(rows.excluded):
        return frame
    return frame.filter(~frame[rows.key].isin([int(k) for k in rows.excluded]))
