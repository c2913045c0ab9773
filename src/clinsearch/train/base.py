"""Load the base models that training starts from: local folders only, nothing downloaded."""

from __future__ import annotations

from pathlib import Path

from sentence_transformers import CrossEncoder, SentenceTransformer

import clinsearch.models  # noqa: F401 - switches hub access off before any model loads
from clinsearch.errors import ClinsearchError
from clinsearch.models.folder import check_model_folder, default_encoder_path


def _folder(path: str | Path | None) -> Path:
    """The model folder to load (default all-MiniLM-L6-v2), checked to hold a model."""
    return check_model_folder(path or default_encoder_path(), "base model")


def load_sentence_model(
    path: str | Path | None = None, *, max_seq_length: int = 128
) -> SentenceTransformer:
    """A sentence-transformers bi-encoder from a local folder (default all-MiniLM-L6-v2), on CPU."""
    folder = _folder(path)
    try:
        model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    except Exception as exc:  # any loader failure means the folder is not a usable model
        raise ClinsearchError(f"base model folder {folder} could not be loaded: {exc}") from exc
    # never beyond what the model itself supports (its position embeddings)
    model.max_seq_length = min(max_seq_length, model.max_seq_length or max_seq_length)
    return model


def load_cross_model(path: str | Path | None = None, *, max_length: int = 256) -> CrossEncoder:
    """A one-logit cross-encoder from a local folder (a bi-encoder folder gets a fresh head)."""
    folder = _folder(path)
    try:
        model = CrossEncoder(str(folder), num_labels=1, device="cpu", local_files_only=True)
    except Exception as exc:  # any loader failure means the folder is not a usable model
        raise ClinsearchError(f"base model folder {folder} could not be loaded: {exc}") from exc
    model.max_seq_length = min(max_length, model.max_seq_length or max_length)
    return model
