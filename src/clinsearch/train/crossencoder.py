"""Cross-encoder fine-tuning ([Soni2020], [CAPR2021]): relevance of (query, text) pairs.

Every matched text of a query is a positive; each positive gets ``negatives`` negatives (1:10 as
in [Soni2020]), first the query's BM25 hits that do not match it (hard negatives), then random
texts. A candidate whose text equals a matched text (a duplicate sentence) is never a negative.
The loss is binary cross-entropy on each pair ([Soni2020]) or listwise: a softmax over each
positive and its own negatives ([CAPR2021]), which cannot be lowered by learning the 1:N prior.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch

from clinsearch.errors import DataError, InputError
from clinsearch.models.base_models import load_cross_model
from clinsearch.models.device import to_device
from clinsearch.train.batching import TrainingQuery
from clinsearch.train.labels import normalise_text
from clinsearch.train.loop import LoopConfig, LoopResult, train_loop

Retrieve = Callable[[str, int], list[str]]
"""``retrieve(query, k)`` -> ids of the ``k`` best texts by BM25, best first."""
CrossLoss = Literal["bce", "listwise"]


@dataclass(frozen=True, slots=True)
class Example:
    """A (query, text) pair with its relevance label (1.0 relevant, 0.0 not)."""

    query: str
    text: str
    label: float


@dataclass(frozen=True, slots=True)
class Group:
    """One phrasing of a query, one text it matches and that text's negatives (1:N)."""

    query: str
    positive: str
    negatives: tuple[str, ...]

    def examples(self) -> list[Example]:
        """The group as labelled pairs, positive first."""
        return [Example(self.query, self.positive, 1.0)] + [
            Example(self.query, text, 0.0) for text in self.negatives
        ]


@dataclass(frozen=True, slots=True)
class CrossEncoderConfig:
    """Cross-encoder settings: 10 negatives per positive, hard ones from BM25 first.

    ``batch_size`` counts pairs; listwise batches hold whole groups (at least one). The
    defaults (listwise, 4 positives per query, lr 5e-5) did best on IU X-ray
    (benchmarks/README.md).
    """

    base_model: str | None = None  # local folder; a bi-encoder folder gets a new relevance head
    loss: CrossLoss = "listwise"
    negatives: int = 10
    hard_negatives: bool = True
    bm25_depth: int = 50
    max_positives_per_query: int = 4
    batch_size: int = 33
    max_length: int = 128
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(lr=5e-5))


def cross_groups(
    queries: Sequence[TrainingQuery],
    texts: Mapping[str, str],
    retrieve: Retrieve | None,
    config: CrossEncoderConfig,
) -> list[Group]:
    """A group per sampled positive of every query; ``texts`` is the pool of candidates."""
    rng = random.Random(config.loop.seed)
    pool = sorted(texts)
    out: list[Group] = []
    for query in queries:
        text = query.variants[0]
        matched = {normalise_text(texts[i]) for i in query.matched if i in texts}

        def allowed(i: str, matched: set[str] = matched) -> bool:
            return i in texts and normalise_text(texts[i]) not in matched

        positives = sorted(query.matched & texts.keys())
        if len(positives) > config.max_positives_per_query:
            positives = sorted(rng.sample(positives, config.max_positives_per_query))
        hard: list[str] = []
        if config.hard_negatives and retrieve is not None:
            hard = list(dict.fromkeys(i for i in retrieve(text, config.bm25_depth) if allowed(i)))
        for n, positive in enumerate(positives):
            phrasing = rng.choice(query.variants)
            chosen = hard[n * config.negatives : (n + 1) * config.negatives]
            tries = 0
            while len(chosen) < config.negatives and tries < 20 * config.negatives:
                tries += 1
                candidate = rng.choice(pool)
                if allowed(candidate) and candidate not in chosen:
                    chosen.append(candidate)
            out.append(Group(phrasing, texts[positive], tuple(texts[i] for i in chosen)))
    return out


def group_batches(groups: Sequence[Group], pairs: int, seed: int) -> list[list[Group]]:
    """Shuffled groups packed into batches of at most ``pairs`` pairs (at least one group)."""
    order = list(groups)
    random.Random(seed).shuffle(order)
    batches: list[list[Group]] = []
    size = 0
    for group in order:
        n = 1 + len(group.negatives)
        if batches and size + n <= pairs:
            batches[-1].append(group)
            size += n
        else:
            batches.append([group])
            size = n
    return batches


def listwise_cross_loss(logits: torch.Tensor, sizes: Sequence[int]) -> torch.Tensor:
    """Mean cross-entropy of each group's positive (its first logit) against its negatives."""
    losses = [
        torch.logsumexp(group, dim=0) - group[0] for group in torch.split(logits, list(sizes))
    ]
    return torch.stack(losses).mean()


def train_crossencoder(
    groups: Sequence[Group],
    out: Path,
    config: CrossEncoderConfig = CrossEncoderConfig(),
) -> LoopResult:
    """Fine-tune a one-logit cross-encoder with ``config.loss``; save it at ``out``."""
    if not groups:
        raise DataError(
            "no cross-encoder training examples: no query has a labelled sentence"
        )
    if config.loss not in ("bce", "listwise"):
        raise InputError(
            f"unknown cross-encoder loss {config.loss!r} (bce or listwise)", field="loss"
        )
    model = load_cross_model(
        config.base_model, max_length=config.max_length, device=config.loop.device
    )
    bce = torch.nn.BCEWithLogitsLoss()
    examples = [e for g in groups for e in g.examples()]

    def logits_of(batch: Sequence[Example]) -> torch.Tensor:
        features = to_device(model.preprocess([(e.query, e.text) for e in batch]), model.device)
        return model(features)["scores"].view(-1)

    def backward(loss: torch.Tensor) -> float:
        loss.backward()
        return float(loss.detach())

    def save(folder: Path) -> None:
        model.save(str(folder))

    def bce_batches(epoch: int) -> list[list[Example]]:
        order = list(examples)
        random.Random(config.loop.seed + epoch).shuffle(order)
        return [order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)]

    def bce_step(batch: list[Example]) -> float:
        logits = logits_of(batch)
        labels = torch.tensor([e.label for e in batch], device=logits.device)
        return backward(bce(logits.float(), labels))

    def listwise_batches(epoch: int) -> list[list[Group]]:
        return group_batches(groups, config.batch_size, config.loop.seed + epoch)

    def listwise_step(batch: list[Group]) -> float:
        logits = logits_of([e for g in batch for e in g.examples()])
        return backward(listwise_cross_loss(logits, [1 + len(g.negatives) for g in batch]))

    meta = {
        "kind": "crossencoder",
        **{k: v for k, v in asdict(config).items() if k != "loop"},
        "examples": len(examples),
        "positives": len(groups),
    }
    if config.loss == "listwise":
        return train_loop(model, listwise_batches, listwise_step, config.loop, out, save, meta)
    return train_loop(model, bce_batches, bce_step, config.loop, out, save, meta)
