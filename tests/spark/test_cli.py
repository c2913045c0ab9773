"""The CLI's --engine spark paths: index, add, cohort and the NOTE_NLP export, end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from typer.testing import CliRunner

from clinsearch import Index
from clinsearch.cli import app
from clinsearch.search.cohort import Cohort

SAMPLE = Path(__file__).parents[2] / "src" / "clinsearch" / "data" / "sample_reports.jsonl"


def test_index_add_cohort_and_export_on_spark(spark: Any, tmp_path: Path) -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(True)
    (tmp_path / "a.jsonl").write_text("".join(lines[:20]), encoding="utf-8")
    (tmp_path / "b.jsonl").write_text("".join(lines[20:30]), encoding="utf-8")
    runner, index = CliRunner(), tmp_path / "idx"
    spark_opts = ["--engine", "spark", "--partitions", "2"]
    result = runner.invoke(app, ["index", str(tmp_path / "a.jsonl"), "--format", "jsonl",
                                 "--out", str(index), *spark_opts])
    assert result.exit_code == 0, result.output
    assert "indexed 20 reports" in result.output
    result = runner.invoke(app, ["add", str(index), str(tmp_path / "b.jsonl"), "--format",
                                 "jsonl", *spark_opts])
    assert result.exit_code == 0 and "now holds 30" in result.output, result.output
    query = 'NOT "pleural effusion"'
    result = runner.invoke(app, ["cohort", str(index), query, "--json", "--engine", "spark"])
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert answer["counts"] == Cohort(index).counts(query)
    assert answer["wider_tiers"] is None  # not computed there, never an empty "none"
    result = runner.invoke(app, ["cohort", str(index), "pneumonia", "--engine", "spark"])
    assert result.exit_code == 0 and "wider tiers: not computed with --engine spark" in " ".join(
        result.output.split()), result.output
    out = tmp_path / "note_nlp"
    result = runner.invoke(app, ["export", "findings", str(index), "--out", str(out),
                                 "--engine", "spark"])
    assert result.exit_code == 0, result.output
    with Index.open(index) as opened:
        assert pq.read_table(out).num_rows == opened.component("findings").table().num_rows
    result = runner.invoke(app, ["export", "findings", str(index), "--out", str(out),
                                 "--engine", "spark"])
    assert result.exit_code == 2 and "use --force" in result.output
    result = runner.invoke(app, ["index", str(tmp_path / "a.jsonl"), "--format", "parquet",
                                 "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "needs --engine spark" in result.output
