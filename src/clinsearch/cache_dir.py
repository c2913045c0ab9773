"""The folder for data clinsearch derives once and keeps between runs (term vectors, the
lexicon's surface index): ``$CLINSEARCH_CACHE`` or ``~/.cache/clinsearch``."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$CLINSEARCH_CACHE`` or ``~/.cache/clinsearch``."""
    env = os.environ.get("CLINSEARCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "clinsearch"


def private_folder(folder: Path) -> Path:
    """``folder``, made (with its parents) readable by this user only when it does not exist."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder
