"""Cross-encoder loaded from a local folder: scores (query, passage) pairs in batches.

A passage too long for the model's window beside the query is split into overlapping windows
and scores as its best window ([Soni2020] and [CAPR2021] re-rank with full query-passage attention).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from clinsearch.errors import ClinsearchError
from clinsearch.models.device import Device, for_inference, resolve_device
from clinsearch.models.folder import (
    check_model_folder,
    fingerprint,
    load_model_folder,
    transformer_folder,
)
from clinsearch.models.threads import torch_threads
from clinsearch.models.windows import split_windows

MIN_PASSAGE_TOKENS = 16


class CrossEncoderScorer:
    """A sequence-classification model scoring relevance of a passage to a query."""

    def __init__(self, path: str | Path, *, device: str | None = None) -> None:
        """Load the cross-encoder at ``path`` onto ``device`` (default: the process-wide
        choice); hub access is off."""
        from sentence_transformers import CrossEncoder

        self.device: Device = resolve_device(device)
        self.path, model = load_model_folder(
            lambda folder: CrossEncoder(folder, device=self.device.name, local_files_only=True),
            path,
            "cross-encoder model",
        )
        for_inference(model.model, self.device)
        self.model = model
        self.fingerprint = fingerprint(self.path)
        self.max_length = int(self.model.max_seq_length)

    def score(
        self,
        query: str,
        passages: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: bool = False,
    ) -> np.ndarray:
        """Relevance of each passage to ``query`` (higher is better), float64, one per passage;
        ``batch_size`` pairs per pass (default: the device's)."""
        if not passages:
            return np.zeros(0, dtype=np.float64)
        tokenizer = self.model.tokenizer
        query_tokens = len(tokenizer(query, add_special_tokens=False, verbose=False)["input_ids"])
        budget = self.max_length - query_tokens - tokenizer.num_special_tokens_to_add(pair=True)
        if budget < MIN_PASSAGE_TOKENS:
            raise ClinsearchError(
                f"query too long for the cross-encoder: {query_tokens} tokens leave {budget} of "
                f"its {self.max_length} for the passage (at least {MIN_PASSAGE_TOKENS} needed)"
            )
        windows = split_windows(tokenizer, passages, budget, budget // 4)
        pairs = [(query, passages[w.owner][w.start : w.end]) for w in windows]
        import torch

        with torch_threads(1 if len(pairs) <= 2 else None):
            raw = self.model.predict(
                pairs,
                batch_size=batch_size or self.device.score_batch,
                show_progress_bar=progress,
                convert_to_numpy=True,
                activation_fn=torch.nn.Identity(),  # raw logits: a sigmoid would tie in float32
            )
        window_scores = _relevance(np.asarray(raw, dtype=np.float64))
        best = np.full(len(passages), -np.inf)
        np.maximum.at(best, np.fromiter((w.owner for w in windows), dtype=np.int64), window_scores)
        return best


def _relevance(raw: np.ndarray) -> np.ndarray:
    """One relevance score per pair: the logit itself, or for a multi-class head the log-odds
    of the last class (relevant), monotone in its probability but without float saturation."""
    from scipy.special import logsumexp

    if raw.ndim == 1:
        return raw
    if raw.shape[1] == 1:
        return raw[:, 0]
    return raw[:, -1] - logsumexp(raw[:, :-1], axis=1)


@functools.lru_cache(maxsize=4)
def _load_cached(path: Path, device: str) -> CrossEncoderScorer:
    """One loaded cross-encoder per resolved folder and device for the life of the process."""
    return CrossEncoderScorer(path, device=device)


def load_cross_encoder(path: str | Path, *, device: str | None = None) -> CrossEncoderScorer:
    """The cross-encoder at ``path``, loaded once per process and then reused; a folder that
    holds no sequence-classification model (a bi-encoder, a bare encoder) is refused, since
    loading it would rank with a randomly initialised head."""
    folder = check_model_folder(path, "cross-encoder model")
    config = transformer_folder(folder) / "config.json"
    try:
        architectures = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, json.JSONDecodeError, AttributeError) as exc:
        raise ClinsearchError(f"cross-encoder model folder {folder}: unreadable config.json"
                              f" ({exc})") from None
    if not any(str(a).endswith("ForSequenceClassification") for a in architectures):
        named = ", ".join(map(str, architectures)) or "no architecture"
        raise ClinsearchError(
            f"{folder} is not a cross-encoder (its config.json names {named}, not a"
            " ...ForSequenceClassification model): give a folder from 'clinsearch train"
            " crossencoder' or another sequence-classification re-ranker")
    return _load_cached(folder, resolve_device(device).name)
