"""Bi-encoder fine-tuning on weak labels ([Shi2022]): triplet or listwise loss, in-batch negatives.

Negatives come from the batch: for each query, the most similar sentence that does not match it
(hard sampling) or a random non-matching one; sentences that also match the query are masked.
A batch larger than ``chunk_size`` is a mega-batch trained through gradient caching.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch

from clinsearch.models.base_models import load_sentence_model, save_sentence_model
from clinsearch.train.batching import Batch, TrainingQuery, epoch_batches, training_pairs
from clinsearch.train.gradcache import cached_backward
from clinsearch.train.loop import LoopConfig, LoopResult, train_loop
from clinsearch.train.losses import NegativeSampling, listwise_loss, triplet_loss

LossName = Literal["triplet", "listwise"]


@dataclass(frozen=True, slots=True)
class BiEncoderConfig:
    """Bi-encoder settings: [Shi2022]'s loss (triplet, margin 0.5, hard negatives, lr 2e-5) on
    batches of 32 with opposite-polarity pairs, the setting that measured best on unseen findings
    (benchmarks/README.md); ``batch_size=128`` gives [Shi2022]'s mega-batch."""

    base_model: str | None = None  # local folder; None: the packaged all-MiniLM-L6-v2
    loss: LossName = "triplet"
    negatives: NegativeSampling = "hard"
    margin: float = 0.5
    scale: float = 20.0  # listwise loss: similarity scale (inverse temperature)
    batch_size: int = 32  # pairs per (mega-)batch: the pool of in-batch negatives
    chunk_size: int = 64  # texts (queries + sentences) encoded with a graph at once: bounds memory
    max_seq_length: int = 128
    max_pairs_per_query: int | None = None
    pair_opposites: bool = True  # each pair brings one of its opposite-polarity query along
    loop: LoopConfig = field(default_factory=LoopConfig)


def biencoder_loss(batch: Batch, embeddings: torch.Tensor, config: BiEncoderConfig) -> torch.Tensor:
    """The configured loss on a batch whose query embeddings precede its sentence embeddings."""
    n = len(batch.queries)
    queries, sentences = embeddings[:n], embeddings[n:]
    if config.loss == "listwise":
        return listwise_loss(queries, sentences, batch.matches, scale=config.scale)
    return triplet_loss(
        queries, sentences, batch.matches, margin=config.margin, negatives=config.negatives
    )


def train_biencoder(
    queries: Sequence[TrainingQuery],
    texts: Mapping[str, str],
    out: Path,
    config: BiEncoderConfig = BiEncoderConfig(),
) -> LoopResult:
    """Fine-tune a sentence-transformers model on (query, matched text) pairs; save it at ``out``.

    The saved folder is a plain sentence-transformers model (loadable by ``search --model``),
    or a static model folder when the base is one (``models.static``), with ``training.json``
    recording the settings, losses, time and peak memory.
    """
    model = load_sentence_model(
        config.base_model, max_seq_length=config.max_seq_length, device=config.loop.device
    )
    pairs = training_pairs(queries, max_per_query=config.max_pairs_per_query, seed=config.loop.seed)

    def batches(epoch: int) -> list[Batch]:
        return epoch_batches(
            queries,
            pairs,
            texts,
            batch_size=config.batch_size,
            seed=config.loop.seed + epoch,
            pair_opposites=config.pair_opposites,
        )

    def step(batch: Batch) -> float:
        return cached_backward(
            model,
            batch.queries + batch.texts,
            lambda emb: biencoder_loss(batch, emb, config),
            chunk_size=config.chunk_size,
        )

    meta = {
        "kind": "biencoder",
        **{k: v for k, v in asdict(config).items() if k != "loop"},
        "queries": len(queries),
        "pairs": len(pairs),
    }
    return train_loop(model, batches, step, config.loop, out,
                      lambda f: save_sentence_model(model, f, meta), meta)
