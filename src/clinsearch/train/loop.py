"""The shared training loop: AdamW with linear warm-up and decay, progress bar, checkpoints, resume.

Batches of epoch ``e`` come from a deterministic function of ``e``, so a run resumed from a
checkpoint skips exactly the steps already taken and continues with the same data order.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from clinsearch.atomic import atomic_write_dir
from clinsearch.errors import ClinsearchError, DataError
from clinsearch.models.device import resolve_device
from clinsearch.permissions import make_private

B = TypeVar("B")
STATE_FILE = "state.pt"
_CHECKPOINT_KEYS = {"model", "optimizer", "scheduler", "rng", "step", "losses"}
LOG_FILE = "training.json"


@dataclass(frozen=True, slots=True)
class LoopConfig:
    """Optimiser and schedule settings shared by every trainer ([Shi2022] appendix defaults)."""

    epochs: int = 1
    lr: float = 2e-5
    weight_decay: float = 0.01
    warmup_steps: int = 100  # capped at a tenth of the run, so tiny runs still learn
    max_steps: int | None = None
    max_grad_norm: float = 1.0
    seed: int = 13
    checkpoint_every: int = 200
    resume: bool = False
    keep_checkpoint: bool = False
    progress: bool = True
    desc: str = "training"
    device: str | None = None  # auto|cpu|cuda[:N]; None: the process-wide choice (models.device)


@dataclass(slots=True)
class LoopResult:
    """What a run did: steps, per-step losses, wall time and the process's peak memory."""

    out: Path
    steps: int
    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    resumed_from: int = 0


def checkpoint_dir(out: Path) -> Path:
    """Where checkpoints of a run writing ``out`` live: a sibling folder ``OUT.ckpt``."""
    out = Path(out)
    return out.with_name(out.name + ".ckpt")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def warmup_for(total: int, requested: int) -> int:
    """Warm-up steps: as requested, but never more than a tenth of the run."""
    return max(0, min(requested, total // 10))


def _optimizer(model: torch.nn.Module, config: LoopConfig) -> torch.optim.Optimizer:
    """AdamW with weight decay on weights only (not biases or layer norms)."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if param.ndim < 2 or "LayerNorm" in name else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": config.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.lr)


def check_model_out(out: Path) -> Path:
    """Refuse, before training, an ``out`` that the finished model must not replace: anything
    but a new or empty folder or a model clinsearch trained (one holding ``training.json``)."""
    out = Path(out)
    if not os.path.lexists(out):
        return out
    if not out.is_dir():
        raise ClinsearchError(f"{out}: exists and is not a model folder; choose a new folder")
    if any(out.iterdir()) and not (out / LOG_FILE).is_file():
        raise ClinsearchError(
            f"{out}: refusing to replace a folder that is not a model trained by clinsearch (it"
            f" has no {LOG_FILE}); choose a new or empty folder")
    return out


def train_loop(
    model: torch.nn.Module,
    batches_for_epoch: Callable[[int], Sequence[B]],
    step: Callable[[B], float],
    config: LoopConfig,
    out: Path,
    save: Callable[[Path], None],
    meta: dict[str, Any] | None = None,
) -> LoopResult:
    """Train ``model`` with ``step(batch)`` (computes the loss, calls backward) and save it.

    Each step runs under the device's mixed precision (bf16 autocast on a GPU that has it).

    The finished model is written by ``save(folder)`` into ``out`` atomically, with a
    ``training.json`` log (config, ``meta``, losses, time, peak memory).
    """
    out = check_model_out(out)
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)
    plan = [len(batches_for_epoch(e)) for e in range(config.epochs)]
    total = sum(plan) if config.max_steps is None else min(sum(plan), config.max_steps)
    if total == 0:
        raise DataError("no training batches: the labels need at least two labelled pairs")
    optimizer = _optimizer(model, config)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, warmup_for(total, config.warmup_steps), total
    )
    result = LoopResult(out=out, steps=0)
    ckpt = checkpoint_dir(out)
    if config.resume and (ckpt / STATE_FILE).exists():
        state = load_checkpoint(ckpt / STATE_FILE)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"])
        result.steps = result.resumed_from = int(state["step"])
        result.losses = list(state["losses"])
    started = time.perf_counter()
    model.train()
    bar = tqdm(total=total, initial=result.steps, desc=config.desc, disable=not config.progress)
    done = 0
    for epoch in range(config.epochs):
        batches = batches_for_epoch(epoch)
        for batch in batches:
            if result.steps >= total:
                break
            done += 1
            if done <= result.steps:  # taken before the checkpoint we resumed from
                continue
            with device.autocast():
                loss = step(batch)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            result.steps += 1
            result.losses.append(loss)
            bar.update(1)
            bar.set_postfix(loss=f"{loss:.4f}", epoch=epoch + 1)
            if config.checkpoint_every and result.steps % config.checkpoint_every == 0:
                _save_checkpoint(ckpt, model, optimizer, scheduler, result)
    bar.close()
    model.eval()
    result.seconds = time.perf_counter() - started
    result.peak_rss_mb = peak_rss_mb()
    log = {
        "config": asdict(config),
        "meta": meta or {},
        "steps": result.steps,
        "resumed_from": result.resumed_from,
        "seconds": round(result.seconds, 2),
        "peak_rss_mb": round(result.peak_rss_mb, 1),
        "losses": [round(x, 6) for x in result.losses],
    }

    def write(folder: Path) -> None:
        save(folder)
        (folder / LOG_FILE).write_text(json.dumps(log, indent=1), encoding="utf-8")
        make_private(folder)  # a model trained on reports is private like the reports

    atomic_write_dir(out, write)
    if not config.keep_checkpoint:
        shutil.rmtree(ckpt, ignore_errors=True)
    return result


def load_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint's tensors and plain data; never unpickles objects (a crafted file could run
    code), so anything else in it is refused with an error naming the file."""
    try:
        state = torch.load(path, weights_only=True, map_location="cpu")
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ClinsearchError(
            f"{path}: not a plain tensor checkpoint, refusing to load it ({reason[:200]})"
        ) from None
    if not isinstance(state, dict) or not state.keys() >= _CHECKPOINT_KEYS:
        raise ClinsearchError(f"{path}: not a clinsearch training checkpoint")
    return state


def _save_checkpoint(
    ckpt: Path,
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    result: LoopResult,
) -> None:
    """Write model, optimiser, schedule, step, losses and random state into ``ckpt`` atomically
    (tensors and plain data only, so that ``load_checkpoint`` reads it without unpickling)."""
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
        "step": result.steps,
        "losses": result.losses,
    }
    atomic_write_dir(ckpt, lambda folder: torch.save(state, folder / STATE_FILE))
