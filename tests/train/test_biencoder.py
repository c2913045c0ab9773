"""Bi-encoder fine-tuning on a tiny corpus: gradient caching, loss decrease, save, load, search."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from clinsearch.models.base_models import load_sentence_model
from clinsearch.train.batching import epoch_batches, training_pairs, training_queries
from clinsearch.train.biencoder import BiEncoderConfig, biencoder_loss, train_biencoder
from clinsearch.train.gradcache import cached_backward
from clinsearch.train.labels import LabelSentence, LabelSet, build_labels
from clinsearch.train.loop import LoopConfig, checkpoint_dir


@pytest.fixture(scope="module")
def tiny_labels(tiny_sentences: list[LabelSentence]) -> LabelSet:
    return build_labels(tiny_sentences)


def _full_batch_loss(
    model: SentenceTransformer, labels: LabelSet, config: BiEncoderConfig
) -> float:
    """The loss over every pair at once, without dropout: a fixed yardstick before and after."""
    queries = training_queries(labels.queries, phrasings=False)
    pairs = training_pairs(queries)
    (batch,) = epoch_batches(queries, pairs, labels.texts, batch_size=len(pairs), seed=0)
    model.eval()
    with torch.no_grad():
        emb = model.encode(batch.queries + batch.texts, convert_to_tensor=True)
    return float(biencoder_loss(batch, emb, config))


def test_gradient_caching_matches_a_plain_backward(
    tiny_encoder_path: Path, tiny_labels: LabelSet
) -> None:
    model = load_sentence_model(tiny_encoder_path, max_seq_length=32)
    model.eval()  # no dropout, so both paths see the same function
    queries = training_queries(tiny_labels.queries, phrasings=False)
    (batch,) = epoch_batches(
        queries, training_pairs(queries), tiny_labels.texts, batch_size=10, seed=1
    )[:1]
    config = BiEncoderConfig()
    texts = batch.queries + batch.texts
    grads = []
    for chunk in (len(texts), 3):
        model.zero_grad()
        loss = cached_backward(
            model, texts, lambda e: biencoder_loss(batch, e, config), chunk_size=chunk
        )
        grads.append((loss, [p.grad.clone() for p in model.parameters() if p.grad is not None]))
    (l1, g1), (l2, g2) = grads
    assert l1 == pytest.approx(l2, abs=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(g1, g2, strict=True))


@pytest.mark.parametrize("loss", ["triplet", "listwise"])
def test_training_lowers_the_loss_and_the_model_searches(
    tmp_path: Path, tiny_encoder_path: Path, tiny_labels: LabelSet, loss: str
) -> None:
    config = BiEncoderConfig(
        base_model=str(tiny_encoder_path),
        loss=loss,
        batch_size=8,
        chunk_size=6,
        max_seq_length=32,
        loop=LoopConfig(epochs=15, lr=1e-3, warmup_steps=100, progress=False, checkpoint_every=0),
    )
    before = _full_batch_loss(load_sentence_model(tiny_encoder_path), tiny_labels, config)
    out = tmp_path / "model"
    queries = training_queries(tiny_labels.queries)
    result = train_biencoder(queries, tiny_labels.texts, out, config)
    assert result.steps > 0 and len(result.losses) == result.steps
    model = SentenceTransformer(str(out), device="cpu")
    after = _full_batch_loss(model, tiny_labels, config)
    assert after < before
    log = json.loads((out / "training.json").read_text())
    assert log["steps"] == result.steps and log["meta"]["loss"] == loss
    # search the tiny corpus with the saved model: "no pneumothorax" ranks a negated sentence first
    ids = list(tiny_labels.texts)
    emb = model.encode([tiny_labels.texts[i] for i in ids], normalize_embeddings=True)
    q = model.encode(["no pneumothorax"], normalize_embeddings=True)[0]
    assert ids[int(np.argmax(emb @ q))] in {"r1#0", "r2#0"}


def test_checkpoint_and_resume(
    tmp_path: Path, tiny_encoder_path: Path, tiny_labels: LabelSet
) -> None:
    queries = training_queries(tiny_labels.queries)
    loop = LoopConfig(epochs=2, lr=1e-3, progress=False, checkpoint_every=2, keep_checkpoint=True)
    config = BiEncoderConfig(
        base_model=str(tiny_encoder_path), batch_size=8, max_seq_length=32, loop=loop
    )
    out = tmp_path / "model"
    full = train_biencoder(queries, tiny_labels.texts, out, config)
    assert (checkpoint_dir(out) / "state.pt").exists()
    # resuming from the last checkpoint continues at its step and finishes the same run
    resumed = train_biencoder(
        queries,
        tiny_labels.texts,
        tmp_path / "model",
        BiEncoderConfig(
            base_model=str(tiny_encoder_path),
            batch_size=8,
            max_seq_length=32,
            loop=LoopConfig(epochs=2, lr=1e-3, progress=False, checkpoint_every=2, resume=True),
        ),
    )
    last_ckpt = (full.steps // 2) * 2
    assert resumed.resumed_from == last_ckpt
    assert resumed.steps == full.steps
    assert resumed.losses[:last_ckpt] == full.losses[:last_ckpt]
    assert not checkpoint_dir(out).exists()
