"""Passage-level (entity, section) benchmark: passages, queries, relevance, and the CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from clinsearch.annotate.finding import Finding, Modifier
from clinsearch.cli import app
from clinsearch.corpus.model import Report, Section, SegmentedReport, Sentence
from clinsearch.evaluate.bench.passages import passage_benchmark
from clinsearch.query_file import read_benchmark_queries as read_queries
from clinsearch.trec import read_qrels

from .conftest import MINI_LEXICON, SENTENCES


def doc(rid: str, findings_text: str, impression: str) -> SegmentedReport:
    """A report with a findings and an impression section, one sentence each."""
    text = f"FINDINGS: {findings_text}\nIMPRESSION: {impression}"
    cut = text.index("\nIMPRESSION")
    sections = (Section("findings", 0, cut), Section("impression", cut + 1, len(text)))
    sentences = (
        Sentence(f"{rid}#0", rid, 0, "findings", 10, cut, findings_text),
        Sentence(f"{rid}#1", rid, 1, "impression", cut + 13, len(text), impression),
    )
    return SegmentedReport(Report(rid, text), sections, sentences)


def effusion(side: str = "", polarity: str = "present") -> Finding:
    mods = (Modifier("laterality", side, side, 0, len(side)),) if side else ()
    return Finding("pleural_effusion", "pleural effusion", "finding", "x", 0, 1, polarity, (), mods)


def test_passages_queries_and_relevance():
    docs = [
        (doc("a", "Right effusion.", "Effusion."), [[effusion("right")], [effusion()]]),
        (
            doc("b", "Right effusion.", "No effusion."),
            [[effusion("right")], [effusion("", "absent")]],
        ),
        (doc("c", "Left effusion.", "Clear."), [[effusion("left")], []]),
    ]
    built = passage_benchmark(docs, max_relevant=2, max_queries=10)
    assert [p.id for p in built.passages] == [
        "a@findings",
        "a@impression",
        "b@findings",
        "b@impression",
        "c@findings",
        "c@impression",
    ]
    assert built.passages[0].text == "FINDINGS: Right effusion."
    queries = {q.text: q for q in built.bench.queries}
    assert set(queries) == {
        "right pleural effusion findings",
        "left pleural effusion findings",
        "pleural effusion impression",
    }
    grades = built.bench.qrels.grades
    assert grades[queries["right pleural effusion findings"].qid] == {
        "a@findings": 1,
        "b@findings": 1,
    }
    assert grades[queries["pleural effusion impression"].qid] == {"a@impression": 1}
    assert queries["pleural effusion impression"].kind == "impression"
    fewer = passage_benchmark(docs, max_relevant=1, max_queries=10)
    assert "right pleural effusion findings" not in {q.text for q in fewer.bench.queries}
    sampled = passage_benchmark(docs, max_relevant=2, max_queries=2, seed=5)
    assert len(sampled.bench.queries) == 2
    assert passage_benchmark(docs, max_relevant=2, max_queries=2, seed=5) == sampled


def test_repeated_section_names_get_distinct_ids():
    text = "IMPRESSION: Effusion.\nIMPRESSION: Effusion."
    sections = (Section("impression", 0, 21), Section("impression", 22, len(text)))
    sentences = (
        Sentence("r#0", "r", 0, "impression", 12, 21, "Effusion."),
        Sentence("r#1", "r", 1, "impression", 34, len(text), "Effusion."),
    )
    built = passage_benchmark(
        [(SegmentedReport(Report("r", text), sections, sentences), [[effusion()], [effusion()]])]
    )
    assert [p.id for p in built.passages] == ["r@impression", "r@impression-2"]
    assert built.bench.qrels.grades["psg0001"] == {"r@impression": 1, "r@impression-2": 1}


def test_cli_builds_a_corpus_that_indexes_and_evaluates(tmp_path):
    corpus = tmp_path / "notes.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in SENTENCES.items())
    )
    out = tmp_path / "psg"
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "bench",
            "build",
            "passages",
            str(corpus),
            "--format",
            "jsonl",
            "--out",
            str(out),
            "--lexicon",
            str(MINI_LEXICON),
        ],
    )
    assert result.exit_code == 0, result.output
    queries = {q.text: q for q in read_queries(out / "queries.tsv")}
    assert queries["right pneumothorax impression"].kind == "impression"
    qrels = read_qrels(out / "qrels.txt")
    assert qrels.relevant(queries["right pneumothorax impression"].qid) == {"r6@impression"}
    result = runner.invoke(
        app,
        ["index", str(out / "passages.jsonl"), "--format", "jsonl", "--out", str(tmp_path / "idx")],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        app,
        [
            "eval",
            "--index",
            str(tmp_path / "idx"),
            "--queries",
            str(out / "queries.tsv"),
            "--qrels",
            str(out / "qrels.txt"),
            "--method",
            "bm25",
            "-m",
            "recall@1,recall@5",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{") :])
    assert 0 < data["groups"]["all"]["runs"]["bm25"]["Recall@5"]["mean"] <= 1
