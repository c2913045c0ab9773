"""Item 4: exports never overwrite silently, never land in an index, are private and
formula-safe; index files are private too (configurable)."""

from __future__ import annotations

import csv
import stat
from pathlib import Path

import pytest

from clinsearch.corpus.model import Report
from clinsearch.exports import csv_cell
from clinsearch.index import IndexStore

from .hostile import one_line_error, run


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_export_refuses_to_overwrite_without_force(index_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "ids.csv"
    out.write_text("precious\n")
    line = one_line_error(*run("cohort", index_dir, "pneumonia", "--export", out)[::2])
    assert "exists; use --force" in line and out.read_text() == "precious\n"
    code, _, err = run("cohort", index_dir, "pneumonia", "--export", out, "--force")
    assert code == 0, err
    assert "patient_id" in out.read_text()
    assert _mode(out) == 0o600


def test_export_never_writes_inside_an_index(index_dir: Path) -> None:
    current = index_dir / "CURRENT"
    before = current.read_text()
    for target in (current, index_dir / "new.csv"):
        line = one_line_error(
            *run("cohort", index_dir, "pneumonia", "--export", target, "--force")[::2])
        assert "inside an index directory" in line
    assert current.read_text() == before
    assert IndexStore.open(index_dir).manifest.counts.reports == 4


def test_export_to_a_folder_or_a_missing_folder(index_dir: Path, tmp_path: Path) -> None:
    assert "is a directory" in one_line_error(
        *run("cohort", index_dir, "pneumonia", "--export", tmp_path)[::2])
    assert "does not exist" in one_line_error(
        *run("cohort", index_dir, "pneumonia", "--export", tmp_path / "no" / "x.csv")[::2])


def test_csv_cells_are_neutralised_against_formulas(tmp_path: Path) -> None:
    assert [csv_cell(v) for v in ("=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "ok", None)] == [
        "'=1+2", "'+1", "'-1", "'@SUM(A1)", "'\tx", "'\rx", "ok", ""]
    reports = [Report(id="=HYPERLINK(\"http://x\")", text="=cmd|' /C calc'!A0 pneumonia.",
                      patient_id="@p1", visit_id="+v1")]
    IndexStore.build(reports, tmp_path / "idx", progress=False)
    out = tmp_path / "cohort.csv"
    code, _, err = run("cohort", tmp_path / "idx", "pneumonia", "--level", "report",
                       "--export", out)
    assert code == 0, err
    rows = list(csv.reader(out.open(encoding="utf-8")))[2:]  # after the two '#' lines
    assert "'=HYPERLINK(\"http://x\")" in rows[1] and "'@p1" in rows[1]
    assert rows[1][-1].startswith("'=cmd|")
    assert all(not cell.startswith(("=", "+", "-", "@")) for cell in rows[1])


def test_index_files_are_private_and_the_umask_is_configurable(
    tmp_path: Path, reports: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = IndexStore.build(reports, tmp_path / "private", progress=False).path
    for path in root.rglob("*"):
        if path.name != ".lock":
            assert _mode(path) == (0o700 if path.is_dir() else 0o600), path
    monkeypatch.setenv("CLINSEARCH_UMASK", "027")
    root = IndexStore.build(reports, tmp_path / "group", progress=False).path
    files = [p for p in root.rglob("*") if p.is_file() and p.name != ".lock"]
    assert files and all(_mode(p) == 0o640 for p in files)
    monkeypatch.setenv("CLINSEARCH_UMASK", "banana")
    assert "not an octal umask" in one_line_error(*run("info", root)[::2])
