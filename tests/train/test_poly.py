"""Poly-encoder [CAPR2021]: training on weak labels, the saved plain folder, scoring, refusal."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from clinsearch.errors import ClinsearchError
from clinsearch.models.poly_encoder import CONFIG_FILE, PolyEncoder, PolyScorer
from clinsearch.train.batching import epoch_batches, training_pairs, training_queries
from clinsearch.train.labels import LabelSentence, build_labels
from clinsearch.train.loop import LoopConfig
from clinsearch.train.losses import listwise_scores_loss
from clinsearch.train.poly import PolyConfig, train_poly_encoder


def _data(sentences: list[LabelSentence]) -> tuple[list, dict[str, str]]:
    labels = build_labels(sentences)
    return training_queries(labels.queries, phrasings=False), labels.texts


def _full_loss(model: PolyEncoder, queries: list, texts: dict[str, str]) -> float:
    """The listwise loss over every pair at once, without dropout."""
    (batch,) = epoch_batches(queries, training_pairs(queries), texts, batch_size=10_000, seed=0)
    model.module.eval()
    with torch.no_grad():
        scores = model.module.scores(model.module.query_vectors(model.tokenize(batch.queries)),
                                     model.module.code_vectors(model.tokenize(batch.texts)))
        return float(listwise_scores_loss(scores, batch.matches))


def test_training_lowers_the_loss_and_saves_a_plain_folder(
    tmp_path: Path, tiny_sentences: list[LabelSentence], tiny_encoder_path: Path
) -> None:
    queries, texts = _data(tiny_sentences)
    before = _full_loss(PolyEncoder.from_base(tiny_encoder_path, codes=4, seed=13), queries, texts)
    out = tmp_path / "poly"
    config = PolyConfig(base_model=str(tiny_encoder_path), codes=4, batch_size=8,
                        loop=LoopConfig(epochs=15, lr=3e-3, warmup_steps=0, progress=False,
                                        checkpoint_every=0, device="cpu"))
    result = train_poly_encoder(queries, texts, out, config)
    assert result.steps > 10
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert {"poly.json", "poly.safetensors", "training.json", "encoder/model.safetensors",
            "encoder/config.json", "encoder/tokenizer.json"} <= files
    assert not [f for f in files if f.endswith((".bin", ".pt", ".pkl"))]
    assert json.loads((out / "training.json").read_text())["meta"]["kind"] == "poly"
    scorer = PolyScorer(out, device="cpu")
    assert scorer.model.codes == 4
    after = _full_loss(scorer.model, queries, texts)
    assert after < before - 0.1, (before, after)


def test_scores_are_the_module_scores_and_long_passages_score_their_best_window(
    tmp_path: Path, tiny_encoder_path: Path
) -> None:
    model = PolyEncoder.from_base(tiny_encoder_path, codes=3, max_length=12, device="cpu")
    model.save(tmp_path)
    scorer = PolyScorer(tmp_path, device="cpu")
    passages = ["no pleural effusion .", "mild cardiomegaly .", "the heart is normal ."]
    scores = scorer.score("pleural effusion", passages)
    module = scorer.model.module
    with torch.no_grad():
        expected = module.scores(module.query_vectors(scorer.model.tokenize(["pleural effusion"])),
                                 module.code_vectors(scorer.model.tokenize(passages)))[0]
    np.testing.assert_allclose(scores, expected.numpy(), rtol=1e-5, atol=1e-6)
    assert scores.dtype == np.float64 and np.all(np.abs(scores) <= 1 + 1e-6)
    long = " ".join(["the lungs are clear ."] * 5 + ["no pleural effusion ."])
    window_best = scorer.score("pleural effusion", [long])[0]
    assert window_best >= scorer.score("pleural effusion", ["the lungs are clear ."])[0] - 1e-6
    assert scorer.score("x", []).shape == (0,)


def test_folders_that_are_not_poly_encoders_are_refused(
    tmp_path: Path, tiny_encoder_path: Path
) -> None:
    with pytest.raises(ClinsearchError, match=r"no readable poly\.json"):
        PolyScorer(tiny_encoder_path)
    PolyEncoder.from_base(tiny_encoder_path, codes=2).save(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(json.dumps({"format": "other"}))
    with pytest.raises(ClinsearchError, match="is not clinsearch-poly-encoder/1"):
        PolyScorer(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(
        json.dumps({"format": "clinsearch-poly-encoder/1", "codes": 5, "max_length": 16}))
    with pytest.raises(ClinsearchError, match="codes of shape"):
        PolyScorer(tmp_path)
    (tmp_path / "encoder" / "pytorch_model.bin").write_bytes(b"x")
    with pytest.raises(ClinsearchError, match="pickle"):
        PolyScorer(tmp_path)
