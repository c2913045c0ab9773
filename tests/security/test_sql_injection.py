"""Item 2: no path or user string reaches DuckDB as SQL text (a hostile folder name is data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clinsearch.duck import connect
from clinsearch.index import IndexStore
from clinsearch.search.cohort import Cohort

from .hostile import HOSTILE_NAME, run


def test_findings_sql_in_a_hostile_folder_runs_no_injected_statement(
    built_once: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    table = IndexStore.open(built_once).component("findings").sql(
        "SELECT count(DISTINCT report_id) AS n FROM findings")
    assert table.column("n")[0].as_py() >= 3
    assert not (tmp_path / "pwned.csv").exists()


def test_cohort_and_cli_in_a_hostile_folder(built_once: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Cohort(built_once).counts("pneumonia")["report"] == 1
    code, _, err = run("cohort", built_once, "pleural effusion", "--json")
    assert code == 0, err
    assert not (tmp_path / "pwned.csv").exists()
    assert HOSTILE_NAME in str(built_once)


def test_sql_on_the_findings_table_cannot_touch_files(built_once: Path, tmp_path: Path) -> None:
    findings = IndexStore.open(built_once).component("findings")
    target = tmp_path / "copy.csv"
    with pytest.raises(Exception, match="disabled"):
        findings.sql(f"COPY (SELECT * FROM findings) TO '{target}'")
    assert not target.exists()


def test_glob_characters_in_a_path_are_not_expanded(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name in ("a1.parquet", "a2.parquet", "a*.parquet"):
        pq.write_table(pa.table({"x": [1]}), tmp_path / name)
    with connect({"t": tmp_path / "a*.parquet"}) as con:
        assert con.execute("SELECT count(*) FROM t").fetchall() == [(1,)]
    assert os.path.exists(tmp_path / "a*.parquet")
