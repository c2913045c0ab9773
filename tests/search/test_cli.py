"""The CLI end to end: index, add, delete, search, info, demo, and every bad-input path."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinsearch import Index
from clinsearch.cli import app

CSV = (
    "rid,pid,body,when\n"
    "r1,p1,No pneumothorax. Heart size is normal.,2020-01-02\n"
    "r2,p1,Small left pleural effusion.,2020-02-03\n"
    "r3,p2,Right lower lobe pneumonia.,2020-03-04\n"
)
MORE = '{"id": "r4", "patient_id": "p3", "text": "Large right pneumothorax."}\n'


def run(*args: str | Path) -> tuple[int, str, str]:
    """Run the CLI in-process: exit code, stdout, stderr."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "reports.csv"
    path.write_text(CSV, encoding="utf-8")
    return path


@pytest.fixture
def built(tmp_path: Path, corpus: Path) -> Path:
    out = tmp_path / "idx"
    code, stdout, _ = run(
        "index",
        corpus,
        "--format",
        "csv",
        "--out",
        out,
        "--id-column",
        "rid",
        "--text-columns",
        "body",
        "--patient-column",
        "pid",
        "--date-column",
        "when",
    )
    assert code == 0, stdout
    assert "indexed 3 reports (3 sentences" in stdout or "indexed 3 reports" in stdout
    return out


def _error(code: int, stderr: str, message: str) -> None:
    """A user error: exit 2, one line naming the problem, no traceback."""
    assert code == 2
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and message in lines[0], stderr


def test_index_add_delete_search_info(tmp_path: Path, built: Path) -> None:
    more = tmp_path / "more.jsonl"
    more.write_text(MORE, encoding="utf-8")
    code, stdout, _ = run("add", built, more, "--format", "jsonl")
    assert code == 0 and "added 1 reports; the index now holds 4" in stdout
    code, stdout, _ = run("search", built, "pneumothorax", "--level", "patient", "--format", "trec",
                          "--method", "bm25")
    assert code == 0
    assert sorted(line.split()[2] for line in stdout.splitlines()) == ["p1", "p3"]
    code, stdout, _ = run("delete", built, "--ids", "r4,r2")
    assert code == 0 and "deleted 2 reports; the index now holds 2" in stdout
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("r1\n\n", encoding="utf-8")
    assert run("delete", built, "--ids-file", ids_file)[0] == 0
    code, stdout, _ = run("info", built, "--json")
    manifest = json.loads(stdout)
    assert manifest["counts"] == {"reports": 1, "sentences": 1, "visits": 1, "patients": 1}
    assert manifest["generation"] == 4
    code, stdout, _ = run("info", built)
    assert code == 0 and "clinsearch-index" in stdout


def test_search_formats(built: Path) -> None:
    code, stdout, _ = run("search", built, "pleural effusion", "--top", "1",
                          "--method", "bm25")
    assert code == 0 and "r2" in stdout and "Small left pleural effusion." in stdout
    code, stdout, _ = run("search", built, "effusion", "--format", "json", "--level", "sentence",
                          "--method", "bm25")
    record = json.loads(stdout)
    assert record["hits"][0]["id"] == "r2#0" and record["level"] == "sentence"
    code, stdout, _ = run(
        "search", built, "pneumothorax", "--whole-report", "--format", "trec", "--tag", "x",
        "--method", "bm25",
    )
    assert stdout.split() == ["1", "Q0", "r1", "1", stdout.split()[4], "x"]


def test_batch_queries(tmp_path: Path, built: Path) -> None:
    queries = tmp_path / "q.tsv"
    queries.write_text("qid\tquery\nq1\tpneumonia\textra\nq2\teffusion\n", encoding="utf-8")
    code, stdout, _ = run("search", built, "--queries", queries, "--format", "trec",
                          "--method", "bm25")
    assert code == 0
    assert [line.split()[:3] for line in stdout.splitlines()] == [
        ["q1", "Q0", "r3"],
        ["q2", "Q0", "r2"],
    ]
    code, stdout, _ = run("search", built, "--queries", queries, "--format", "json",
                          "--method", "bm25")
    assert [json.loads(line)["qid"] for line in stdout.splitlines()] == ["q1", "q2"]
    code, stdout, _ = run("search", built, "--queries", queries,
                          "--method", "bm25")
    assert "q1: pneumonia" in stdout and "q2: effusion" in stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["index", "{tmp}/missing.csv", "--format", "csv", "--out", "{tmp}/o"],
            "missing.csv: no such file",
        ),
        (["index", "{corpus}", "--format", "xml", "--out", "{tmp}/o"], "unknown format 'xml'"),
        (
            ["index", "{corpus}", "--format", "csv", "--out", "{tmp}/o"],
            "field 'id': missing column(s) 'id', 'text'",
        ),
        (
            [
                "index",
                "{corpus}",
                "--format",
                "csv",
                "--out",
                "{tmp}/o",
                "--id-column",
                "rid",
                "--text-columns",
                "nope",
            ],
            "nope",
        ),
        (
            ["index", "{corpus}", "--format", "iu-xray", "--out", "{tmp}/o", "--id-column", "rid"],
            "takes no option id_column",
        ),
        (
            ["index", "{empty}", "--format", "jsonl", "--out", "{tmp}/o"],
            "empty.jsonl: no reports found",
        ),
        (
            ["index", "{dup}", "--format", "jsonl", "--out", "{tmp}/o"],
            "dup.jsonl:2: field 'id': duplicate id 'a'",
        ),
        (
            [
                "index",
                "{corpus}",
                "--format",
                "csv",
                "--out",
                "{tmp}",
                "--id-column",
                "rid",
                "--text-columns",
                "body",
            ],
            "not empty and is not a clinsearch index",
        ),
    ],
)
def test_index_bad_input(tmp_path: Path, corpus: Path, args: list[str], message: str) -> None:
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    (tmp_path / "dup.jsonl").write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    names = {
        "tmp": tmp_path,
        "corpus": corpus,
        "empty": tmp_path / "empty.jsonl",
        "dup": tmp_path / "dup.jsonl",
    }
    code, _, stderr = run(*(a.format(**names) for a in args))
    _error(code, stderr, message)
    assert not (tmp_path / "o").exists()  # never a half-written index


def test_skip_bad_counts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "text": "Effusion."}\n{"id": "b", "text": ""}\nnot json\n', encoding="utf-8"
    )
    code, stdout, stderr = run(
        "index", bad, "--format", "jsonl", "--out", tmp_path / "o", "--skip-bad"
    )
    assert code == 0 and "indexed 1 reports" in stdout
    assert "skipped 2 bad records" in stderr and "bad.jsonl:2" in stderr


def test_change_bad_input_keeps_index(tmp_path: Path, built: Path, corpus: Path) -> None:
    current = (built / "CURRENT").read_text()
    again = tmp_path / "again.jsonl"
    again.write_text('{"id": "r2", "text": "Again."}\n', encoding="utf-8")
    _error(
        *run("add", built, again, "--format", "jsonl")[::2],
        "again.jsonl:1: field 'id': duplicate report id 'r2'",
    )
    _error(*run("add", tmp_path, again, "--format", "jsonl")[::2], "not a clinsearch index")
    _error(
        *run("delete", built, "--ids", "r1,zz")[::2], "field 'ids': 1 id(s) not in the index: 'zz'"
    )
    _error(*run("delete", built)[::2], "give exactly one of --ids or --ids-file")
    ids = tmp_path / "ids.txt"
    ids.write_text("r1\nzz\n", encoding="utf-8")
    _error(
        *run("delete", built, "--ids-file", ids)[::2],
        "ids.txt:2: field 'id': id 'zz' is not in the index",
    )
    assert (built / "CURRENT").read_text() == current
    assert Index.open(built).manifest.counts.reports == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{idx}"], "give a query or --queries FILE"),
        (["{idx}", "x", "--queries", "{q}"], "give a query or --queries FILE (not both)"),
        (["{idx}", "x", "--level", "ward"], "unknown level 'ward'"),
        (["{idx}", "x", "--format", "xml"], "unknown output format 'xml'"),
        (["{idx}", "x", "--method", "magic"], "unknown search method 'magic'"),
        (["{idx}", " "], "field 'query': empty query"),
        (["{tmp}/nowhere", "x"], "no such index directory"),
        (["{idx}", "--queries", "{q}"], "q.tsv:2: expected 'qid<TAB>query'"),
    ],
)
def test_search_bad_input(tmp_path: Path, built: Path, args: list[str], message: str) -> None:
    (tmp_path / "q.tsv").write_text("q1\tfine\nbroken line\n", encoding="utf-8")
    names = {"idx": built, "q": tmp_path / "q.tsv", "tmp": tmp_path}
    code, _, stderr = run("search", *(a.format(**names) for a in args))
    _error(code, stderr, message)


def test_top_must_be_positive(built: Path) -> None:
    code, _, stderr = run("search", built, "x", "--top", "0")
    assert code == 2 and "Traceback" not in stderr


def test_demo_runs_as_a_module(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = subprocess.run(
        [sys.executable, "-m", "clinsearch", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )
    assert result.returncode == 0, result.stderr
    assert "indexed the bundled sample" in result.stdout
    # Each step prints its command, then its results: split the output at the commands.
    steps = {
        line.partition(str(out))[2].strip(): body
        for line, _, body in (
            part.partition("\n") for part in result.stdout.split("$ clinsearch ")[1:]
        )
    }
    bm25 = steps["pneumothorax --level report --top 5 --method bm25"]
    concept = steps["pneumothorax --level report --top 5 --method concept"]
    assert "No pneumothorax." in bm25
    assert "pneumothorax" in concept and "No pneumothorax" not in concept
    assert "cardiomegaly" in steps["'enlarged heart' --level report --top 5 --method concept"]
    rll = steps["'right lower lobe pneumonia' --level patient --top 5 --method concept"]
    assert "lower lobe ✓" in rll
    cohort = steps["""'pneumonia AND NOT "pleural effusion"' --level patient --show 3"""]
    assert re.search(r"patients\s+[1-9]", cohort) and "present|pneumonia" in cohort
    assert Index.open(out).manifest.counts.reports > 100


def test_module_error_has_no_traceback(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clinsearch", "search", str(tmp_path), "x"],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {tmp_path}: not a clinsearch index (no CURRENT file)"
