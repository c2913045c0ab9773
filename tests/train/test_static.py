"""Static encoder training from weak labels on a tiny corpus, through the library and the CLI:
the loss falls, the result is a static folder recording its training, and index --dense, add,
search (dense and hybrid) and the term encoder use it through --model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clinsearch import Index
from clinsearch.cli import app
from clinsearch.corpus.model import Report
from clinsearch.models.encoder import load_encoder
from clinsearch.models.static import StaticEncoder, read_provenance
from clinsearch.models.static_distill import DistillConfig, distill
from clinsearch.train.batching import training_queries
from clinsearch.train.biencoder import train_biencoder
from clinsearch.train.labels import LabelSentence, build_labels
from clinsearch.train.loop import LoopConfig
from clinsearch.train.static import STATIC_LR, static_config

REPORTS = [
    ("r1", "FINDINGS: There is no pneumothorax. Small left pleural effusion."),
    ("r2", "FINDINGS: No pleural effusion or pneumothorax. Heart size is normal."),
    ("r3", "FINDINGS: Large right pneumothorax. IMPRESSION: Right pneumothorax."),
    ("r4", "FINDINGS: Cardiomegaly. No focal consolidation. IMPRESSION: Cardiomegaly."),
    ("r5", "FINDINGS: Right lower lobe consolidation. No pneumothorax."),
    ("r6", "FINDINGS: The heart is enlarged. Bilateral pleural effusions."),
]


@pytest.fixture(scope="module")
def static_base(tmp_path_factory: pytest.TempPathFactory, tiny_encoder_path: Path) -> Path:
    return distill(tiny_encoder_path, tmp_path_factory.mktemp("sb") / "m", DistillConfig(dims=16))


def _separation(encoder: StaticEncoder) -> float:
    """Mean cosine of each query to its matched sentences minus to its unmatched ones."""
    return float(np.mean([
        (q @ s.T)[0, 0] - (q @ u.T).mean()
        for q, s, u in (
            (encoder.encode_queries([query]), encoder.encode_queries([good]),
             encoder.encode_queries(bad))
            for query, good, bad in (
                ("no pneumothorax", "There is no pneumothorax.",
                 ["Large right pneumothorax.", "Left apical pneumothorax is present."]),
                ("pneumothorax", "Large right pneumothorax.", ["There is no pneumothorax."]),
                ("cardiomegaly", "Heart size is enlarged.", ["Heart size is normal."]),
            )
        )
    ]))


def test_static_training_lowers_the_loss_and_records_it(
    tmp_path: Path, static_base: Path, tiny_sentences: list[LabelSentence]
) -> None:
    labels = build_labels(tiny_sentences)
    config = static_config(static_base, batch_size=16, chunk_size=32, loop=LoopConfig(
        epochs=30, lr=STATIC_LR, weight_decay=0.0, warmup_steps=0, checkpoint_every=0,
        progress=False))
    out = tmp_path / "trained"
    result = train_biencoder(training_queries(labels.queries), labels.texts, out, config)
    assert np.mean(result.losses[-3:]) < np.mean(result.losses[:3])
    trained = load_encoder(out)
    assert isinstance(trained, StaticEncoder)
    assert _separation(trained) > _separation(load_encoder(static_base)) + 0.05
    facts = read_provenance(out)
    assert facts["base_model"] == str(tiny_encoder_base(static_base))
    assert facts["training"]["from"] == str(static_base) and facts["training"]["loss"] == "triplet"
    assert facts["training"]["batch_size"] == 16 and (out / "training.json").is_file()
    assert {p.stat().st_mode & 0o777 for p in out.iterdir()} == {0o600}


def tiny_encoder_base(static_base: Path) -> str:
    return read_provenance(static_base)["base_model"]


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_train_static_then_index_add_search_and_terms_from_the_cli(
    tmp_path: Path, tiny_encoder_path: Path
) -> None:
    index_dir = tmp_path / "labels-index"
    Index.build([Report(i, t) for i, t in REPORTS], index_dir, progress=False)
    plain = tmp_path / "plain"
    out = _run("train", "static", "--out", str(plain), "--base-model", str(tiny_encoder_path),
               "--dims", "12")
    assert "distilled a static model" in out and read_provenance(plain)["training"] is None
    trained = tmp_path / "trained"
    out = _run("train", "static", "--index", str(index_dir), "--out", str(trained),
               "--base-model", str(plain), "--epochs", "2", "--batch-size", "8", "-q")
    assert "trained static encoder:" in out
    assert read_provenance(trained)["training"]["kind"] == "biencoder"

    csv = tmp_path / "a.csv"
    csv.write_text('id,text\na1,"No pleural effusion."\na2,"Large right pneumothorax."\n')
    more = tmp_path / "b.csv"
    more.write_text('id,text\nb1,"Left pleural effusion. Heart size is normal."\n')
    idx = tmp_path / "idx"
    _run("index", str(csv), "--format", "csv", "--out", str(idx), "--dense", "--model",
         str(trained), "--term-model", str(trained))
    _run("add", str(idx), str(more), "--format", "csv")
    dense = json.loads(_run("info", str(idx), "--json"))["components"]["dense"]
    assert dense["sentences"] == 4 and dense["dim"] == 12
    assert dense["model_path"] == str(trained.resolve())
    for method in ("dense", "hybrid"):
        hits = json.loads(_run("search", str(idx), "pleural effusion", "--method", method,
                               "--format", "json"))["hits"]
        assert {"a1", "b1"} <= {h["report_id"] for h in hits}
    result = CliRunner().invoke(app, ["search", str(idx), "effusion", "--method", "dense",
                                      "--model", str(plain)])
    assert result.exit_code == 2 and "fingerprint" in result.output


def test_train_static_bad_options_exit_2_without_writing(tmp_path: Path) -> None:
    out = tmp_path / "m"
    for args in (["--source", "notes"], ["--loss", "cosine"]):
        result = CliRunner().invoke(app, ["train", "static", "--index", str(tmp_path), "--out",
                                          str(out), *args])
        assert result.exit_code == 2 and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["train", "static", "--out", str(out), "--base-model",
                                      str(tmp_path / "missing")])
    assert result.exit_code == 2 and "does not exist" in result.output
    assert not out.exists()
