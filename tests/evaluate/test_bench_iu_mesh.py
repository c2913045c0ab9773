"""IU X-ray MeSH benchmark: core, modifier and synonym queries with the shipped lexicon and map."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.cli import app
from clinsearch.corpus.model import Report
from clinsearch.evaluate.bench.benchmark import phrase, words
from clinsearch.evaluate.bench.iu_mesh import iu_mesh_benchmark
from clinsearch.evaluate.mesh import MeshMap
from clinsearch.query_file import read_benchmark_queries as read_queries
from clinsearch.trec import read_qrels

# Synthetic reports carrying IU-style MeSH cells (not real reports).
CELLS = {
    "1": "Pleural Effusion/left",
    "2": "Pleural Effusion/left/small",
    "3": "Pleural Effusion/right",
    "4": "Pleural Effusion",
    "5": "Cardiomegaly/mild",
    "6": "Cardiomegaly;Pleural Effusion/left",
    "7": "normal",
    "8": "Calcified Granuloma/lung/upper lobe/right",
    "9": "Granuloma",
}


@pytest.fixture(scope="module")
def shipped() -> tuple[Lexicon, MeshMap]:
    return Lexicon.load(), MeshMap.load()


def reports() -> list[Report]:
    texts = {"5": "The heart is enlarged.", "6": "Enlarged heart, left effusion."}
    return [
        Report(rid, texts.get(rid, "Text."), metadata={"MeSH": cell}) for rid, cell in CELLS.items()
    ]


def test_core_modifier_and_grades(shipped):
    bench = iu_mesh_benchmark(reports(), *shipped, min_relevant=1)
    kinds = {q.qid: q.kind for q in bench.queries}
    grades = bench.qrels.grades
    assert grades["core:pleural_effusion"] == dict.fromkeys(["1", "2", "3", "4", "6"], 1)
    assert grades["core:cardiomegaly"] == {"5": 1, "6": 1}
    # left: relevant 1, 2, 6; right-only 3 judged not relevant; unspecified 4 unjudged
    assert grades["mod:left_pleural_effusion"] == {"1": 1, "2": 1, "3": 0, "6": 1}
    # the map reads MeSH "small" as severity small; 1 and 6 leave severity unspecified
    assert grades["mod:small_left_pleural_effusion"] == {"2": 1, "3": 0}
    assert kinds["mod:mild_cardiomegaly"] == "modifier"
    # granuloma covers its descendant calcified granuloma (lexicon parents)
    assert {"8", "9"} <= set(grades["core:granuloma"])
    assert [q.kind for q in bench.queries] == sorted(
        (q.kind for q in bench.queries), key=["core", "modifier", "synonym"].index
    )


def test_synonyms_avoid_the_mesh_words(shipped):
    lexicon, mesh = shipped
    bench = iu_mesh_benchmark(reports(), lexicon, mesh, min_relevant=1)
    synonyms = {q.text: q for q in bench.queries if q.kind == "synonym"}
    assert synonyms, "expected synonym queries"
    for text, query in synonyms.items():
        assert not words(text) & {"cardiomegaly", "pleural", "effusion", "granuloma"}
        assert bench.qrels.grades[query.qid]  # judged like the core query
    # the corpus says "enlarged heart": the synonym chosen for cardiomegaly is the one written
    cardio = [
        q
        for q in bench.queries
        if q.kind == "synonym"
        and "5" in bench.qrels.grades[q.qid]
        and "1" not in bench.qrels.grades[q.qid]
    ]
    assert [q.text for q in cardio] == ["enlarged heart"]


def test_min_relevant_and_determinism(shipped):
    strict = iu_mesh_benchmark(reports(), *shipped, min_relevant=3)
    assert {q.qid for q in strict.queries} >= {"core:pleural_effusion", "mod:left_pleural_effusion"}
    assert "core:cardiomegaly" not in {q.qid for q in strict.queries}
    assert iu_mesh_benchmark(reports(), *shipped, min_relevant=3) == strict


def test_phrase_orders_modifiers_naturally():
    values = (("location", "lower lobe"), ("laterality", "left"), ("severity", "mild"))
    assert phrase("opacity", values) == "mild left lower lobe opacity"
    assert phrase("pleural thickening", (("location", "pleural"),)) == "pleural thickening"


@pytest.mark.slow
def test_cli_on_the_real_iu_reports(iu_csv, tmp_path):
    result = CliRunner().invoke(
        app, ["bench", "build", "iu-mesh", str(iu_csv), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    queries = read_queries(tmp_path / "queries.tsv")
    kinds = {q.kind for q in queries}
    assert kinds == {"core", "modifier", "synonym"}
    assert sum(q.kind == "core" for q in queries) >= 50
    qrels = read_qrels(tmp_path / "qrels.txt")
    assert len(qrels.relevant("core:cardiomegaly")) > 300
