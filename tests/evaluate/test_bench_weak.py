"""Sentence-level weak-label benchmark: queries, grades, the 2-fold split, and the CLI."""

from __future__ import annotations

from typer.testing import CliRunner

from clinsearch.annotate.finding import Finding
from clinsearch.cli import app
from clinsearch.evaluate.bench.weak import split_findings, weak_benchmark
from clinsearch.query_file import read_benchmark_queries as read_queries
from clinsearch.trec import read_qrels

from .conftest import MINI_LEXICON


def f(name: str, polarity: str = "present", context: tuple[str, ...] = (), type_="finding"):
    """A finding record as the annotator would give it."""
    return Finding(name.replace(" ", "_"), name, type_, name, 0, len(name), polarity, context)


LABELLED = [
    ("s1", [f("effusion"), f("edema", "absent")]),
    ("s2", [f("effusion")]),
    ("s3", [f("effusion", "absent"), f("edema", "absent")]),
    ("s4", [f("edema"), f("effusion", "uncertain")]),
    ("s5", [f("edema"), f("pneumonia", "present", ("hypothetical",), "disease")]),
    ("s6", [f("pneumonia", type_="disease"), f("lung", type_="anatomy")]),
    ("s7", [f("pneumonia", type_="disease"), f("pneumonia", type_="disease")]),
]


def test_queries_and_grades():
    weak = weak_benchmark(LABELLED, min_relevant=2)
    got = {q.qid: (q.text, q.kind) for q in weak.all.queries}
    assert got == {
        "neg:edema": ("no edema", "negative"),
        "pos:edema": ("edema", "positive"),
        "pos:effusion": ("effusion", "positive"),
        "pos:pneumonia": ("pneumonia", "positive"),
    }
    grades = weak.all.qrels.grades
    assert grades["pos:effusion"] == {"s1": 1, "s2": 1, "s3": 0}  # s3 rules it out: judged 0
    assert grades["neg:edema"] == {"s1": 1, "s3": 1, "s4": 0, "s5": 0}
    assert grades["pos:pneumonia"] == {"s6": 1, "s7": 1}  # hypothetical s5 is no label


def test_folds_share_no_finding_and_cover_everything():
    weak = weak_benchmark(LABELLED, min_relevant=1)
    names = [{q.text.removeprefix("no ") for q in fold.queries} for fold in weak.folds]
    assert names[0] and names[1] and not names[0] & names[1]
    assert names[0] | names[1] == {q.text.removeprefix("no ") for q in weak.all.queries}
    for fold in weak.folds:
        assert set(fold.qrels.grades) == {q.qid for q in fold.queries}
    assert weak_benchmark(LABELLED, min_relevant=1, seed=0) == weak


def test_split_balances_entries_deterministically():
    entries = {"a": 10, "b": 9, "c": 5, "d": 4, "e": 1}
    fold = split_findings(entries, seed=3)
    load = {k: sum(n for name, n in entries.items() if fold[name] == k) for k in (1, 2)}
    assert abs(load[1] - load[2]) <= 1
    assert split_findings(entries, seed=3) == fold


def test_cli_builds_and_evaluates_on_an_index(mini_index, tmp_path):
    out = tmp_path / "weak"
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "bench",
            "build",
            "weak-sentences",
            "--index",
            str(mini_index),
            "--out",
            str(out),
            "--lexicon",
            str(MINI_LEXICON),
            "--min-relevant",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    queries = {q.qid: q for q in read_queries(out / "queries.tsv")}
    assert queries["neg:pneumothorax"].text == "no pneumothorax"
    assert queries["neg:pneumothorax"].kind == "negative"
    qrels = read_qrels(out / "qrels.txt")
    assert qrels.relevant("pos:pneumothorax") == {"r6#1", "r6#2"}  # both sections
    assert (out / "fold1" / "queries.tsv").exists() and (out / "fold2" / "qrels.txt").exists()
    assert (out / "split.tsv").read_text().startswith("finding\tfold\tentries\n")
    result = runner.invoke(
        app,
        [
            "eval",
            "--index",
            str(mini_index),
            "--queries",
            str(out / "queries.tsv"),
            "--qrels",
            str(out / "qrels.txt"),
            "--method",
            "bm25",
            "--method",
            "bm25:whole_report=true",
            "--level",
            "sentence",
            "--format",
            "markdown",
            "-m",
            "map",
            "--save-runs",
            str(tmp_path / "runs"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "| negative |" in result.output and "| bm25:whole_report=true |" in result.output
    assert (tmp_path / "runs" / "bm25.run").exists()


def test_cli_rejects_a_bad_method_option(mini_index, tmp_path):
    (tmp_path / "q.tsv").write_text("q1\tpneumothorax\n")
    (tmp_path / "q.qrels").write_text("q1 0 r6#0 1\n")
    result = CliRunner().invoke(
        app,
        [
            "eval",
            "--index",
            str(mini_index),
            "--queries",
            str(tmp_path / "q.tsv"),
            "--qrels",
            str(tmp_path / "q.qrels"),
            "--method",
            "bm25:oops",
        ],
    )
    assert result.exit_code == 2
    assert "not key=value" in result.output
