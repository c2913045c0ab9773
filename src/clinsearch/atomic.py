"""The one atomic writer: write beside the target, then rename, so no half-written file remains.

A reader sees either the old file (or folder) or the complete new one, never a part of it; a
failure removes the temporary and leaves the target as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(
    path: str | Path,
    *,
    prefix: str | None = None,
    make_parent: bool = True,
    durable: bool = False,
    mode: int | None = None,
    overwrite: bool = True,
) -> Iterator[Path]:
    """Yield a fresh temporary file beside ``path``; on success it replaces ``path``, else it
    is removed. ``prefix`` names the temporary (default ``.NAME.``); ``durable`` flushes it to
    disk before the rename (and the folder after it); ``mode`` sets its permissions (default
    0o600, private); without ``overwrite`` an existing ``path`` (even one that appeared while
    writing) is never replaced: FileExistsError."""
    path = Path(path)
    if make_parent:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(
        prefix=prefix if prefix is not None else f".{path.name}.", suffix=".tmp", dir=path.parent
    )
    try:
        if mode is not None:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if durable:
            fsync_path(tmp)
        _publish(tmp, path, overwrite)
        if durable:
            fsync_path(path.parent)
    finally:
        tmp.unlink(missing_ok=True)


def _publish(tmp: Path, path: Path, overwrite: bool) -> None:
    """Move the finished file into place; without ``overwrite`` a hard link, which fails when
    the name exists (a file system without links falls back to a check, then a rename)."""
    if overwrite:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(path):
            raise FileExistsError(path) from None
        os.replace(tmp, path)


def atomic_write_dir(path: str | Path, write: Callable[[Path], None]) -> None:
    """Fill a fresh temporary folder with ``write(folder)``, then swap it in at ``path``.

    A previous folder at ``path`` is replaced only once the new one is complete.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        write(tmp)
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def fsync_path(path: Path) -> None:
    """Flush one file or one folder's entry list to disk (so renames inside it survive)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    """Flush every file and folder under ``path`` to disk."""
    for folder, _, files in os.walk(path):
        for name in files:
            fsync_path(Path(folder) / name)
        fsync_path(Path(folder))
