"""`clinsearch eval` on files: formats, plots, and clean errors (exit 2, no traceback)."""

from __future__ import annotations

import json
import sys

import pytest

from clinsearch.cli import main


def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """Run the CLI with ``args``; return (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["clinsearch", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_markdown_with_groups_and_plots(monkeypatch, capsys, toy_files, tmp_path):
    qrels, run = toy_files
    second = tmp_path / "second.run"
    second.write_text(run.read_text().replace("A Q0 d3 1 0.9", "A Q0 d3 1 0.1"))
    groups = tmp_path / "q.tsv"
    groups.write_text("qid\tquery\tkind\nA\tatelectasis\t\nB\tno effusion\t\nC\tgranuloma\t\n")
    code, out, err = run_cli(
        monkeypatch,
        capsys,
        "eval",
        "--qrels",
        str(qrels),
        "--run",
        str(run),
        str(second),
        "--groups",
        str(groups),
        "-m",
        "map,mrr",
        "--format",
        "markdown",
        "--plot-dir",
        str(tmp_path / "plots"),
    )
    assert code == 0, err
    assert "| positive | 2 | toy | 0.167 | 0.250 | ×1.00 |" in out  # A and C: (1/3 + 0) / 2
    assert "| negative | 1 | second |" in out
    assert "no relevant document" in err
    assert (tmp_path / "plots" / "metrics_by_group.png").exists()


def test_json_and_table(monkeypatch, capsys, toy_files):
    qrels, run = toy_files
    code, out, _ = run_cli(
        monkeypatch,
        capsys,
        "eval",
        "--qrels",
        str(qrels),
        "--run",
        str(run),
        "--format",
        "json",
        "-m",
        "bpref",
    )
    assert code == 0
    # bpref of B is 1: no judged non-relevant document can rank above its relevant ones
    assert json.loads(out)["groups"]["all"]["runs"]["toy"]["bpref"]["mean"] == pytest.approx(
        (1 / 3 + 1 + 0) / 3
    )
    code, out, _ = run_cli(
        monkeypatch, capsys, "eval", "--qrels", str(qrels), "--run", str(run), "--per-query"
    )
    assert code == 0 and "nDCG@10" in out and "Recall@100" in out


@pytest.mark.parametrize(
    ("run_text", "extra", "message"),
    [
        ("A Q0 d1 1 0.9\n", (), "toy.run:1: expected 6 columns"),
        ("A Q0 d1 1 x toy\n", (), "field 'score'"),
        ("Z Q0 d1 1 1 toy\nA Q0 d1 1 1 toy\n", (), "toy.run:1: field 'qid': query 'Z'"),
        ("A Q0 d1 1 1 toy\n", ("-m", "nope"), "unknown metric 'nope'"),
        ("A Q0 d1 1 1 toy\n", ("--format", "html"), "unknown format"),
    ],
)
def test_user_errors_exit_2_with_a_clear_line(
    monkeypatch, capsys, toy_files, run_text, extra, message
):
    qrels, run = toy_files
    run.write_text(run_text)
    code, _, err = run_cli(
        monkeypatch, capsys, "eval", "--qrels", str(qrels), "--run", str(run), *extra
    )
    assert code == 2
    assert message in " ".join(err.split())
    assert "Traceback" not in err


def test_bad_qrels_file(monkeypatch, capsys, toy_files):
    qrels, run = toy_files
    qrels.write_text("A 0 d1 yes\n")
    code, _, err = run_cli(monkeypatch, capsys, "eval", "--qrels", str(qrels), "--run", str(run))
    assert code == 2 and "toy.qrels:1: field 'relevance'" in " ".join(err.split())
