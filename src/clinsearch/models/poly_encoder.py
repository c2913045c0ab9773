"""Poly-encoder scorer ([CAPR2021], after Humeau et al. 2020): ``m`` learned codes attend over a
passage's token vectors, giving ``m`` passage vectors; the query's vector attends over those,
and the score is the dot product of the query vector with what its attention gathered (both at
unit length). Passages can be encoded without the query, like a bi-encoder, yet each query
reads the passage through its own attention, closer to a cross-encoder.

Saved as a plain folder, never pickled: ``encoder/`` (a Hugging Face model folder, safetensors
weights and tokenizer), ``poly.safetensors`` (the codes) and ``poly.json`` (format, codes, window).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from clinsearch.errors import ClinsearchError
from clinsearch.models.device import Device, for_inference, resolve_device, to_device
from clinsearch.models.folder import (
    check_model_folder,
    default_encoder_path,
    fingerprint,
    load_model_folder,
    transformer_folder,
)
from clinsearch.models.threads import torch_threads
from clinsearch.models.windows import split_windows

FORMAT = "clinsearch-poly-encoder/1"
CONFIG_FILE = "poly.json"
CODES_FILE = "poly.safetensors"
ENCODER_DIR = "encoder"
WHAT = "poly-encoder model"


def _module_class() -> type:
    """The torch module class, defined on first use so that importing this file needs no torch."""
    import torch
    import torch.nn.functional as F

    class PolyEncoderModule(torch.nn.Module):
        """A transformer shared by queries and passages, plus ``m`` learned codes."""

        def __init__(self, encoder: Any, codes: torch.Tensor) -> None:
            super().__init__()
            self.encoder = encoder
            self.codes = torch.nn.Parameter(codes)

        def _tokens(self, features: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
            out = self.encoder(
                input_ids=features["input_ids"], attention_mask=features["attention_mask"]
            )
            return out.last_hidden_state, features["attention_mask"].bool()

        def query_vectors(self, features: dict[str, Any]) -> torch.Tensor:
            """One unit vector per query: its token vectors' mean (the bi-encoder's pooling)."""
            tokens, mask = self._tokens(features)
            weights = mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1.0)
            return F.normalize(pooled, dim=-1)

        def code_vectors(self, features: dict[str, Any]) -> torch.Tensor:
            """``(passages, m, hidden)``: each code's attention-weighted sum of token vectors."""
            tokens, mask = self._tokens(features)
            codes = self.codes.to(tokens.dtype)
            logits = torch.einsum("md,bld->bml", codes, tokens) / tokens.shape[-1] ** 0.5
            logits = logits.masked_fill(~mask.unsqueeze(1), float("-inf"))
            return torch.einsum("bml,bld->bmd", logits.softmax(-1), tokens)

        @staticmethod
        def scores(queries: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
            """``(queries, passages)`` scores: each query attends over each passage's code
            vectors; the score is the dot product of the unit query and gathered vectors."""
            attention = torch.einsum("qd,pmd->qpm", queries, codes).softmax(-1)
            gathered = F.normalize(torch.einsum("qpm,pmd->qpd", attention, codes), dim=-1)
            return torch.einsum("qpd,qd->qp", gathered, queries)

    return PolyEncoderModule


class PolyEncoder:
    """A poly-encoder with its tokenizer, on one device: build, save, load, encode, score."""

    def __init__(self, module: Any, tokenizer: Any, max_length: int, device: Device) -> None:
        self.module = module
        self.tokenizer = tokenizer
        self.max_length = max_length
        self.device = device

    @classmethod
    def from_base(
        cls, base: str | Path | None = None, *, codes: int = 16, max_length: int = 128,
        device: str | None = None, seed: int = 0,
    ) -> PolyEncoder:
        """A new poly-encoder on the transformer of ``base`` (default MiniLM-L6-v2), its
        ``codes`` initialised at random, in float32 for training."""
        import torch

        encoder, tokenizer = _load_transformer(base or default_encoder_path(), "base model")
        generator = torch.Generator().manual_seed(seed)
        hidden = int(encoder.config.hidden_size)
        scale = float(getattr(encoder.config, "initializer_range", 0.02))
        initial = torch.randn(codes, hidden, generator=generator) * scale
        limit = min(max_length, int(getattr(encoder.config, "max_position_embeddings", max_length)))
        placed = resolve_device(device)
        module = _module_class()(encoder, initial).to(placed.name)
        return cls(module, tokenizer, limit, placed)

    @property
    def codes(self) -> int:
        """How many learned codes (``m``)."""
        return int(self.module.codes.shape[0])

    def tokenize(self, texts: Sequence[str]) -> dict[str, Any]:
        """A padded batch on the model's device, cut at the window (callers window long text)."""
        features = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length,
            return_tensors="pt",
        )
        return to_device(dict(features), self.device.name)

    def save(self, folder: Path) -> None:
        """Write the model as a plain folder (safetensors and JSON only)."""
        from safetensors.torch import save_file

        encoder_dir = Path(folder) / ENCODER_DIR
        self.module.encoder.save_pretrained(encoder_dir, safe_serialization=True)
        self.tokenizer.save_pretrained(encoder_dir)
        codes = self.module.codes.detach().float().cpu().contiguous()
        save_file({"codes": codes}, str(Path(folder) / CODES_FILE))
        config = {"format": FORMAT, "codes": self.codes, "max_length": self.max_length}
        (Path(folder) / CONFIG_FILE).write_text(json.dumps(config, indent=1), encoding="utf-8")


