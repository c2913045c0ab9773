"""One SQLite connection to the workbench file, shared by the server's threads: created
private on first use, WAL, a lock around every use, and write transactions that take the
write lock at their start (the workbench and the chart reviews each hold a connection)."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from clinsearch.permissions import dir_mode, file_mode


class SqliteStore:
    """The database at ``path`` with ``schema`` applied."""

    def __init__(self, path: str | Path, schema: str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode())
        # created private; an existing file is left unopened here, since closing any
        # descriptor of it would drop the POSIX locks of this process's other connections
        with suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, file_mode()))
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA busy_timeout=5000")
        # WAL: a write does not wait for a sync of the whole file (the WAL file takes the
        # database file's mode); a crash loses at most the last history entries
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(schema)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
