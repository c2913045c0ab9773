"""The component protocol: a part of the index (lexical, findings, dense) kept per generation.

Every change to an index writes a complete new generation folder. The core tables
(``reports.parquet``, ``sentences.parquet``) are written first; then each component builds its
own files inside the new folder from those tables, either from scratch (``build``) or from the
previous generation plus the change (``add``/``delete``). ``open`` gives the query-time reader.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.parallel import Workers

REPORTS_FILE = "reports.parquet"
SENTENCES_FILE = "sentences.parquet"
DELETED_FILE = "deleted.parquet"  # column ``key``: reports marked deleted, not yet merged away


@dataclass(frozen=True, slots=True)
class Generation:
    """One generation folder, read through its core tables.

    ``progress`` asks for progress bars; ``workers`` are the processes a component may use to
    write it (by default none: all work runs in this process).
    """

    path: Path
    progress: bool = False
    workers: Workers = field(default_factory=Workers, compare=False)

    @property
    def reports_path(self) -> Path:
        """The reports table: one row per report (key, id, patient_id, visit_id, text, ...)."""
        return self.path / REPORTS_FILE

    @property
    def sentences_path(self) -> Path:
        """The sentences table: one row per sentence (report_key, id, index, text, ...)."""
        return self.path / SENTENCES_FILE

    def deleted_keys(self) -> np.ndarray:
        """Report keys marked deleted in this generation (sorted int64; empty when none).

        A delete only marks; readers leave these reports out, and a merge removes their data.
        """
        path = self.path / DELETED_FILE
        if not path.is_file():
            return np.empty(0, np.int64)
        keys = pq.ParquetFile(path).read(["key"]).column("key").to_numpy()
        return np.sort(keys.astype(np.int64))

    def report_batches(
        self, report_keys: Collection[int] | None = None, columns: list[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream report rows, optionally only those whose ``key`` is in ``report_keys``."""
        return _batches(self.reports_path, "key", report_keys, columns)

    def sentence_batches(
        self, report_keys: Collection[int] | None = None, columns: list[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream sentence rows, optionally only those of the reports in ``report_keys``."""
        return _batches(self.sentences_path, "report_key", report_keys, columns)


@dataclass(frozen=True, slots=True)
class Change:
    """The reports an ``add`` or ``delete`` touches, by id and by internal key."""

    report_ids: tuple[str, ...]
    report_keys: tuple[int, ...]
    info: Mapping[str, Any] = field(default_factory=dict)


class Component(Protocol):
    """A part of the index stored in its own files inside each generation folder.

    ``build``, ``add`` and ``delete`` write into ``gen`` (a new, not yet live folder) and return
    the component's entry for the manifest (counts, settings). They must not modify ``prev``.
    """

    name: str

    def build(self, gen: Generation) -> dict[str, Any]:
        """Build the component from the generation's core tables."""
        ...

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Write into ``gen`` the component of ``prev`` plus the reports in ``change``."""
        ...

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Write into ``gen`` the component of ``prev`` without the reports in ``change``."""
        ...

    def merge(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Write into ``gen`` the component of ``prev`` with its segments merged and no data
        left of the reports deleted in ``prev`` (its marks) or in ``change`` (erasure)."""
        ...

    def open(self, gen: Generation) -> Any:
        """The query-time reader of this component in a live generation."""
        ...


def _batches(
    path: Path, key_column: str, keys: Collection[int] | None, columns: list[str] | None
) -> Iterator[pa.RecordBatch]:
    """Stream a Parquet table's batches, keeping only rows whose ``key_column`` is in ``keys``."""
    wanted = None if keys is None else pa.array(sorted(keys), type=pa.int64())
    if columns is not None and wanted is not None and key_column not in columns:
        columns = [*columns, key_column]
    for batch in pq.ParquetFile(path).iter_batches(batch_size=8192, columns=columns):
        if wanted is None:
            yield batch
            continue
        kept = batch.filter(pc.is_in(batch.column(key_column), value_set=wanted))
        if kept.num_rows:
            yield kept
