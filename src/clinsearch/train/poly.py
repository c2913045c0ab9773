"""Poly-encoder training ([CAPR2021]) on the same weak labels as the bi-encoder ([Shi2022]).

Batches are the bi-encoder's (pairs of a query phrasing and a matched text, opposite-polarity
pairs alongside); every other text of the batch is a negative of a query unless it matches it
too, and the loss is listwise over the poly-encoder's scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from clinsearch.models.poly_encoder import PolyEncoder
from clinsearch.train.batching import Batch, TrainingQuery, epoch_batches, training_pairs
from clinsearch.train.loop import LoopConfig, LoopResult, train_loop
from clinsearch.train.losses import listwise_scores_loss


@dataclass(frozen=True, slots=True)
class PolyConfig:
    """Poly-encoder settings: ``codes`` learned codes (m), in-batch listwise loss."""

    base_model: str | None = None  # local folder; None: the packaged all-MiniLM-L6-v2
    codes: int = 16
    scale: float = 20.0  # listwise loss: score scale (inverse temperature)
    batch_size: int = 32  # pairs per batch: the pool of in-batch negatives
    max_seq_length: int = 128
    max_pairs_per_query: int | None = None
    pair_opposites: bool = True
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(lr=5e-5))


def train_poly_encoder(
    queries: Sequence[TrainingQuery],
    texts: Mapping[str, str],
    out: Path,
    config: PolyConfig = PolyConfig(),
) -> LoopResult:
    """Train a poly-encoder on (query, matched text) pairs and save it at ``out`` (plain folder:
    safetensors and JSON), with ``training.json`` beside it."""
    model = PolyEncoder.from_base(
        config.base_model, codes=config.codes, max_length=config.max_seq_length,
        device=config.loop.device, seed=config.loop.seed,
    )
    pairs = training_pairs(queries, max_per_query=config.max_pairs_per_query, seed=config.loop.seed)

    def batches(epoch: int) -> list[Batch]:
        return epoch_batches(
            queries, pairs, texts, batch_size=config.batch_size, seed=config.loop.seed + epoch,
            pair_opposites=config.pair_opposites,
        )

    def step(batch: Batch) -> float:
        scores = model.module.scores(
            model.module.query_vectors(model.tokenize(batch.queries)),
            model.module.code_vectors(model.tokenize(batch.texts)),
        )
        loss = listwise_scores_loss(scores, batch.matches, scale=config.scale)
        loss.backward()
        return float(loss.detach())

    meta = {
        "kind": "poly",
        **{k: v for k, v in asdict(config).items() if k != "loop"},
        "queries": len(queries),
        "pairs": len(pairs),
    }
    return train_loop(model.module, batches, step, config.loop, out, model.save, meta)
