"""Load the base models that training starts from: local folders only, nothing downloaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sentence_transformers import CrossEncoder, SentenceTransformer

from clinsearch.models.device import resolve_device
from clinsearch.models.folder import check_model_folder, default_encoder_path, load_model_folder
from clinsearch.models.static import is_static_folder
from clinsearch.models.static_distill import is_trainable_static, save_trained, trainable

BASE_MODEL = "base model"  # how errors name the folder


def load_sentence_model(
    path: str | Path | None = None, *, max_seq_length: int = 128, device: str | None = None
) -> SentenceTransformer:
    """A sentence-transformers bi-encoder from a local folder (default all-MiniLM-L6-v2) on
    ``device`` (default: the process-wide choice, ``models.device``), in float32. A static
    model folder (or the name ``static``) gives a trainable ``StaticEmbedding`` model on the
    CPU (``models.static_distill``)."""
    folder = check_model_folder(path or default_encoder_path(), BASE_MODEL)
    if is_static_folder(folder):
        return trainable(folder)
    name = resolve_device(device).name
    _, model = load_model_folder(
        lambda folder: SentenceTransformer(folder, device=name, local_files_only=True),
        folder, BASE_MODEL, fast_tokenizer=False,
    )
    # never beyond what the model itself supports (its position embeddings)
    model.max_seq_length = min(max_seq_length, model.max_seq_length or max_seq_length)
    return model


def save_sentence_model(model: SentenceTransformer, folder: Path, meta: dict[str, Any]) -> None:
    """Save a model ``load_sentence_model`` gave and training changed: a static one as a static
    folder (``meta`` recorded in its provenance), any other as a sentence-transformers folder."""
    if is_trainable_static(model):
        save_trained(model, folder, meta)
    else:
        model.save(str(folder))


def load_cross_model(
    path: str | Path | None = None, *, max_length: int = 256, device: str | None = None
) -> CrossEncoder:
    """A one-logit cross-encoder from a local folder (a bi-encoder folder gets a fresh head) on
    ``device`` (default: the process-wide choice), in float32."""
    name = resolve_device(device).name
    _, model = load_model_folder(
        lambda folder: CrossEncoder(folder, num_labels=1, device=name, local_files_only=True),
        path or default_encoder_path(), BASE_MODEL, fast_tokenizer=False,
    )
    model.max_seq_length = min(max_length, model.max_seq_length or max_length)
    return model
