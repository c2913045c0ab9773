"""Concept search and cohorts end to end: a real index (bm25, findings, concepts) of a tiny
corpus with the test lexicon, searched through the Index API and the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinsearch import Index, IndexConfig
from clinsearch.cli import app
from clinsearch.corpus.model import Report
from clinsearch.search.cohort import Cohort

from .conftest import MINI_LEXICON

CORPUS = (  # id, patient, visit, type, date, text
    ("r1", "p1", "v1", "CHEST XRAY", "2020-01-05",
     "FINDINGS: Right lower lobe pneumonia. IMPRESSION: Right lower lobe pneumonia."),
    ("r2", "p1", "v2", "CHEST XRAY", "2020-03-01",
     "FINDINGS: No pneumonia. Small left pleural effusion."),
    ("r3", "p2", "v1", "CT CHEST", "2021-06-01",
     "FINDINGS: Possible pneumonia in the left lower lobe. No pneumothorax."),
    ("r4", "p3", "v1", "CHEST XRAY", "2020-07-07",
     "FINDINGS: Enlarged heart with bilateral pleural effusions. IMPRESSION: Cardiomegaly."),
    ("r5", "p4", "v1", "CHEST XRAY", "",
     "FINDINGS: Pneumonia. Large right pneumothorax."),
    ("r6", "p5", "v1", "CHEST XRAY", "2019-12-31",
     "IMPRESSION: No acute disease. The lungs are clear."),
    ("r7", "p6", "v1", "CHEST XRAY", "2020-02-02", "FINDINGS: Old left rib fracture."),
    ("r8", "p7", "v1", "CHEST XRAY", "2020-02-03", "FINDINGS: Fracture of the humerus."),
)


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("concept") / "idx"
    lexicon = {"lexicon": str(MINI_LEXICON)}
    config = IndexConfig(components=("bm25", "findings", "concepts"),
                         options={"findings": lexicon, "concepts": lexicon})
    reports = [Report(id=i, text=t, patient_id=p, visit_id=v, type=ty, date=d)
               for i, p, v, ty, d, t in CORPUS]
    Index.build(reports, path, config, progress=False)
    return path


def test_concept_search_ranks_complete_matches_first(index_path: Path) -> None:
    hits = Index.open(index_path).search("right lower lobe pneumonia", "report", 10, "concept")
    assert [h.id for h in hits][:1] == ["r1"]
    assert "r2" not in {h.id for h in hits}  # "No pneumonia." is never returned
    top = hits[0]
    matched = top.explanation["matched"][0]
    assert matched["concept"] == "exact" and matched["polarity"] is True
    assert matched["modifiers"] == {"right": 1.0, "lower lobe": 1.0}
    assert "[pneumonia]" in top.explanation["marked"].lower()
    marked = {top.sentence[s:e].lower() for s, e in top.highlights}
    assert marked == {"right", "lower lobe", "pneumonia"}  # the finding and its modifiers


def test_polarity_options_widen_concept_search(index_path: Path) -> None:
    index = Index.open(index_path)
    plain = index.search("pneumonia", "report", 10, "concept")
    assert {h.id for h in plain[:2]} == {"r1", "r5"}  # stated now, then the hedged r3
    assert [(h.id, h.explanation["tier"]) for h in plain[2:]] == [("r3", "hedged")]
    assert plain[2].explanation["tier_label"] == "hedged, uncertain or an alternative"
    uncertain = {h.id for h in index.search("pneumonia", "report", 10, "concept",
                                            include_uncertain=True)}
    assert uncertain == {"r1", "r3", "r5"}
    anything = {h.id for h in index.search("pneumonia", "report", 10, "concept", polarity="any")}
    assert anything == {"r1", "r2", "r3", "r5"}
    negated = [h.id for h in index.search("no pneumothorax", "patient", 10, "concept")]
    assert negated == ["p2"]


def test_synonyms_and_levels(index_path: Path) -> None:
    index = Index.open(index_path)
    assert [h.id for h in index.search("enlarged heart", "patient", 10, "concept")] == ["p3"]
    visits = index.search("pneumonia", "visit", 10, "concept")
    stated = [h for h in visits if h.explanation["tier"] == "stated"]
    assert sorted((h.patient_id, h.visit_id) for h in stated) == [("p1", "v1"), ("p4", "v1")]


def test_cohort_counts_and_scopes(index_path: Path) -> None:
    cohort = Cohort(index_path)
    assert cohort.counts("pneumonia") == {"patient": 2, "visit": 2, "report": 2}
    assert cohort.counts('pneumonia AND NOT "pleural effusion"')["patient"] == 1  # p4
    assert cohort.counts("(cardiomegaly AND pleural effusion) same sentence")["report"] == 1
    assert cohort.counts('no pneumonia OR no pneumothorax')["patient"] == 2
    assert cohort.counts('pneumonia type:"chest xray" date:2020-01-01..2020-12-31')["report"] == 1
    assert cohort.counts("cardiomegaly section:impression")["report"] == 1
    assert cohort.counts("NOT (pneumonia OR cardiomegaly OR pleural effusion)")["patient"] == 4
    assert cohort.counts("fracture")["report"] == 2
    assert cohort.counts("rib fracture")["report"] == 1  # the anatomy must be in the sentence
    assert cohort.members("rib fracture", "report")[0].term == "finding|present|fracture @rib"


def test_cli_search_concept_table_json_and_trec(index_path: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["search", str(index_path), "right lower lobe pneumonia",
                                 "--method", "concept", "--format", "json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["hits"][0]["explanation"]["matched"][0]["modifiers"]["right"] == 1.0
    queries = tmp_path / "q.tsv"
    queries.write_text("q1\tpneumonia\nq2\tno pneumothorax\n", encoding="utf-8")
    trec = runner.invoke(app, ["search", str(index_path), "--queries", str(queries),
                               "--method", "concept", "--format", "trec",
                               "--include-uncertain"])
    assert trec.exit_code == 0, trec.output
    lines = [line.split() for line in trec.output.splitlines()]
    assert {(line[0], line[2]) for line in lines} >= {("q1", "r3"), ("q2", "r3")}
    table = runner.invoke(app, ["search", str(index_path), "pneumonia", "--method", "concept"])
    assert table.exit_code == 0 and "pneumonia" in table.output
    assert ("tiers: stated now with every asked modifier: 2 reports · hedged, uncertain or an"
            " alternative: 1 report") in " ".join(table.output.split())


def test_cli_search_says_each_hits_tier_and_trigger(index_path: Path) -> None:
    result = CliRunner().invoke(app, ["search", str(index_path), "pneumonia", "--method",
                                      "concept", "--format", "json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    assert record["tiers"] == [
        {"tier": "stated", "label": "stated now with every asked modifier", "count": 2},
        {"tier": "hedged", "label": "hedged, uncertain or an alternative", "count": 1}]
    hedged = record["hits"][-1]
    assert hedged["id"] == "r3" and hedged["explanation"]["tier"] == "hedged"
    assert hedged["explanation"]["trigger"]["text"].lower() == "possible"
    assert record["hits"][0]["explanation"]["trigger"] is None  # stated now: no cue
    negated = json.loads(CliRunner().invoke(app, [
        "search", str(index_path), "no pneumonia", "--method", "concept", "--format",
        "json"]).stdout)
    assert [h["id"] for h in negated["hits"]] == ["r2"]  # never the positive mentions


def test_cli_cohort_prints_counts_and_exports(index_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "ids.csv"
    result = CliRunner().invoke(app, ["cohort", str(index_path), "pneumonia OR cardiomegaly",
                                      "--level", "patient", "--export", str(out), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["counts"] == {"patient": 3, "visit": 3, "report": 3}
    with out.open(encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\r\n")
    assert lines[:2] == ["# cohort definition: pneumonia OR cardiomegaly; level patient",
                         "# tiers counted: stated, partial"]  # what was counted, as comments
    rows = list(csv.DictReader(lines[2:]))
    assert [r["patient_id"] for r in rows] == ["p1", "p3", "p4"]
    assert rows[0]["evidence_sentence"] == "Right lower lobe pneumonia."
    assert rows[0]["evidence_report_id"] == "r1"
    assert rows[0]["trigger"] == ""  # stated now
    shown = CliRunner().invoke(app, ["cohort", str(index_path), "no pneumothorax", "--show", "3"])
    assert shown.exit_code == 0, shown.output
    assert "trigger" in shown.stdout and "NEGATED_EXISTENCE" in shown.stdout


def test_cli_cohort_errors_point_at_the_query(index_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["cohort", str(index_path), "pneumonia AND NOT )"])
    assert bad.exit_code == 2
    assert "column 19" in bad.output and "                    ^" in bad.output
    unknown = runner.invoke(app, ["cohort", str(index_path), "pneumonia AND zebra stripes",
                                  "--json"])
    assert unknown.exit_code == 0  # matched as text, and said so
    assert "'zebra stripes' is not in the lexicon (nearest terms:" in unknown.stderr
    assert "is matched as text" in unknown.stderr
    assert json.loads(unknown.stdout)["counts"]["report"] == 0
    two = runner.invoke(app, ["cohort", str(index_path), '"pneumonia with effusion"'])
    assert two.exit_code == 2 and "names 2 findings" in two.output


def test_cli_explain_query(index_path: Path) -> None:
    result = CliRunner().invoke(app, ["explain-query", "RLL pneumonia or zebra",
                                      "--index", str(index_path), "--json"])
    assert result.exit_code == 0, result.output
    explained = json.loads(result.stdout)
    assert explained["groups"][0][0]["pattern"] == "disease|present|pneumonia|right|lower lobe"
    assert "lobar pneumonia" in explained["groups"][0][0]["also_matches"]
    assert explained["unknown_words"][0]["phrase"] == "zebra"


def test_cli_cohort_counts_strictly_and_says_what_wider_tiers_add(index_path: Path,
                                                                  tmp_path: Path) -> None:
    runner = CliRunner()
    strict = runner.invoke(app, ["cohort", str(index_path), "pneumonia", "--json"])
    assert strict.exit_code == 0, strict.output
    record = json.loads(strict.stdout)
    assert record["counts"] == {"patient": 2, "visit": 2, "report": 2}  # as before: asserted
    assert record["counted_tiers"] == ["stated", "partial"]
    assert record["wider_tiers"] == [{
        "tier": "hedged", "label": "hedged, uncertain or an alternative",
        "option": "--include-uncertain", "adds": {"patient": 1, "visit": 1, "report": 1}}]
    table = runner.invoke(app, ["cohort", str(index_path), "pneumonia", "--level", "report"])
    assert ("+1 report if hedged, uncertain or an alternative counts (--include-uncertain)"
            in " ".join(table.output.split()))
    wide = json.loads(runner.invoke(app, ["cohort", str(index_path), "pneumonia", "--json",
                                          "--include-uncertain"]).stdout)
    assert wide["counts"]["report"] == 3 and wide["wider_tiers"] == []
    assert wide["counted_tiers"] == ["stated", "partial", "hedged"]
    out = tmp_path / "wide.csv"
    assert runner.invoke(app, ["cohort", str(index_path), "pneumonia", "--include-uncertain",
                               "--level", "report", "--export", str(out)]).exit_code == 0
    assert out.read_text(encoding="utf-8").splitlines()[:2] == [
        "# cohort definition: pneumonia; level report",
        "# tiers counted: stated, partial, hedged"]
