"""Cross-encoder fine-tuning (papers 002, 004): binary relevance of (query, text) pairs.

Every matched text of a query is a positive; each positive gets ``negatives`` negatives (1:10 as
in paper 002), first the query's BM25 hits that do not match it (hard negatives), then random
texts. A candidate whose text equals a matched text (a duplicate sentence) is never a negative.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from clinsearch.train.base import load_cross_model
from clinsearch.train.batching import TrainingQuery
from clinsearch.train.labels import normalise_text
from clinsearch.train.loop import LoopConfig, LoopResult, train_loop

Retrieve = Callable[[str, int], list[str]]
"""``retrieve(query, k)`` -> ids of the ``k`` best texts by BM25, best first."""


@dataclass(frozen=True, slots=True)
class Example:
    """A (query, text) pair with its relevance label (1.0 relevant, 0.0 not)."""

    query: str
    text: str
    label: float


@dataclass(frozen=True, slots=True)
class CrossEncoderConfig:
    """Cross-encoder settings: 10 negatives per positive, hard ones from BM25 first."""

    base_model: str | None = None  # local folder; a bi-encoder folder gets a new relevance head
    negatives: int = 10
    hard_negatives: bool = True
    bm25_depth: int = 50
    max_positives_per_query: int = 8
    batch_size: int = 16
    max_length: int = 128
    loop: LoopConfig = field(default_factory=LoopConfig)


def cross_examples(
    queries: Sequence[TrainingQuery],
    texts: Mapping[str, str],
    retrieve: Retrieve | None,
    config: CrossEncoderConfig,
) -> list[Example]:
    """Positives and negatives for every query; ``texts`` is the pool (every candidate's text)."""
    rng = random.Random(config.loop.seed)
    pool = sorted(texts)
    out: list[Example] = []
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
            out.append(Example(rng.choice(query.variants), texts[positive], 1.0))
            chosen = hard[n * config.negatives : (n + 1) * config.negatives]
            tries = 0
            while len(chosen) < config.negatives and tries < 20 * config.negatives:
                tries += 1
                candidate = rng.choice(pool)
                if allowed(candidate) and candidate not in chosen:
                    chosen.append(candidate)
            out.extend(Example(rng.choice(query.variants), texts[i], 0.0) for i in chosen)
    return out


def train_crossencoder(
    examples: Sequence[Example],
    out: Path,
    config: CrossEncoderConfig = CrossEncoderConfig(),
) -> LoopResult:
    """Fine-tune a one-logit cross-encoder with binary cross-entropy; save it at ``out``."""
    if not examples:
        raise ValueError("no cross-encoder training examples")
    model = load_cross_model(config.base_model, max_length=config.max_length)
    bce = torch.nn.BCEWithLogitsLoss()

    def batches(epoch: int) -> list[list[Example]]:
        order = list(examples)
        random.Random(config.loop.seed + epoch).shuffle(order)
        return [order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)]

    def step(batch: list[Example]) -> float:
        features = model.preprocess([(e.query, e.text) for e in batch])
        logits = model(dict(features))["scores"].view(-1)
        loss = bce(logits, torch.tensor([e.label for e in batch]))
        loss.backward()
        return float(loss.detach())

    positives = sum(1 for e in examples if e.label > 0)
    meta = {
        "kind": "crossencoder",
        **{k: v for k, v in asdict(config).items() if k != "loop"},
        "examples": len(examples),
        "positives": positives,
    }
    return train_loop(model, batches, step, config.loop, out, lambda f: model.save(str(f)), meta)
