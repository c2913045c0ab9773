"""Comparisons: query groups, unknown run queries, significance vs the baseline, rendering."""

from __future__ import annotations

import json

import pytest

from clinsearch.errors import InputError
from clinsearch.evaluate import render
from clinsearch.evaluate.compare import ALL, compare_runs, query_groups
from clinsearch.evaluate.measures import parse_measure
from clinsearch.query_file import Query
from clinsearch.trec import Qrels, Run, read_qrels, read_run

MAP = [parse_measure("map")]


def test_groups_follow_kind_then_all():
    queries = [
        Query("1", "effusion", "positive"),
        Query("2", "no effusion", "negative"),
        Query("3", "edema", "positive"),
    ]
    assert query_groups(["1", "2", "3"], queries) == {
        "positive": ["1", "3"],
        "negative": ["2"],
        ALL: ["1", "2", "3"],
    }
    assert query_groups(["1", "2"], None) == {ALL: ["1", "2"]}


def _synthetic(n: int = 20) -> tuple[Qrels, Run, Run]:
    """n queries with one relevant doc: run 'good' ranks it first, 'bad' ranks it third."""
    grades = {f"q{i}": {"rel": 1} for i in range(n)}
    good = {q: {"rel": 3.0, "x": 2.0, "y": 1.0} for q in grades}
    bad = {q: {"x": 3.0, "y": 2.0, "rel": 1.0} for q in grades}
    return Qrels(grades), Run("good", good), Run("bad", bad)


def test_group_means_and_significance_vs_baseline():
    qrels, good, bad = _synthetic()
    queries = [Query(f"q{i}", "m", "even" if i % 2 == 0 else "odd") for i in range(20)]
    comp = compare_runs(qrels, [bad, good], MAP, queries)
    assert comp.baseline == "bad"
    assert comp.mean("bad", "MAP") == pytest.approx(1 / 3)
    assert comp.mean("good", "MAP", "even") == 1.0
    test = comp.tests[("odd", "good", "MAP")]
    assert test.n == 10
    assert test.mean_difference == pytest.approx(2 / 3)
    assert test.p_randomization < 0.01
    assert ("all", "bad", "MAP") not in comp.tests  # the baseline is not tested against itself


def test_unknown_run_queries_error_or_warn(toy_files, tmp_path):
    qrels = read_qrels(toy_files[0])
    extra = tmp_path / "extra.run"
    extra.write_text(toy_files[1].read_text() + "Z Q0 d1 1 1.0 toy\n")
    with pytest.raises(InputError, match="'Z' is not in the qrels") as err:
        compare_runs(qrels, [read_run(extra)], MAP)
    assert (err.value.line, err.value.field) == (10, "qid")
    comp = compare_runs(qrels, [read_run(extra)], MAP, allow_unknown=True)
    assert any("ignored 1 queries" in w for w in comp.warnings)
    assert any("no relevant document" in w for w in comp.warnings)  # query D


def test_run_sharing_no_query_is_always_an_error(toy_files, tmp_path):
    other = tmp_path / "other.run"
    other.write_text("Z Q0 d1 1 1.0 t\n")
    with pytest.raises(InputError, match="not in the qrels"):
        compare_runs(read_qrels(toy_files[0]), [read_run(other)], MAP, allow_unknown=True)


def test_duplicate_run_names_are_rejected():
    qrels, good, _ = _synthetic(3)
    with pytest.raises(InputError, match="must differ"):
        compare_runs(qrels, [good, good], MAP)


def test_renderings_hold_the_numbers():
    qrels, good, bad = _synthetic(8)
    comp = compare_runs(qrels, [bad, good], [*MAP, parse_measure("recall@1")])
    md = render.markdown(comp)
    assert "| group | queries | run | MAP | Recall@1 | MAP ratio |" in md
    assert "| all | 8 | good | 1.000* | 1.000* | ×3.00 |" in md
    data = json.loads(render.to_json(comp))
    assert data["groups"]["all"]["runs"]["bad"]["MAP"]["mean"] == pytest.approx(1 / 3)
    assert data["groups"]["all"]["runs"]["good"]["MAP"]["p_randomization"] < 0.05
    assert data["per_query"]["good"]["Recall@1"]["q0"] == 1.0
    header, rows = render.per_query_rows(comp)
    assert header == ["qid", "run", "MAP", "Recall@1"]
    assert rows[0] == ["q0", "bad", "0.333", "0.000"]
    assert render.rich_table(comp).row_count == 2
