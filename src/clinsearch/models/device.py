"""Where models run: one resolver from ``auto|cpu|cuda[:N]`` to a torch device, with the batch
size and precision that suit it (fp16 inference and bf16 training on a GPU, fp32 on the CPU).

Every model loader and trainer asks here; nothing else names a device. The process-wide
choice (``use_device``, the CLI's ``--device``, or ``CLINSEARCH_DEVICE``) applies wherever a
caller passes no device of its own; ``auto`` takes the first GPU torch sees, else the CPU.
"""

from __future__ import annotations

import os
import re
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from clinsearch.errors import InputError

DEVICE_ENV = "CLINSEARCH_DEVICE"
DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"
_SPEC = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")
CPU_ENCODE_BATCH = 64
GPU_ENCODE_BATCH = 1024
CPU_SCORE_BATCH = 32
GPU_SCORE_BATCH = 512

_chosen: str | None = None


@dataclass(frozen=True, slots=True)
class Device:
    """A resolved device: its torch name and what suits it."""

    name: str  # "cpu" or "cuda:N"
    encode_batch: int  # texts per forward pass when encoding
    score_batch: int  # (query, passage) pairs per forward pass when re-ranking
    inference_dtype: str  # "float32" or "float16": weights of models loaded for inference
    train_dtype: str  # "float32" or "bfloat16": autocast precision of training steps

    @property
    def is_gpu(self) -> bool:
        """True on a CUDA device."""
        return self.name != "cpu"

    def autocast(self) -> AbstractContextManager[Any]:
        """The mixed-precision context of a training step (none on the CPU or without bf16)."""
        if self.train_dtype == "float32":
            return nullcontext()
        import torch

        return torch.autocast(device_type="cuda", dtype=getattr(torch, self.train_dtype))


def use_device(spec: str | None) -> Device:
    """Make ``spec`` the process-wide device (checked now) and return it; None: back to the
    environment's ``CLINSEARCH_DEVICE`` or ``auto``."""
    global _chosen
    device = resolve_device(spec)
    _chosen = spec
    return device


def resolve_device(spec: str | None = None, *, field: str = "--device") -> Device:
    """The device ``spec`` names (None: the process-wide choice). An unknown name, or a GPU
    torch cannot see, raises ``InputError`` naming ``field``."""
    text = (spec or _chosen or os.environ.get(DEVICE_ENV) or "auto").strip().lower()
    match = _SPEC.match(text)
    if match is None:
        raise InputError(f"unknown device {text[:40]!r}; use {DEVICE_CHOICES}", field=field)
    kind, number = match.group(1), match.group(2)
    if kind == "auto" and number is not None:
        raise InputError(f"unknown device {text!r}; use {DEVICE_CHOICES}", field=field)
    if kind == "cpu":
        if number is not None:
            raise InputError(f"unknown device {text!r}; use {DEVICE_CHOICES}", field=field)
        return _cpu()
    gpus = _gpu_count()
    if kind == "auto":
        return _gpu(0) if gpus else _cpu()
    index = int(number or 0)
    if index >= gpus:
        seen = f"torch sees {gpus} GPU(s)" if gpus else "torch sees no GPU"
        raise InputError(f"device {text!r} is not available: {seen}", field=field)
    return _gpu(index)


def _cpu() -> Device:
    return Device("cpu", CPU_ENCODE_BATCH, CPU_SCORE_BATCH, "float32", "float32")


def _gpu(index: int) -> Device:
    import torch

    bf16 = bool(torch.cuda.is_bf16_supported())
    return Device(f"cuda:{index}", GPU_ENCODE_BATCH, GPU_SCORE_BATCH, "float16",
                  "bfloat16" if bf16 else "float32")


def _gpu_count() -> int:
    """How many CUDA devices torch sees (0 without a CUDA build or driver)."""
    import torch

    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def to_device(features: dict[str, Any], device: Any) -> dict[str, Any]:
    """A tokenised batch with its tensors moved to ``device`` (other values kept as they are)."""
    import torch

    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}


def for_inference(model: Any, device: Device) -> Any:
    """``model`` in eval mode on ``device`` in the device's inference precision."""
    import torch

    model.to(device.name)
    if device.inference_dtype != "float32":
        model.to(getattr(torch, device.inference_dtype))
    model.eval()
    return model
