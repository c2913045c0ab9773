"""Metrics agree with trec_eval conventions on a toy example whose values are worked by hand."""

from __future__ import annotations

import math

import pytest

from clinsearch.errors import InputError
from clinsearch.evaluate.measures import (
    display_name,
    judged_queries,
    parse_measure,
    per_query,
    recall_curve,
)
from clinsearch.trec import read_qrels, read_run

NAMES = ["map", "rprec", "p@5", "ndcg@5", "bpref", "mrr", "recall@1", "recall@5"]


@pytest.fixture
def toy_values(toy_files):
    qrels_path, run_path = toy_files
    measures = [parse_measure(n) for n in NAMES]
    return per_query(read_qrels(qrels_path), read_run(run_path), measures)


def test_query_a_by_hand(toy_values):
    # A ranks: 1 d3 (judged non-rel), 2 d1 (rel, grade 2), 3 d5 (unjudged), 4 d2 (rel, 1),
    # 5 d7 (judged non-rel), 6 d6 (unjudged). R = 3 relevant (d1, d2, d4); N = 2 judged non-rel.
    v = {k: t["A"] for k, t in toy_values.items()}
    assert v["MAP"] == pytest.approx((1 / 2 + 2 / 4) / 3)  # precision at each relevant hit / R
    assert v["R-prec"] == pytest.approx(1 / 3)  # one relevant in the top R = 3
    assert v["P@5"] == pytest.approx(2 / 5)
    dcg = 2 / math.log2(3) + 1 / math.log2(5)  # linear gains at ranks 2 and 4
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)  # gains 2, 1, 1
    assert v["nDCG@5"] == pytest.approx(dcg / ideal)
    # bpref: each relevant hit loses (judged non-rel above it) / min(R, N); unjudged d5 is ignored
    assert v["bpref"] == pytest.approx(((1 - 1 / 2) + (1 - 1 / 2)) / 3)
    assert v["MRR"] == pytest.approx(1 / 2)
    assert v["Recall@1"] == 0.0
    assert v["Recall@5"] == pytest.approx(2 / 3)


def test_ties_break_by_docid_descending(toy_values):
    # B: e2 and e9 tie at 1.0; trec_eval puts e9 first, so e2 is at rank 2 and e1 at rank 3.
    v = {k: t["B"] for k, t in toy_values.items()}
    assert v["MAP"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert v["MRR"] == pytest.approx(1 / 2)
    assert v["Recall@1"] == 0.0
    assert v["R-prec"] == pytest.approx(1 / 2)


def test_judged_query_missing_from_run_scores_zero(toy_values):
    assert all(table["C"] == 0.0 for table in toy_values.values())


def test_query_without_relevant_documents_is_not_evaluated(toy_files, toy_values):
    assert judged_queries(read_qrels(toy_files[0])) == ["A", "B", "C"]
    assert all("D" not in table for table in toy_values.values())


def test_recall_curve_rises_with_depth(toy_files):
    curve = recall_curve(read_qrels(toy_files[0]), read_run(toy_files[1]), [1, 2, 4, 10])
    assert [curve[d]["A"] for d in (1, 2, 4, 10)] == pytest.approx([0, 1 / 3, 2 / 3, 2 / 3])


def test_graded_ndcg_uses_grades_as_gains(tmp_path):
    qrels = tmp_path / "g.qrels"
    run = tmp_path / "g.run"
    qrels.write_text("q 0 hi 3\nq 0 lo 1\n")
    run.write_text("q Q0 lo 1 2 x\nq Q0 hi 2 1 x\n")
    value = per_query(read_qrels(qrels), read_run(run), [parse_measure("ndcg@2")])["nDCG@2"]["q"]
    assert value == pytest.approx((1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3)))


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("map", "MAP"),
        ("AP", "MAP"),
        ("rprec", "R-prec"),
        ("P@10", "P@10"),
        ("ndcg@10", "nDCG@10"),
        ("bpref", "bpref"),
        ("mrr", "MRR"),
        ("RR", "MRR"),
        ("recall@5", "Recall@5"),
        ("R@1", "Recall@1"),
    ],
)
def test_metric_names(name, shown):
    assert display_name(parse_measure(name)) == shown


@pytest.mark.parametrize("name", ["foo", "p@0", "recall@x", ""])
def test_unknown_metric_is_an_input_error(name):
    with pytest.raises(InputError, match="metric"):
        parse_measure(name)
