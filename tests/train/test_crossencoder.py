"""Cross-encoder: groups (1:10, BM25 hard negatives, duplicates never negative), batching,
the listwise loss, and training with either loss."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import CrossEncoder

from clinsearch.train.batching import TrainingQuery, training_queries
from clinsearch.train.crossencoder import (
    CrossEncoderConfig,
    CrossLoss,
    Group,
    cross_groups,
    group_batches,
    listwise_cross_loss,
    train_crossencoder,
)
from clinsearch.train.labels import LabelSentence, build_labels
from clinsearch.train.loop import LoopConfig


def test_groups_take_hard_negatives_first_and_skip_duplicates_of_matches() -> None:
    texts = {"a": "No pneumothorax.", "a2": "no pneumothorax", "b": "Left pneumothorax.",
             "c": "Heart normal.", "d": "Effusion.", "e": "Clear lungs."}
    query = TrainingQuery(("no pneumothorax",), frozenset({"a"}))
    bm25 = {"no pneumothorax": ["a", "a2", "b", "c"]}
    config = CrossEncoderConfig(negatives=3, loop=LoopConfig(seed=1))
    [group] = cross_groups([query], texts, lambda q, k: bm25[q][:k], config)
    assert group.positive == "No pneumothorax."
    assert group.negatives[:2] == ("Left pneumothorax.", "Heart normal.")
    assert len(group.negatives) == 3
    assert group.negatives[2] in {"Effusion.", "Clear lungs."}  # random fill, never the duplicate
    assert [(e.text, e.label) for e in group.examples()][:2] == [
        ("No pneumothorax.", 1.0), ("Left pneumothorax.", 0.0)]
    [ten] = cross_groups([query], texts, None, CrossEncoderConfig(negatives=10))
    assert "no pneumothorax" not in ten.negatives


def test_group_batches_keep_groups_whole_within_the_pair_budget() -> None:
    groups = [Group(f"q{i}", "p", ("n",) * (i % 3 + 1)) for i in range(7)]
    batches = group_batches(groups, pairs=5, seed=0)
    assert sorted(g.query for b in batches for g in b) == sorted(g.query for g in groups)
    assert all(sum(1 + len(g.negatives) for g in b) <= 5 for b in batches)
    assert all(len(b) == 1 for b in group_batches(groups, pairs=1, seed=0))  # never split


def test_listwise_loss_is_each_positives_softmax_cross_entropy() -> None:
    logits = torch.tensor([3.0, 1.0, 0.0, -1.0, 2.0])  # groups: [3, 1, 0] and [-1, 2]
    expected = torch.stack([
        -torch.log_softmax(torch.tensor([3.0, 1.0, 0.0]), 0)[0],
        -torch.log_softmax(torch.tensor([-1.0, 2.0]), 0)[0],
    ]).mean()
    assert torch.isclose(listwise_cross_loss(logits, [3, 2]), expected)
    # the same logit everywhere (a model that learnt only the 1:N prior) costs log(group size)
    flat = listwise_cross_loss(torch.full((11,), -2.3), [11])
    assert torch.isclose(flat, torch.log(torch.tensor(11.0)))


@pytest.mark.parametrize("loss", ["bce", "listwise"])
def test_training_lowers_the_loss_and_the_model_reranks(
    tmp_path: Path, tiny_cross_path: Path, tiny_sentences: list[LabelSentence], loss: CrossLoss
) -> None:
    labels = build_labels(tiny_sentences)
    queries = training_queries(labels.queries, phrasings=False)
    config = CrossEncoderConfig(
        base_model=str(tiny_cross_path), loss=loss, negatives=3, batch_size=16, max_length=32,
        loop=LoopConfig(epochs=12, lr=1e-3, progress=False, checkpoint_every=0),
    )
    groups = cross_groups(queries, labels.texts, None, config)
    examples = [e for g in groups for e in g.examples()]

    def mean_loss(model: CrossEncoder) -> float:
        model.eval()
        with torch.no_grad():
            logits = model(dict(model.preprocess([(e.query, e.text) for e in examples])))["scores"]
        if loss == "listwise":
            sizes = [1 + len(g.negatives) for g in groups]
            return float(listwise_cross_loss(logits.view(-1), sizes))
        target = torch.tensor([e.label for e in examples])
        return float(torch.nn.functional.binary_cross_entropy_with_logits(logits.view(-1), target))

    before = mean_loss(CrossEncoder(str(tiny_cross_path), num_labels=1, device="cpu"))
    out = tmp_path / "ce"
    result = train_crossencoder(groups, out, config)
    model = CrossEncoder(str(out), device="cpu")
    assert mean_loss(model) < before
    log = json.loads((out / "training.json").read_text())
    assert log["steps"] == result.steps and log["meta"]["loss"] == loss
    pos = [e for e in examples if e.label == 1.0]
    neg = [e for e in examples if e.label == 0.0]
    scores_pos = model.predict([(e.query, e.text) for e in pos])
    scores_neg = model.predict([(e.query, e.text) for e in neg])
    assert float(np.mean(scores_pos)) > float(np.mean(scores_neg))
