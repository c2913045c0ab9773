"""A BERT sentence encoder in MiniLM's layout (mean pooling, unit vectors) run in NumPy, for a
few short texts.

A query word the lexicon does not know is embedded by the term encoder, MiniLM by default;
importing torch and sentence-transformers for that took most of a cold CLI search's seconds
(``benchmarks/results/numpy_term_encoder.md``). The same weights (``model.safetensors``) and
tokenizer (``tokenizer.json``) give the same vectors here (within 1e-6, tested against
sentence-transformers) with numpy, safetensors and tokenizers only. Folders in any other layout,
and texts longer than the model's window, are left to ``models.encoder``.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

# sentence-transformers modules of the one layout run here: BERT, mean pooling, unit length
LAYOUT = ("sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
          "sentence_transformers.models.Normalize")
# Abramowitz & Stegun 7.1.26: erf within 1.5e-7 (GELU's), vectorised (the math module's is not)
_ERF_P = 0.3275911
_ERF_A = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
_LOADING = threading.Lock()  # one load at a time: two threads asking never load it twice


def numpy_bert(folder: Path) -> NumpyBert | None:
    """``NumpyBert.load(folder)``, once per folder for the life of the process (the term
    encoder and every dense retriever share it, as ``models.encoder.load_encoder`` shares its
    models)."""
    with _LOADING:
        return _loaded(folder)


@dataclass(frozen=True)
class NumpyBert:
    """A BERT encoder's weights (by their names in the checkpoint) and tokenizer."""

    weights: dict[str, np.ndarray]
    tokenizer: Any  # tokenizers.Tokenizer
    layers: int
    heads: int
    eps: float
    max_tokens: int  # the window, [CLS] and [SEP] included

    @classmethod
    def load(cls, folder: Path) -> NumpyBert | None:
        """The encoder in ``folder``, or None when the folder is not a BERT with mean pooling
        and unit vectors (its files read as JSON and safetensors: nothing executed)."""
        try:
            modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(
                encoding="utf-8"))
            window = json.loads((folder / "sentence_bert_config.json").read_text(
                encoding="utf-8"))
        except (OSError, ValueError):
            return None
        plain = (tuple(m.get("type") for m in modules) == LAYOUT
                 and config.get("model_type") == "bert" and config.get("hidden_act") == "gelu"
                 and config.get("position_embedding_type", "absolute") == "absolute"
                 and pooling.get("pooling_mode_mean_tokens") is True
                 and not any(v for k, v in pooling.items()
                             if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"))
        if not plain or not (folder / "model.safetensors").is_file():
            return None
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            return cls(load_file(str(folder / "model.safetensors")), tokenizer,
                       int(config["num_hidden_layers"]), int(config["num_attention_heads"]),
                       float(config["layer_norm_eps"]),
                       min(int(window.get("max_seq_length", 512)),
                           int(config["max_position_embeddings"])))
        except MemoryError:  # the server's memory guard stopping this request: not a decline
            raise
        except Exception:  # unreadable weights or tokenizer: models.encoder's load says why
            return None

    def encode(self, texts: Sequence[str]) -> np.ndarray | None:
        """One unit vector per text (float32), or None when a text is longer than the window
        (``models.encoder`` splits those into windows)."""
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]
        if any(len(i) > self.max_tokens for i in ids):
            return None
        out = np.zeros((len(ids), self.weights["embeddings.word_embeddings.weight"].shape[1]),
                       np.float32)
        for row, tokens in enumerate(ids):
            mean = self._hidden(np.asarray(tokens, np.int64)).mean(axis=0)
            out[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        return out

    def _hidden(self, ids: np.ndarray) -> np.ndarray:
        """The last layer's token states of one text (no padding, so no attention mask)."""
        w, n = self.weights, len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        width = x.shape[1] // self.heads
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            q, k, v = (self._dense(x, f"{p}attention.self.{name}").reshape(n, self.heads, width)
                       .transpose(1, 0, 2) for name in ("query", "key", "value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(width)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(1, 0, 2).reshape(n, -1)
            x = self._norm(self._dense(attended, f"{p}attention.output.dense") + x,
                           f"{p}attention.output.LayerNorm")
            h = self._dense(x, f"{p}intermediate.dense")
            h = h * 0.5 * (1.0 + _erf(h / math.sqrt(2.0)))
            x = self._norm(self._dense(h, f"{p}output.dense") + x, f"{p}output.LayerNorm")
        return x

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.weights[f"{name}.weight"].T + self.weights[f"{name}.bias"]

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return ((x - mean) / np.sqrt(var + self.eps) * self.weights[f"{name}.weight"]
                + self.weights[f"{name}.bias"])


def _erf(x: np.ndarray) -> np.ndarray:
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + _ERF_P * a)
    poly = 0.0
    for coefficient in _ERF_A:
        poly = (poly + coefficient) * t
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


@lru_cache(maxsize=4)
def _loaded(folder: Path) -> NumpyBert | None:
    return NumpyBert.load(folder)
