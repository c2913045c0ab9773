"""Sentence encoder loaded from a local folder: mean-pooled, L2-normalised, batched, windowed.

Any sentence-transformers folder (its own pooling is kept) or plain Hugging Face model folder
(mean pooling is added) works. Passages longer than the encoder's window are split into
overlapping windows, one vector each; a passage then scores as its best window.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clinsearch.errors import ClinsearchError
from clinsearch.models.device import Device, for_inference, resolve_device, to_device
from clinsearch.models.folder import (
    default_encoder_path,
    fingerprint,
    load_model_folder,
)
from clinsearch.models.model_names import check_named_model
from clinsearch.models.static import StaticEncoder, is_static_folder
from clinsearch.models.threads import torch_threads
from clinsearch.models.windows import PassageVectors, split_windows

SMALL_INPUT = 8  # this many texts or fewer are encoded on one thread (see models.threads)


class SentenceEncoder:
    """A sentence-transformers model from a local path with its identity (path and fingerprint),
    on one device (``models.device``: fp16 on a GPU)."""

    def __init__(self, path: str | Path | None = None, *, device: str | None = None) -> None:
        """Load the model at ``path`` (default: packaged all-MiniLM-L6-v2) onto ``device``
        (default: the process-wide choice); hub access is off."""
        from sentence_transformers import SentenceTransformer

        self.device: Device = resolve_device(device)
        self.path, model = load_model_folder(
            lambda folder: SentenceTransformer(folder, device=self.device.name,
                                               local_files_only=True),
            path or default_encoder_path(),
            "encoder model",
        )
        self.model = for_inference(model, self.device)
        self.fingerprint = fingerprint(self.path)
        self.dim = int(self.model.get_embedding_dimension() or 0)
        special = self.model.tokenizer.num_special_tokens_to_add(pair=False)
        self.max_tokens = int(self.model.max_seq_length) - special
        self.overlap = self.max_tokens // 4

    def encode_queries(
        self,
        queries: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool = False,
    ) -> np.ndarray:
        """One unit vector per query; a query longer than the window is the mean of its windows."""
        with torch_threads(1 if len(queries) <= SMALL_INPUT else None):
            passages = self.encode_passages(queries, batch_size=batch_size, progress=progress)
        summed = np.zeros((len(queries), self.dim), dtype=np.float32)
        np.add.at(summed, passages.owner, passages.vectors)
        return _normalise(summed)

    def encode_passages(
        self,
        passages: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool = False,
    ) -> PassageVectors:
        """Window vectors for each passage; identical passages are encoded once. Batches hold
        ``batch_size`` texts (default: the device's)."""
        unique = list(dict.fromkeys(passages))
        position = {text: i for i, text in enumerate(unique)}
        windows = split_windows(self.model.tokenizer, unique, self.max_tokens, self.overlap)
        texts = [unique[w.owner][w.start : w.end] for w in windows]
        vectors = self._encode(texts, batch_size or self.device.encode_batch, progress)
        window_owner = np.fromiter((w.owner for w in windows), dtype=np.int64, count=len(windows))
        # Fan the unique passages' windows back out to every input position.
        by_unique: list[list[int]] = [[] for _ in unique]
        for row, owner in enumerate(window_owner):
            by_unique[owner].append(row)
        rows = [r for text in passages for r in by_unique[position[text]]]
        owner = [i for i, text in enumerate(passages) for _ in by_unique[position[text]]]
        return PassageVectors(vectors[rows], np.asarray(owner, dtype=np.int64))

    def _encode(self, texts: list[str], batch_size: int, progress: bool) -> np.ndarray:
        """Encode texts that fit the window: float32 unit vectors, shape (len(texts), dim).

        Batches are formed over texts sorted by length so padding stays small.
        """
        import torch
        from tqdm.auto import tqdm

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        starts = range(0, len(order), batch_size)
        with torch.inference_mode():
            for start in tqdm(starts, desc="encoding", unit="batch", disable=not progress):
                rows = order[start : start + batch_size]
                features = self.model.preprocess([texts[i] for i in rows])
                features = to_device(features, self.model.device)
                embedded = self.model(features)["sentence_embedding"]
                out[rows] = torch.nn.functional.normalize(embedded, dim=1).float().cpu().numpy()
        return out


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


_LOADING = threading.Lock()  # one load at a time: two threads asking never load a model twice


@functools.lru_cache(maxsize=4)
def _load_cached(path: Path, device: str) -> SentenceEncoder | StaticEncoder:
    """One loaded encoder per resolved folder and device for the life of the process."""
    if is_static_folder(path):
        return StaticEncoder(path, fingerprint(path))
    return SentenceEncoder(path, device=device)


class DeferredEncoder:
    """The identity (path, fingerprint) of an index's recorded encoder with its recorded
    dimension, the model itself loaded on the first encode: an add whose sentences all have
    vectors already, or whose vectors come computed, never imports torch."""

    def __init__(self, path: str | Path | None, dim: int) -> None:
        self.path = check_named_model(path or default_encoder_path(), "encoder model")
        self.fingerprint = fingerprint(self.path)
        self.dim = dim

    def encode_passages(self, passages: Sequence[str], **options: Any) -> PassageVectors:
        """``encode_passages`` of the loaded model (loaded once per process)."""
        encoder = load_encoder(self.path)
        if encoder.dim != self.dim:
            raise ClinsearchError(f"encoder model {self.path} gives vectors of {encoder.dim}"
                                  f" dimensions, not the {self.dim} the index records")
        return encoder.encode_passages(passages, **options)


def load_encoder(
    path: str | Path | None = None, *, device: str | None = None
) -> SentenceEncoder | StaticEncoder:
    """The encoder at ``path`` (default MiniLM; ``static``: the default static model) on
    ``device`` (default: the process-wide choice), loaded once per process and then reused. A
    static model folder gives a ``StaticEncoder`` (numpy, the CPU: ``models.static``)."""
    folder = check_named_model(path or default_encoder_path(), "encoder model")
    with _LOADING:
        if is_static_folder(folder):
            return _load_cached(folder, "cpu")
        return _load_cached(folder, resolve_device(device).name)
