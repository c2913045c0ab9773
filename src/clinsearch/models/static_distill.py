"""Make static models: distil one from a local transformer (model2vec's recipe), hold the default
one in the derived-data cache, and convert between the static folder and a trainable
sentence-transformers ``StaticEmbedding`` model.

Distillation: every vocabulary token goes through the base model alone (``[CLS] token
[SEP]``), its output mean-pooled; the table is reduced by PCA to ``dims`` and each row scaled
by a SIF weight from the token's Zipf rank (frequent tokens count less). Nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clinsearch.models.static import (
    Provenance,
    is_static_folder,
    new_provenance,
    read_provenance,
    read_table,
    save_static,
)

STATIC_NAME = "static"  # --model static: the default static model, distilled once and cached
DEFAULT_DIMS = 256
SIF_COEFFICIENT = 1e-4
_TOKEN_BATCH = 512


@dataclass(frozen=True, slots=True)
class DistillConfig:
    """Distillation settings (model2vec's defaults: PCA to 256 dimensions, SIF 1e-4)."""

    dims: int = DEFAULT_DIMS
    sif: float = SIF_COEFFICIENT


def distill(base: str | Path | None, out: Path, config: DistillConfig = DistillConfig()) -> Path:
    """Distil the transformer at ``base`` (default MiniLM) into a static model folder at
    ``out`` (written atomically); returns ``out``."""
    from clinsearch.atomic import atomic_write_dir
    from clinsearch.models.folder import check_model_folder, default_encoder_path, fingerprint

    folder = check_model_folder(base or default_encoder_path(), "base model")
    table, tokenizer_json = _token_table(folder)
    table = _sif_weighted(_pca(table, config.dims), config.sif)
    method = (f"distilled: [CLS] token [SEP] mean-pooled, PCA to {table.shape[1]},"
              f" SIF {config.sif} by Zipf rank")
    provenance = new_provenance(folder, fingerprint(folder), table, method)
    atomic_write_dir(out, lambda tmp: save_static(tmp, table, tokenizer_json, provenance))
    return Path(out)


def default_static_path() -> Path:
    """The default static model (distilled from the packaged MiniLM), made on first use in the
    derived-data cache under a name holding the base model's fingerprint."""
    from clinsearch.cache_dir import default_cache_dir, private_folder
    from clinsearch.models.folder import default_encoder_path, fingerprint

    base = default_encoder_path()
    folder = default_cache_dir() / "models" / f"static-{fingerprint(base)}-{DEFAULT_DIMS}"
    if not is_static_folder(folder):
        private_folder(folder.parent)
        distill(base, folder)
    return folder


def _token_table(folder: Path) -> tuple[np.ndarray, str]:
    """(one mean-pooled output per vocabulary token, the fast tokenizer as JSON without
    truncation or padding)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from clinsearch.models.folder import quiet_loading, transformer_folder

    inner = transformer_folder(folder)
    tokenizer = AutoTokenizer.from_pretrained(str(inner), local_files_only=True)
    with quiet_loading():
        model = AutoModel.from_pretrained(str(inner), local_files_only=True).eval()
    size = len(tokenizer)
    first = [tokenizer.cls_token_id] if tokenizer.cls_token_id is not None else []
    last = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else []
    out = np.zeros((size, model.config.hidden_size), np.float32)
    with torch.inference_mode():
        for start in range(0, size, _TOKEN_BATCH):
            tokens = range(start, min(size, start + _TOKEN_BATCH))
            ids = torch.tensor([[*first, t, *last] for t in tokens])
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            out[start : start + len(ids)] = hidden.mean(dim=1).float().numpy()
    backend = tokenizer.backend_tokenizer
    backend.no_truncation()
    backend.no_padding()
    return out, backend.to_str()


def _pca(table: np.ndarray, dims: int) -> np.ndarray:
    """``table`` centred and projected on its ``dims`` principal axes (all of them, rotated,
    when it has no more)."""
    centred = table - table.mean(axis=0, keepdims=True)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    return (centred @ axes[: min(dims, axes.shape[0])].T).astype(np.float32)


def _sif_weighted(table: np.ndarray, sif: float) -> np.ndarray:
    """Rows scaled by ``sif / (sif + p)``, ``p`` the Zipf probability of the token's rank (the
    vocabulary's order: frequent tokens first)."""
    rank = np.arange(1, len(table) + 1, dtype=np.float64)
    probability = (1 / rank) / (1 / rank).sum()
    return (table * (sif / (sif + probability))[:, None]).astype(np.float32)


def trainable(folder: Path) -> Any:
    """The static model at ``folder`` as a sentence-transformers model (one ``StaticEmbedding``
    module) for training on the CPU."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules.static_embedding import (
        StaticEmbedding,
    )
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    module = StaticEmbedding(tokenizer, embedding_weights=read_table(folder))
    model = SentenceTransformer(modules=[module], device="cpu")
    model.static_base = folder  # where it came from, for the provenance of what it becomes
    return model


def is_trainable_static(model: Any) -> bool:
    """Whether ``model`` is a ``trainable`` static model."""
    return getattr(model, "static_base", None) is not None


def save_trained(model: Any, out: Path, training: dict[str, Any]) -> None:
    """Write a trained ``trainable`` model as a static folder, its base's provenance kept and
    ``training`` recorded."""
    base: Path = model.static_base
    module = model[0]
    table = module.embedding.weight.detach().cpu().float().numpy()
    before = read_provenance(base)
    provenance = Provenance(
        base_model=before.get("base_model", str(base)),
        base_fingerprint=before.get("base_fingerprint", ""),
        created=new_provenance(base, "", table, "").created,
        vocab=int(table.shape[0]), dims=int(table.shape[1]),
        method=before.get("method", "static"), training={"from": str(base), **training},
    )
    save_static(out, table, module.tokenizer.to_str(), provenance)
