"""Duplicate report ids are refused across segments and the index added to, by hash and file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clinsearch.index.taken_ids import TakenIds


def _reports(path: Path, ids: list[str]) -> Path:
    pq.write_table(pa.table({"key": pa.array(range(len(ids)), pa.int64()), "id": ids}), path)
    return path


def test_taken_ids_across_segments_and_files(tmp_path: Path) -> None:
    taken = TakenIds()
    taken.add_files([_reports(tmp_path / "old.parquet", ["a", "b", "c"])], np.array([1]))
    assert taken.take(["x", "b", "y"]) is None  # "b" (key 1) is deleted: its id is free again
    assert taken.take(["z", "y"]) == 1  # earlier in the same segment
    taken.segment_written(_reports(tmp_path / "new.parquet", ["x", "b", "y", "z"]))
    assert taken.take(["q", "c"]) == 1  # in the index added to
    assert taken.take(["x"]) == 0  # in a finished segment


def test_a_hash_collision_is_not_a_duplicate(tmp_path: Path) -> None:
    taken = TakenIds()
    taken.add_files([_reports(tmp_path / "old.parquet", ["a"])])
    taken._merge(np.array([hash("b")], np.int64))  # as if "a" hashed like "b"
    assert taken.take(["b"]) is None
