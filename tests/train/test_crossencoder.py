"""Cross-encoder: examples (1:10, BM25 hard negatives, duplicates never negative), training."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import CrossEncoder

from clinsearch.train.batching import TrainingQuery, training_queries
from clinsearch.train.crossencoder import CrossEncoderConfig, cross_examples, train_crossencoder
from clinsearch.train.labels import LabelSentence, build_labels
from clinsearch.train.loop import LoopConfig


def test_examples_take_hard_negatives_first_and_skip_duplicates_of_matches() -> None:
    texts = {"a": "No pneumothorax.", "a2": "no pneumothorax", "b": "Left pneumothorax.",
             "c": "Heart normal.", "d": "Effusion.", "e": "Clear lungs."}
    query = TrainingQuery(("no pneumothorax",), frozenset({"a"}))
    bm25 = {"no pneumothorax": ["a", "a2", "b", "c"]}
    config = CrossEncoderConfig(negatives=3, loop=LoopConfig(seed=1))
    examples = cross_examples([query], texts, lambda q, k: bm25[q][:k], config)
    assert [(e.text, e.label) for e in examples[:3]] == [
        ("No pneumothorax.", 1.0), ("Left pneumothorax.", 0.0), ("Heart normal.", 0.0)]
    assert len(examples) == 4 and examples[3].label == 0.0
    assert examples[3].text in {"Effusion.", "Clear lungs."}  # random fill, never the duplicate
    ten = cross_examples([query], texts, None, CrossEncoderConfig(negatives=10))
    assert "no pneumothorax" not in [e.text for e in ten]


def test_training_lowers_the_loss_and_the_model_reranks(
    tmp_path: Path, tiny_cross_path: Path, tiny_sentences: list[LabelSentence]
) -> None:
    labels = build_labels(tiny_sentences)
    queries = training_queries(labels.queries, phrasings=False)
    config = CrossEncoderConfig(
        base_model=str(tiny_cross_path), negatives=3, batch_size=16, max_length=32,
        loop=LoopConfig(epochs=12, lr=1e-3, progress=False, checkpoint_every=0),
    )
    examples = cross_examples(queries, labels.texts, None, config)

    def mean_loss(model: CrossEncoder) -> float:
        model.eval()
        with torch.no_grad():
            logits = model(dict(model.preprocess([(e.query, e.text) for e in examples])))["scores"]
        target = torch.tensor([e.label for e in examples])
        return float(torch.nn.functional.binary_cross_entropy_with_logits(logits.view(-1), target))

    before = mean_loss(CrossEncoder(str(tiny_cross_path), num_labels=1, device="cpu"))
    out = tmp_path / "ce"
    result = train_crossencoder(examples, out, config)
    model = CrossEncoder(str(out), device="cpu")
    assert mean_loss(model) < before
    assert json.loads((out / "training.json").read_text())["steps"] == result.steps
    pos = [e for e in examples if e.label == 1.0]
    neg = [e for e in examples if e.label == 0.0]
    scores_pos = model.predict([(e.query, e.text) for e in pos])
    scores_neg = model.predict([(e.query, e.text) for e in neg])
    assert float(np.mean(scores_pos)) > float(np.mean(scores_neg))
