"""Plots are written as real PNG files, one bar chart and one recall-at-depth chart."""

from __future__ import annotations

from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.plots import BARS_PNG, CURVES_PNG, write_plots
from clinsearch.query_file import Query
from clinsearch.trec import read_qrels, read_run


def test_plots_are_written(toy_files, tmp_path):
    qrels, run = read_qrels(toy_files[0]), read_run(toy_files[1])
    other = read_run(toy_files[1], name="copy")
    queries = [Query("A", "a", "positive"), Query("B", "no b", "negative")]
    comp = compare_runs(
        qrels,
        [run, other],
        [parse_measure("map"), parse_measure("recall@5")],
        queries,
        allow_unknown=True,
    )
    paths = write_plots(comp, qrels, [run, other], tmp_path / "plots")
    assert [p.name for p in paths] == [BARS_PNG, CURVES_PNG]
    for path in paths:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert 2_000 < len(data) < 200_000
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted([BARS_PNG, CURVES_PNG])
