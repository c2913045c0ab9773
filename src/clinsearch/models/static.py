"""Static sentence encoder: a sentence is the mean of its tokens' stored vectors, unit length.

A static model folder is model2vec's layout (``config.json`` with ``model_type: model2vec``,
``model.safetensors`` holding the ``embeddings`` table, ``tokenizer.json``) plus
``provenance.json`` (base model and its fingerprint, date, vocabulary, dimensions, how it was
made and trained). Loading and encoding need numpy, safetensors and tokenizers only: no torch,
no pickle. It encodes ~250x faster than MiniLM on a CPU (benchmarks/results/static.md), and as a
``SentenceEncoder`` stand-in it serves ``index --dense``, ``add``, search, hybrid and the term
encoder through the same ``--model`` option.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from clinsearch.errors import ClinsearchError

MODEL_TYPE = "model2vec"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "config.json"
PROVENANCE_FILE = "provenance.json"
TABLE = "embeddings"
_BATCH = 4096  # texts tokenised at a time: bounds the id arrays' memory


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a static model comes from: recorded beside its weights, shown by its users."""

    base_model: str  # the folder distilled from
    base_fingerprint: str
    created: str  # UTC, ISO 8601
    vocab: int
    dims: int
    method: str  # how the table was made (distillation settings)
    training: dict[str, Any] | None = None  # set when trained: data, loss, schedule, losses


def is_static_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a static (model2vec-layout) model."""
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("model_type") == MODEL_TYPE


def save_static(
    folder: Path, table: np.ndarray, tokenizer_json: str, provenance: Provenance
) -> None:
    """Write a static model into ``folder`` (files private to the owner: 0600, folder 0700)."""
    from safetensors.numpy import save_file

    from clinsearch.permissions import make_private

    folder.mkdir(parents=True, exist_ok=True)
    save_file({TABLE: np.ascontiguousarray(table, np.float32)}, str(folder / WEIGHTS_FILE))
    (folder / TOKENIZER_FILE).write_text(tokenizer_json, encoding="utf-8")
    config = {"model_type": MODEL_TYPE, "architectures": ["StaticModel"], "normalize": True,
              "hidden_dim": int(table.shape[1]), "tokenizer_name": provenance.base_model}
    (folder / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    (folder / PROVENANCE_FILE).write_text(
        json.dumps(asdict(provenance), indent=1) + "\n", encoding="utf-8"
    )
    make_private(folder)


def new_provenance(base: Path, base_fingerprint: str, table: np.ndarray, method: str,
                   training: dict[str, Any] | None = None) -> Provenance:
    """The provenance of a table made now from ``base``."""
    return Provenance(str(base), base_fingerprint, datetime.now(UTC).isoformat(timespec="seconds"),
                      int(table.shape[0]), int(table.shape[1]), method, training)


def read_provenance(folder: Path) -> dict[str, Any]:
    """The recorded provenance of a static model folder ({} when it has none)."""
    try:
        data = json.loads((folder / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_table(folder: Path) -> np.ndarray:
    """The float32 token table of a static model folder (read as plain arrays: no pickle)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        tensors = load_file(str(folder / WEIGHTS_FILE))
    except (OSError, SafetensorError) as exc:
        raise ClinsearchError(
            f"static model {folder}: cannot read {WEIGHTS_FILE} ({exc})"
        ) from None
    table = tensors.get(TABLE)
    if table is None or table.ndim != 2:
        raise ClinsearchError(f"static model {folder}: {WEIGHTS_FILE} has no 2-D {TABLE!r} table")
    return table.astype(np.float32, copy=False)


class StaticEncoder:
    """A static model from a local folder with its identity (path and fingerprint); the same
    interface as ``models.encoder.SentenceEncoder`` (one window per passage: no length limit)."""

    def __init__(self, folder: Path, fingerprint: str) -> None:
        from tokenizers import Tokenizer

        from clinsearch.models.device import resolve_device

        self.path = folder
        self.fingerprint = fingerprint
        self.device = resolve_device("cpu")  # a table look-up: the CPU is the right place
        self.table = read_table(folder)
        try:
            self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        except Exception as exc:  # the tokenizers library raises its own exception kinds
            raise ClinsearchError(f"static model {folder}: cannot read {TOKENIZER_FILE}"
                                  f" ({str(exc)[:200]})") from None
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.dim = int(self.table.shape[1])
        self.provenance = read_provenance(folder)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids (no special tokens), as training's ``StaticEmbedding`` sees it."""
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        return [e.ids for e in encode(list(texts), add_special_tokens=False)]

    def encode_queries(self, queries: Sequence[str], **_: Any) -> np.ndarray:
        """One unit vector per query."""
        return self._encode(queries)

    def encode_passages(self, passages: Sequence[str], **_: Any) -> Any:
        """One unit vector (window) per passage; identical passages are encoded once."""
        from clinsearch.models.windows import PassageVectors

        unique = list(dict.fromkeys(passages))
        position = {text: i for i, text in enumerate(unique)}
        vectors = self._encode(unique)
        rows = np.fromiter((position[t] for t in passages), np.int64, len(passages))
        return PassageVectors(vectors[rows], np.arange(len(passages), dtype=np.int64))

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """Mean token vector of each text, unit length (a text with no tokens: zeros): a sparse
        (texts x vocabulary) matrix of token shares times the table."""
        from scipy.sparse import csr_matrix

        out = np.zeros((len(texts), self.dim), np.float32)
        for start in range(0, len(texts), _BATCH):
            ids = self.token_ids(texts[start : start + _BATCH])
            counts = np.fromiter((len(i) for i in ids), np.int64, len(ids))
            flat = np.fromiter((t for i in ids for t in i), np.int64, int(counts.sum()))
            shares = np.repeat(1 / np.maximum(counts, 1), counts).astype(np.float32)
            pointers = np.concatenate([[0], np.cumsum(counts)])
            means = csr_matrix((shares, flat, pointers), shape=(len(ids), len(self.table)))
            out[start : start + len(ids)] = means @ self.table
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.maximum(norms, 1e-12)).astype(np.float32)
