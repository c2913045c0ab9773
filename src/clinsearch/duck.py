"""The one way clinsearch opens DuckDB: Parquet files registered as named relations.

No path or user string is ever pasted into SQL. Each file is handed to DuckDB as a pyarrow
dataset (so DuckDB never parses the path: no quoting, no globbing), and the connection has
external access turned off, so SQL run on it can read or write no other file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import duckdb

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ParquetRows:
    """One table stored as several Parquet files (an index's segments), read as one relation
    without the rows whose ``key`` column is in ``excluded`` (reports marked deleted)."""

    files: tuple[Path, ...]
    key: str
    excluded: np.ndarray


def connect(
    tables: Mapping[str, Path | ParquetRows | object] | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with ``tables`` registered by name.

    A value is a Parquet file path or a ``ParquetRows`` (both scanned lazily), or an in-memory
    Arrow table. Names are identifiers chosen by the code, never user input.
    """
    import duckdb  # loaded on first use: importing this module (for ParquetRows) stays cheap
    import pyarrow as pa

    con = duckdb.connect(config={"enable_external_access": False})
    for name, source in (tables or {}).items():
        if not _NAME.match(name):
            raise ValueError(f"not a table name: {name!r}")
        if isinstance(source, str | Path | ParquetRows):
            import pyarrow.dataset as ds  # only for files: it imports pandas (slow cold)
        if isinstance(source, str | Path):
            source = ds.dataset(str(source), format="parquet")
        elif isinstance(source, ParquetRows):
            stored = ds.dataset([str(f) for f in source.files], format="parquet")
            if len(source.excluded):
                con.register(f"{name}__stored", stored)
                con.register(f"{name}__excluded", pa.table({"key": source.excluded}))
                con.execute(
                    f'CREATE VIEW "{name}" AS SELECT s.* FROM "{name}__stored" s ANTI JOIN'
                    f' "{name}__excluded" e ON s."{_checked(source.key)}" = e.key'
                )
                continue
            source = stored
        con.register(name, source)
    return con


def _checked(column: str) -> str:
    """A column name fit to quote in SQL (chosen by the code, checked all the same)."""
    if not _NAME.match(column):
        raise ValueError(f"not a column name: {column!r}")
    return column
