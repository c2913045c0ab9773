"""One method-spec syntax for search, eval and the Python API; parameters declared as data."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinsearch import Index
from clinsearch.cli import app
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.search.registry import (
    METHODS,
    WRAPPER_PARAMS,
    checked_options,
    method,
    parse_method,
)


@pytest.mark.parametrize(
    ("spec", "name", "options"),
    [
        ("bm25", "bm25", {}),
        ("bm25:whole_report=true", "bm25", {"whole_report": "true"}),
        ("hybrid:methods=bm25,dense", "hybrid", {"methods": "bm25,dense"}),
        (
            "hybrid:weights=bm25=1,dense=2,fusion=weighted",
            "hybrid",
            {"weights": "bm25=1,dense=2", "fusion": "weighted"},
        ),
        (
            "hybrid:methods=bm25,dense,weights=bm25=1,dense=2,depth=50",
            "hybrid",
            {"methods": "bm25,dense", "weights": "bm25=1,dense=2", "depth": "50"},
        ),
    ],
)
def test_specs_parse_with_list_values(spec: str, name: str, options: dict[str, str]) -> None:
    parsed = parse_method(spec)
    assert (parsed.label, parsed.method, parsed.options) == (spec, name, options)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bm25:oops", "'oops' of method 'bm25:oops' is not key=value"),
        ("bm25:whole_report=true,dense", "'dense' of method"),  # not a list parameter
        (":x=1", "empty method name"),
        ("bm25:whole_report=1,whole_report=0", "given twice"),
    ],
)
def test_malformed_specs_fail_clearly(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_method(spec)


def test_options_are_converted_and_checked_by_their_declaration() -> None:
    assert checked_options("bm25", {"whole_report": "TRUE"}) == {"whole_report": True}
    assert checked_options("hybrid", {"depth": "7", "rrf_k": 3}) == {"depth": 7, "rrf_k": 3}
    bad = [
        ("bm25", {"whole_report": "maybe"}, "'whole_report' must be true or false"),
        ("hybrid", {"depth": "deep"}, "'depth' must be a whole number"),
        ("hybrid", {"depth": 0}, "depth must be at least 1"),
        ("hybrid", {"normalisation": "l2"}, "unknown normalisation 'l2'"),
        ("bm25", {"colour": "red"}, "method 'bm25' does not take these options: colour"),
    ]
    for name, options, message in bad:
        with pytest.raises(ClinsearchError, match=message):
            checked_options(name, options)


def test_every_method_declares_its_parameters() -> None:
    for name in METHODS:
        declared = method(name)
        assert declared.help and all(p.help and p.kind for p in declared.params)


def test_hybrid_spec_lists_reach_the_method(dense_index: Index) -> None:
    spec = "hybrid:methods=bm25,dense,weights=bm25=1,dense=2"
    via_spec = dense_index.search("pleural effusion", "report", 5, spec)
    via_options = dense_index.search(
        "pleural effusion", "report", 5, "hybrid", methods="bm25,dense", weights="bm25=1,dense=2"
    )
    assert via_spec == via_options and via_spec
    assert via_spec[0].explanation["ranks"].keys() <= {"bm25", "dense"}
    with pytest.raises(ClinsearchError, match="given twice"):
        dense_index.search("effusion", "report", 5, "bm25:whole_report=true", whole_report=False)
    with pytest.raises(ClinsearchError, match="unknown search method 'magic'"):
        dense_index.search("effusion", "report", 5, "hybrid:methods=bm25,magic")


def test_whole_report_flag_is_the_spec_option(index_dir: Path) -> None:
    runner = CliRunner()
    base = ["search", str(index_dir), "left effusion", "--format", "json"]
    flag = runner.invoke(app, [*base, "--whole-report", "--method", "bm25"])
    spec = runner.invoke(app, [*base, "--method", "bm25:whole_report=true"])
    plain = runner.invoke(app, [*base, "--method", "bm25"])
    assert flag.exit_code == spec.exit_code == plain.exit_code == 0
    hits = [r.split('"method"')[0] for r in (flag.output, spec.output, plain.output)]
    assert hits[0] == hits[1]
    assert '"scored": "report"' in flag.output and '"scored": "report"' not in plain.output


def test_methods_command_lists_the_declared_options() -> None:
    result = CliRunner().invoke(app, ["methods"])
    assert result.exit_code == 0
    for name in ("bm25", "hybrid", "whole_report", "weights", "rerank_input"):
        assert name in result.output


def test_methods_command_reads_at_80_columns() -> None:
    """Every method, option name, default and choice in full, no line wider than 80."""
    done = subprocess.run([sys.executable, "-m", "clinsearch", "methods"], capture_output=True,
                          text=True, check=True, env={**os.environ, "COLUMNS": "80"})
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    params = [p for name in METHODS for p in method(name).params] + list(WRAPPER_PARAMS)
    for name in METHODS:
        assert any(line.startswith(f"{name}: ") for line in lines)
    flat = " ".join(done.stdout.split())  # an entry wrapped over lines reads as one
    for param in params:
        facts = re.findall(rf"(?<![\w_]){param.name} \(([^)]*)\)", flat)
        assert any((param.default is None or f"default {param.default}" in entry)
                   and all(choice in entry for choice in param.choices) for entry in facts)
