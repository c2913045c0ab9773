"""clinsearch: negation-aware search over clinical reports.

The Python API: ``Index`` (build, open, add, delete and search an index directory), ``Hit``,
``IndexConfig`` and ``SearchSession``.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from clinsearch.version import __version__

__all__ = ["Hit", "Index", "IndexConfig", "SearchSession", "__version__"]

_API = {
    "Hit": "clinsearch.hit",
    "Index": "clinsearch.search.session",
    "IndexConfig": "clinsearch.index.config",
    "SearchSession": "clinsearch.search.session",
}


def __getattr__(name: str) -> Any:
    """Import the API on first use, so ``import clinsearch`` (and the CLI) starts fast."""
    if name in _API:
        return getattr(import_module(_API[name]), name)
    raise AttributeError(f"module 'clinsearch' has no attribute {name!r}")
