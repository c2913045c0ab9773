"""Atomic file output: write beside the target, then rename, so no half-written file remains."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, else is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_lines(path: str | Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (newline-terminated) to ``path`` atomically."""
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(line + "\n")
