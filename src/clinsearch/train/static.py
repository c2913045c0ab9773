"""Static encoder training: [Shi2022]'s schedule (triplet loss, hardest in-batch negatives,
mega-batches of 128 pairs, 10 epochs) or [CAPR2021]'s (entity, section) objective, applied to a
static model (``models.static``) through the bi-encoder trainer (``train_biencoder`` with
``static_config``), on the CPU in minutes.

A static model has no dropout and holds one table, so a mega-batch fits in one pass (no
gradient caching), and its rows need a far larger step than a transformer's weights: the
learning rate is 0.05 and there is no weight decay (see benchmarks/results/static.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from clinsearch.models.static_distill import distill
from clinsearch.train.biencoder import BiEncoderConfig
from clinsearch.train.loop import LoopConfig

STATIC_LR = 0.05
STATIC_EPOCHS = 10
MEGA_BATCH = 128


def static_config(
    base: str | Path, loop: LoopConfig | None = None, **changes: object
) -> BiEncoderConfig:
    """[Shi2022]'s schedule for the static model at ``base`` (``loop``: default 10 epochs at
    ``STATIC_LR``, no weight decay); ``changes`` override other fields."""
    loop = loop or LoopConfig(epochs=STATIC_EPOCHS, lr=STATIC_LR, weight_decay=0.0, desc="static")
    config = BiEncoderConfig(
        base_model=str(base), loss="triplet", negatives="hard", batch_size=MEGA_BATCH,
        chunk_size=2 * MEGA_BATCH, pair_opposites=True, loop=loop,
    )
    return replace(config, **changes)  # type: ignore[arg-type]


def distilled_base(base: str | Path | None, work: Path) -> Path:
    """``base`` if it is a static folder, else the static model distilled from it (default
    MiniLM) into ``work``."""
    from clinsearch.models.folder import check_model_folder
    from clinsearch.models.static import is_static_folder

    if base is not None:
        folder = check_model_folder(base, "base model")
        if is_static_folder(folder):
            return folder
    return distill(base, work / "distilled")