class PolyScorer:
    """A saved poly-encoder loaded for re-ranking: scores passages for a query (best window)."""

    def __init__(self, path: str | Path, *, device: str | None = None) -> None:
        """Load the poly-encoder folder at ``path`` onto ``device`` (default: the process-wide
        choice); anything but its plain files is refused."""
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        folder, config = read_poly_config(path)
        encoder, tokenizer = _load_transformer(folder / ENCODER_DIR, WHAT)
        try:
            codes = load_file(str(folder / CODES_FILE))["codes"]
        except (OSError, KeyError, SafetensorError) as exc:
            raise ClinsearchError(f"{WHAT} folder {folder}: unreadable {CODES_FILE} ({exc})") \
                from None
        if tuple(codes.shape) != (config["codes"], encoder.config.hidden_size):
            raise ClinsearchError(f"{WHAT} folder {folder}: {CODES_FILE} holds codes of shape"
                                  f" {tuple(codes.shape)}, not ({config['codes']}, hidden size)")
        self.device = resolve_device(device)
        module = for_inference(_module_class()(encoder, codes), self.device)
        self.model = PolyEncoder(module, tokenizer, int(config["max_length"]), self.device)
        self.path = folder
        self.fingerprint = fingerprint(folder / ENCODER_DIR)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance of each passage to ``query`` (higher is better), float64, one per passage;
        a passage longer than the window scores as its best window."""
        import torch

        if not passages:
            return np.zeros(0, dtype=np.float64)
        model = self.model
        budget = model.max_length - model.tokenizer.num_special_tokens_to_add(pair=False)
        windows = split_windows(model.tokenizer, passages, budget, budget // 4)
        texts = [passages[w.owner][w.start : w.end] for w in windows]
        batch = self.device.encode_batch
        with torch.inference_mode(), torch_threads(1 if len(texts) <= 2 else None):
            vector = model.module.query_vectors(model.tokenize([query]))
            parts = [
                model.module.scores(vector, model.module.code_vectors(model.tokenize(chunk)))[0]
                for chunk in (texts[i : i + batch] for i in range(0, len(texts), batch))
            ]
        window_scores = torch.cat(parts).float().cpu().numpy().astype(np.float64)
        best = np.full(len(passages), -np.inf)
        np.maximum.at(best, np.fromiter((w.owner for w in windows), dtype=np.int64), window_scores)
        return best


def read_poly_config(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """The resolved folder and its ``poly.json``; a folder that is no poly-encoder is refused
    with a line saying what is wrong."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ClinsearchError(f"{WHAT} folder {folder} does not exist or is not a folder")
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ClinsearchError(f"{WHAT} folder {folder}: no readable {CONFIG_FILE} ({exc}); give"
                              " a folder from 'clinsearch train poly'") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ClinsearchError(f"{WHAT} folder {folder}: {CONFIG_FILE} is not {FORMAT}")
    for key in ("codes", "max_length"):
        if not isinstance(config.get(key), int) or config[key] < 1:
            raise ClinsearchError(f"{WHAT} folder {folder}: {CONFIG_FILE} field {key!r} must be"
                                  " a positive integer")
    return folder.resolve(), config


def _load_transformer(path: str | Path, what: str) -> tuple[Any, Any]:
    """The bare transformer and fast tokenizer of a local model folder (sentence-transformers
    folders give their inner transformer); float32 on the CPU."""
    from transformers import AutoModel, AutoTokenizer

    folder = check_model_folder(path, what)
    inner = str(transformer_folder(folder))
    _, encoder = load_model_folder(
        lambda _: _with_tokenizer(AutoModel.from_pretrained(inner, local_files_only=True),
                                  AutoTokenizer.from_pretrained(inner, local_files_only=True)),
        folder, what,
    )
    return encoder, encoder.tokenizer


def _with_tokenizer(model: Any, tokenizer: Any) -> Any:
    """``model`` carrying its tokenizer (what ``load_model_folder`` checks for a fast one)."""
    model.tokenizer = tokenizer
    return model


@functools.lru_cache(maxsize=4)
def _load_cached(path: Path, device: str) -> PolyScorer:
    """One loaded poly-encoder per resolved folder and device for the life of the process."""
    return PolyScorer(path, device=device)


def load_poly_encoder(path: str | Path, *, device: str | None = None) -> PolyScorer:
    """The poly-encoder at ``path`` on ``device``, loaded once per process and then reused."""
    folder, _ = read_poly_config(path)
    return _load_cached(folder, resolve_device(device).name)
