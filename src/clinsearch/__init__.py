"""clinsearch: negation-aware search over clinical reports."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["Hit", "Index", "IndexConfig", "__version__"]


def __getattr__(name: str) -> Any:
    """Import the index API on first use, so ``import clinsearch`` (and the CLI) starts fast."""
    if name in ("Hit", "Index", "IndexConfig"):
        import clinsearch.index

        return getattr(clinsearch.index, name)
    raise AttributeError(f"module 'clinsearch' has no attribute {name!r}")
