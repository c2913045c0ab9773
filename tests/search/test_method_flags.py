"""The `search` and `eval` flags come from the methods' declared parameters; errors name flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from clinsearch import Index
from clinsearch.cli import app
from clinsearch.cli.method_flags import NOT_FLAGS
from clinsearch.search.method_params import METHOD_PARAMS, WRAPPERS

from ..security.hostile import one_line_error, run


@pytest.mark.parametrize("command", ["search", "eval"])
def test_every_declared_parameter_is_a_flag_with_its_declared_help(command: str) -> None:
    options = {
        p.name: p for p in typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    }
    declared = [p for params in (*METHOD_PARAMS.values(), WRAPPERS) for p in params]
    assert "polarity_filter" not in options
    first = {}
    for param in declared:
        first.setdefault(param.name, param)  # a parameter several methods take: the first help
    for param in first.values():
        if param.name in NOT_FLAGS:  # set through --polarity
            continue
        option = options[param.name]
        assert option.opts == ["--" + param.name.replace("_", "-")]
        assert param.help.split()[-1] in option.help
        if param.default is not None and param.kind != "bool":
            assert f"Default: {param.default}." in option.help
        if param.minimum is not None:
            assert option.min == param.minimum


def test_search_flags_reach_the_method_and_errors_name_flags(index: Index) -> None:
    code, out, err = run("search", index.path, "pleural effusion", "--method", "bm25",
                         "--whole-report", "--format", "json")
    assert code == 0, err
    flagged = json.loads(out)
    code, out, _ = run("search", index.path, "pleural effusion", "--method",
                       "bm25:whole_report=true", "--format", "json")
    assert json.loads(out)["hits"] == flagged["hits"]
    line = one_line_error(*run("search", index.path, "x", "--method", "concept",
                            "--whole-report")[::2])
    assert "--whole-report applies to --method bm25" in line
    line = one_line_error(*run("search", index.path, "x", "--method", "bm25",
                            "--rerank-depth", "5")[::2])
    assert "--rerank-depth and --rerank-input need --rerank" in line
    line = one_line_error(*run("search", index.path, "x", "--method",
                            "bm25:rerank_depth=5")[::2])
    assert "`rerank_depth` and --rerank-input need --rerank" in line  # as written in the spec


def test_eval_flags_apply_to_each_method_that_takes_them(index: Index, tmp_path: Path) -> None:
    queries, qrels = tmp_path / "q.tsv", tmp_path / "q.qrels"
    queries.write_text("qid\tquery\nq1\tpleural effusion\nq2\tcardiomegaly\n", encoding="utf-8")
    qrels.write_text("q1 0 g1 1\nq2 0 e2 1\n", encoding="utf-8")
    common = ("eval", "--index", index.path, "--queries", queries, "--qrels", qrels,
              "--format", "json", "-m", "map")

    def maps(*args: str) -> list[float]:
        code, out, err = run(*common, *args)
        assert code == 0, err
        runs = json.loads(out)["groups"]["all"]["runs"]
        return [value["MAP"]["mean"] for value in runs.values()]

    assert maps("--method", "bm25", "--method", "concept", "--whole-report") == maps(
        "--method", "bm25:whole_report=true", "--method", "concept")
    line = one_line_error(*run(*common, "--method", "bm25", "--include-uncertain")[::2])
    assert "--include-uncertain applies to --method concept" in line
    line = one_line_error(*run(*common, "--method", "bm25", "--rerank-depth", "5")[::2])
    assert "--rerank-depth and --rerank-input need --rerank" in line  # it reached the method
