"""The one way clinsearch opens DuckDB: Parquet files registered as named relations.

No path or user string is ever pasted into SQL. Each file is handed to DuckDB as a pyarrow
dataset (so DuckDB never parses the path: no quoting, no globbing), and the connection has
external access turned off, so SQL run on it can read or write no other file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import duckdb


def connect(tables: Mapping[str, Path | object] | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with ``tables`` registered by name.

    A value is a Parquet file path (scanned lazily) or an in-memory Arrow table.
    """
    import pyarrow.dataset as ds

    con = duckdb.connect(config={"enable_external_access": False})
    for name, source in (tables or {}).items():
        if isinstance(source, str | Path):
            source = ds.dataset(str(source), format="parquet")
        con.register(name, source)
    return con
