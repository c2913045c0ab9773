"""Losses: hand-computed values, false-negative masking, random negatives and SupCon."""

from __future__ import annotations

import math

import pytest
import torch

from clinsearch.train.batching import Pair, TrainingQuery, match_mask
from clinsearch.train.losses import listwise_loss, supcon_loss, triplet_loss


def _unit(angle_deg: float) -> list[float]:
    a = math.radians(angle_deg)
    return [math.cos(a), math.sin(a)]


def test_triplet_never_uses_a_matching_sentence_as_the_hardest_negative() -> None:
    # Pair 0: "no pneumothorax" with its sentence; pair 1's sentence ("No effusion or pneumothorax")
    # also matches "no pneumothorax" and is the closest one: it must be masked, not chosen.
    queries = [
        TrainingQuery(("no pneumothorax",), frozenset({"s0", "s1"})),
        TrainingQuery(("no pleural effusion",), frozenset({"s1"})),
        TrainingQuery(("pneumothorax",), frozenset({"s2"})),
    ]
    pairs = [Pair(0, "s0"), Pair(1, "s1"), Pair(2, "s2")]
    mask = match_mask(queries, pairs)
    assert mask.tolist() == [[True, True, False], [False, True, False], [False, False, True]]
    q = torch.tensor([_unit(0), _unit(90), _unit(180)])
    s = torch.tensor([_unit(math.degrees(math.acos(0.9))), _unit(0), _unit(60)])
    # query 0: positive cos 0.9; the masked s1 has cos 1.0 (loss would be 0.6); the hardest
    # allowed negative is s2 with cos 0.5, so its loss is 0.5 - 0.9 + 0.5 = 0.1
    sims = q @ s.T
    expected = [0.1]
    for i in (1, 2):
        neg = max(sims[i, j].item() for j in range(3) if not mask[i, j])
        expected.append(max(neg - sims[i, i].item() + 0.5, 0.0))
    full = triplet_loss(q, s, mask, margin=0.5)
    assert full.item() == pytest.approx(sum(expected) / 3, abs=1e-5)
    unmasked = triplet_loss(q, s, torch.eye(3, dtype=torch.bool), margin=0.5)
    assert unmasked.item() == pytest.approx(full.item() + 0.5 / 3, abs=1e-5)


def test_triplet_random_negatives_stay_within_the_allowed_set() -> None:
    q = torch.tensor([_unit(0), _unit(90), _unit(45)])
    s = torch.tensor([_unit(10), _unit(0), _unit(200)])
    mask = torch.tensor([[True, True, False], [False, True, False], [False, False, True]])
    sims = q @ s.T
    # query 0 may only draw s2, query 1 s0 or s2, query 2 nothing but s0 or s1
    allowed_losses = [
        {max(sims[i, j].item() - sims[i, i].item() + 0.5, 0.0) for j in range(3) if not mask[i, j]}
        for i in range(3)
    ]
    for seed in range(5):
        gen = torch.Generator().manual_seed(seed)
        loss = triplet_loss(q, s, mask, negatives="random", generator=gen).item() * 3
        possible = {
            a + b + c
            for a in allowed_losses[0]
            for b in allowed_losses[1]
            for c in allowed_losses[2]
        }
        assert min(abs(loss - p) for p in possible) < 1e-5


def test_triplet_without_any_negative_is_zero_and_differentiable() -> None:
    q = torch.randn(2, 4, requires_grad=True)
    loss = triplet_loss(q, torch.randn(2, 4), torch.ones(2, 2, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0.0


def test_listwise_removes_matching_sentences_from_the_softmax() -> None:
    q = torch.tensor([_unit(0), _unit(90)])
    s = torch.tensor([_unit(0), _unit(0)])
    masked = listwise_loss(q, s, torch.tensor([[True, True], [False, True]]), scale=10.0)
    # query 0's only candidate left is itself: loss 0; query 1 faces s0 and s1 equally: log 2
    assert masked.item() == pytest.approx(math.log(2) / 2, abs=1e-5)


def test_supcon_is_lower_when_synonyms_cluster() -> None:
    labels = torch.tensor([0, 0, 1, 1])
    clustered = torch.tensor([_unit(0), _unit(5), _unit(90), _unit(95)])
    mixed = torch.tensor([_unit(0), _unit(90), _unit(5), _unit(95)])
    assert supcon_loss(clustered, labels).item() < supcon_loss(mixed, labels).item()
    # hand value for the clustered case at temperature 1: anchor 0 sees cos5, cos90, cos95
    t = 1.0
    z = clustered
    sims = z @ z.T
    expected = 0.0
    for i in range(4):
        others = [j for j in range(4) if j != i]
        denom = sum(math.exp(sims[i, j].item() / t) for j in others)
        pos = [j for j in others if labels[j] == labels[i]]
        expected += -sum(math.log(math.exp(sims[i, j].item() / t) / denom) for j in pos) / len(pos)
    assert supcon_loss(z, labels, temperature=t).item() == pytest.approx(expected / 4, abs=1e-5)
