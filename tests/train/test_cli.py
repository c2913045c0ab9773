"""``clinsearch train ...`` end to end on a small real index (annotator included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sentence_transformers import CrossEncoder, SentenceTransformer
from typer.testing import CliRunner

from clinsearch import Index
from clinsearch.cli import app
from clinsearch.corpus.model import Report

REPORTS = [
    ("r1", "FINDINGS: There is no pneumothorax. Small left pleural effusion. "
           "IMPRESSION: Left effusion."),
    ("r2", "FINDINGS: No pleural effusion or pneumothorax. Heart size is normal."),
    ("r3", "FINDINGS: Large right pneumothorax. IMPRESSION: Right pneumothorax."),
    ("r4", "FINDINGS: Cardiomegaly. No focal consolidation. IMPRESSION: Cardiomegaly."),
    ("r5", "FINDINGS: Right lower lobe consolidation. No pneumothorax."),
    ("r6", "FINDINGS: The heart is enlarged. Bilateral pleural effusions."),
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("idx") / "index"
    Index.build([Report(i, t) for i, t in REPORTS], path, progress=False)
    return path


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_labels_then_biencoder_then_crossencoder(
    tmp_path: Path, index_dir: Path, tiny_encoder_path: Path, tiny_cross_path: Path
) -> None:
    labels = tmp_path / "labels.jsonl"
    out = _run("train", "labels", "--index", str(index_dir), "--out", str(labels), "-q")
    assert "positive and" in out and "negative queries" in out
    records = [json.loads(line) for line in labels.read_text().splitlines()]
    texts = {r["text"] for r in records}
    assert {"pneumothorax", "no pneumothorax", "cardiomegaly"} <= texts
    bi = tmp_path / "bi"
    _run("train", "biencoder", "--index", str(index_dir), "--labels", str(labels),
         "--out", str(bi), "--base-model", str(tiny_encoder_path), "--batch-size", "8",
         "--max-steps", "2", "-q")
    assert SentenceTransformer(str(bi), device="cpu").encode(["no pneumothorax"]).shape == (1, 32)
    ce = tmp_path / "ce"
    out = _run("train", "crossencoder", "--index", str(index_dir), "--out", str(ce),
               "--base-model", str(tiny_cross_path), "--negatives", "3", "--max-steps", "2", "-q")
    assert "trained cross-encoder: 2 steps" in out
    assert len(CrossEncoder(str(ce), device="cpu").predict([("no pneumothorax", "x")])) == 1


def test_bad_options_and_labels_exit_2_without_traceback(tmp_path: Path, index_dir: Path) -> None:
    result = CliRunner().invoke(app, ["train", "biencoder", "--index", str(index_dir),
                                      "--out", str(tmp_path / "m"), "--loss", "hinge"])
    assert result.exit_code == 2 and "hinge" in result.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"polarity": "present", "concept": "x", "name": "x", "modifiers": [], '
                   '"sentences": ["nope#0"]}\n')
    result = CliRunner().invoke(app, ["train", "biencoder", "--index", str(index_dir),
                                      "--labels", str(bad), "--out", str(tmp_path / "m")])
    assert result.exit_code == 2 and "bad.jsonl:1" in result.output and "nope#0" in result.output
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("command", ["biencoder", "crossencoder"])
def test_an_index_without_labels_exits_2_without_traceback(
    tmp_path: Path, command: str, tiny_encoder_path: Path
) -> None:
    empty = tmp_path / "idx"
    Index.build([Report("n1", "Comparison is made."), Report("n2", "Normal study.")], empty,
                progress=False)
    result = CliRunner().invoke(app, ["train", command, "--index", str(empty),
                                      "--out", str(tmp_path / "m"),
                                      "--base-model", str(tiny_encoder_path), "-q"])
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and "Traceback" not in result.output
    assert not isinstance(result.exception, ValueError)
    assert not (tmp_path / "m").exists()


def test_poly_encoder_trains_and_reranks_from_the_command_line(
    tmp_path: Path, index_dir: Path, tiny_encoder_path: Path
) -> None:
    poly = tmp_path / "poly"
    out = _run("train", "poly", "--index", str(index_dir), "--out", str(poly), "--base-model",
               str(tiny_encoder_path), "--codes", "4", "--batch-size", "8", "--max-steps", "2",
               "--device", "cpu", "-q")
    assert "trained poly-encoder: 2 steps" in out
    out = _run("search", str(index_dir), "pleural effusion", "--method", "bm25",
               "--rerank", f"poly:{poly}", "--format", "json", "--device", "cpu")
    hits = json.loads(out)["hits"]
    assert hits and hits[0]["explanation"]["reranked"]


@pytest.mark.parametrize("device", ["tpu", "cuda:64"])
def test_an_unknown_or_unavailable_device_exits_2_on_one_line(
    tmp_path: Path, index_dir: Path, device: str
) -> None:
    for args in (["train", "terms", "--out", str(tmp_path / "m")],
                 ["search", str(index_dir), "effusion", "--method", "bm25"],
                 ["index", str(tmp_path / "none.csv"), "--format", "csv", "--out",
                  str(tmp_path / "idx"), "--dense"]):
        result = CliRunner().invoke(app, [*args, "--device", device])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "--device" in lines[0] and device in lines[0], lines
        assert not (tmp_path / "m").exists() and not (tmp_path / "idx").exists()
