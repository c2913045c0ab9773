"""The report ids a build or an add has taken so far, checked without holding every id.

A report whose id is already in the index, or earlier in the input, is refused as the reports
stream in. Holding every id as a Python string grows with the number of reports; here the
ids stored in finished segment files (and in the index being added to) are kept only as sorted
64-bit hashes (8 bytes each), the ids of the segment being written as strings, and a hash match
is confirmed against the ids in the files (a hash collision is not a duplicate).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.index.component import without_keys

_NO_KEYS = np.empty(0, np.int64)


class TakenIds:
    """Ids taken: those of reports files (hashed) and of the segment being written."""

    def __init__(self) -> None:
        self._hashes = np.empty(0, np.int64)  # sorted hashes of the ids in ``_files``
        self._files: list[tuple[Path, np.ndarray]] = []  # reports files, keys left out
        self._open: set[str] = set()

    def add_files(self, files: Iterable[Path], dropped: np.ndarray = _NO_KEYS) -> None:
        """Take the ids of reports files (without the rows of ``dropped`` keys, sorted)."""
        for path in files:
            ids = _ids(path, dropped).to_pylist()
            self._merge(np.fromiter(map(hash, ids), np.int64, len(ids)))
            self._files.append((path, dropped))

    def take(self, ids: Sequence[str]) -> int | None:
        """Take ``ids`` (of the segment being written) in order; the position of the first one
        already taken, if any (then the rest of the batch is not taken)."""
        hashes = np.fromiter(map(hash, ids), np.int64, len(ids))
        at = np.searchsorted(self._hashes, hashes)
        hit = at < len(self._hashes)
        hit[hit] = self._hashes[at[hit]] == hashes[hit]
        for position, report_id in enumerate(ids):
            if report_id in self._open or (hit[position] and self._stored(report_id)):
                return position
            self._open.add(report_id)
        return None

    def segment_written(self, path: Path) -> None:
        """The segment being written is finished as reports file ``path``: its ids, taken with
        ``take``, are now kept as hashes."""
        self._merge(np.fromiter(map(hash, self._open), np.int64, len(self._open)))
        self._files.append((path, _NO_KEYS))
        self._open = set()

    def _merge(self, hashes: np.ndarray) -> None:
        """Add hashes to the sorted ones (two sorted runs: the stable sort merges them)."""
        self._hashes = np.sort(np.concatenate([self._hashes, np.sort(hashes)]), kind="stable")

    def _stored(self, report_id: str) -> bool:
        """Whether a reports file holds ``report_id`` (read only when its hash is taken)."""
        return any(pc.any(pc.equal(_ids(path, dropped), report_id)).as_py()
                   for path, dropped in self._files)


def _ids(path: Path, dropped: np.ndarray) -> pa.ChunkedArray:
    """The id column of a reports file without the rows of ``dropped`` keys."""
    table = pq.ParquetFile(path).read(["key", "id"])
    return without_keys(table, "key", dropped).column("id")
