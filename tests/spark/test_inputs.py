"""Spark engine inputs: Parquet files and Spark tables, bad rows, duplicates, dense vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report
from clinsearch.errors import InputError
from clinsearch.spark import build_index

from ..tiny_models import build_tiny_bert

ROWS = [
    {"note_id": "n1", "pid": "p1", "note_text": "FINDINGS: Small left pleural effusion.",
     "site": "A"},
    {"note_id": "n2", "pid": "p1", "note_text": "IMPRESSION: No pneumothorax. Heart normal.",
     "site": "B"},
    {"note_id": "n3", "pid": "p2", "note_text": "FINDINGS: Right lower lobe pneumonia.",
     "site": "A"},
]
MAPPING = {"id_column": "note_id", "text_columns": "note_text", "patient_column": "pid"}


def _reports(rows: list[dict[str, str]], name: str) -> list[Report]:
    return [Report(id=r["note_id"], text=r["note_text"], patient_id=r["pid"],
                   metadata={"site": r["site"]}, source=f"{name}:{i + 1}")
            for i, r in enumerate(rows)]


def test_parquet_and_table_inputs_give_the_local_index(spark: Any, tmp_path: Path) -> None:
    source = tmp_path / "notes.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), source)
    local = Index.build(_reports(ROWS, str(source)), tmp_path / "local", progress=False)
    from_file = build_index(spark, source, tmp_path / "file", "parquet", progress=False,
                            **MAPPING)
    spark.createDataFrame(ROWS).createOrReplaceTempView("notes")
    from_table = build_index(spark, "notes", tmp_path / "table", "spark-table",
                             progress=False, **MAPPING)
    want = {n: local.generation.table(n).drop(["source"])
            if n == "reports" else local.generation.table(n)
            for n in ("reports", "sentences", "findings")}
    for index in (from_file, from_table):
        for name, table in want.items():
            got = index.generation.table(name)
            assert got.select(table.column_names).equals(table), name
    assert from_file.generation.table("reports").column(
        "source").to_pylist() == [f"{source}:{i}" for i in (1, 2, 3)]


def test_bad_rows_and_duplicates_are_input_errors(spark: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.Table.from_pylist([*ROWS, {**ROWS[0], "note_id": "n4", "note_text": " "}]),
                   bad)
    with pytest.raises(InputError, match=r"bad.parquet:4: field 'note_text': empty text"):
        build_index(spark, bad, tmp_path / "x", "parquet", progress=False, **MAPPING)
    assert not (tmp_path / "x").exists()
    dup = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_pylist([*ROWS, ROWS[1]]), dup)
    with pytest.raises(InputError, match=r"dup.parquet:4: field 'id': duplicate report id 'n2'"):
        build_index(spark, dup, tmp_path / "y", "parquet", progress=False, **MAPPING)
    with pytest.raises(InputError, match="no column 'nope'"):
        build_index(spark, dup, tmp_path / "z", "parquet", progress=False, id_column="nope")


def test_dense_vectors_are_computed_by_executors(spark: Any, tmp_path: Path) -> None:
    model = build_tiny_bert(tmp_path / "tiny")
    config = IndexConfig(components=("bm25", "dense"),
                         options={"dense": {"model": str(model)}})
    source = tmp_path / "notes.parquet"
    pq.write_table(pa.Table.from_pylist(ROWS), source)
    local = Index.build(_reports(ROWS, str(source)), tmp_path / "local", config, progress=False)
    remote = build_index(spark, source, tmp_path / "spark", "parquet", config=config,
                         progress=False, **MAPPING)
    a, b = (index.generation.path / "dense" for index in (local, remote))
    rows, vectors = "rows-000001.parquet", "vectors-000001.npy"  # one segment each
    assert pq.read_table(a / rows).equals(pq.read_table(b / rows))
    np.testing.assert_allclose(np.load(a / vectors), np.load(b / vectors), atol=1e-5)
    assert remote.search("pleural effusion", method="dense", top=1)[0].id == \
        local.search("pleural effusion", method="dense", top=1)[0].id
