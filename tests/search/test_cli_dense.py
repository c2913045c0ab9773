"""`clinsearch index --dense`, `add`, `search --method dense|hybrid --rerank` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinsearch.cli import app

from ..tiny_models import build_tiny_bert


def run_cli(*args: str) -> tuple[int, str, str]:
    """Run the CLI app with ``args``; return (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _csv(path: Path, rows: list[tuple[str, str]]) -> Path:
    path.write_text("id,text\n" + "".join(f'{i},"{t}"\n' for i, t in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-enc"))


def test_dense_index_add_and_search(
    tmp_path: Path, tiny_encoder: Path, tiny_cross_encoder: Path
) -> None:
    first = _csv(tmp_path / "a.csv", [("a1", "No pleural effusion."), ("a2", "Mild edema.")])
    more = _csv(tmp_path / "b.csv", [("b1", "Left pleural effusion. Heart size is normal.")])
    out = tmp_path / "idx"
    code, _, err = run_cli(
        "index", str(first), "--format", "csv", "--out", str(out),
        "--dense", "--model", str(tiny_encoder),
    )  # fmt: skip
    assert code == 0, err
    assert run_cli("add", str(out), str(more), "--format", "csv")[0] == 0
    code, info, _ = run_cli("info", str(out), "--json")
    dense = json.loads(info)["components"]["dense"]
    assert dense["sentences"] == 4 and dense["model_path"] == str(tiny_encoder.resolve())

    code, text, err = run_cli(
        "search", str(out), "pleural effusion", "--method", "hybrid",
        "--format", "json", "--rerank", str(tiny_cross_encoder), "--rerank-depth", "2",
    )  # fmt: skip
    assert code == 0, err
    hits = json.loads(text)["hits"]
    assert {h["report_id"] for h in hits} == {"a1", "a2", "b1"}
    assert hits[0]["explanation"]["reranked"] and hits[0]["explanation"]["method"] == "hybrid"

    for polarity, expected in (("absent", {"a1"}), ("present", {"b1"}), ("any", {"a1", "b1"})):
        code, text, err = run_cli(
            "search", str(out), "pleural effusion", "--method", "dense", "--format", "json",
            "--polarity", polarity,
        )  # fmt: skip
        assert code == 0, err
        assert {h["report_id"] for h in json.loads(text)["hits"]} == expected


def test_dense_search_errors_are_one_line(tmp_path: Path, tiny_encoder: Path) -> None:
    corpus = _csv(tmp_path / "a.csv", [("a1", "No pleural effusion.")])
    out = tmp_path / "idx"
    run_cli("index", str(corpus), "--format", "csv", "--out", str(out))
    code, _, err = run_cli("search", str(out), "effusion", "--method", "dense")
    assert code == 2 and "no 'dense' component" in err and "Traceback" not in err
    code, _, err = run_cli(
        "index", str(corpus), "--format", "csv", "--out", str(out),
        "--model", str(tiny_encoder),
    )  # fmt: skip
    assert code == 2 and "--model needs --dense" in err
