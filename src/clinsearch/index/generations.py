"""The index directory: generation folders, the ``CURRENT`` pointer, and atomic replacement.

A change writes a complete generation into ``.tmp-*``, renames it to ``gen-NNNNNN``, then
replaces ``CURRENT`` with ``os.replace`` (atomic on POSIX); older generations are removed last.
A crash at any point leaves the previous generation live: stray folders are swept next time.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from clinsearch.atomic import atomic_path, fsync_tree
from clinsearch.errors import ClinsearchError

CURRENT = "CURRENT"
LOCK = ".lock"
TMP_PREFIX = ".tmp-"
_GEN = re.compile(r"^gen-(\d{6,})$")


@dataclass(frozen=True, slots=True)
class PendingGeneration:
    """A generation being written: its temporary folder and the number it will get."""

    path: Path
    number: int


def generation_name(number: int) -> str:
    """The folder name of generation ``number``."""
    return f"gen-{number:06d}"


def is_index(root: Path) -> bool:
    """Whether ``root`` is a clinsearch index directory (it has a ``CURRENT`` pointer)."""
    return (root / CURRENT).is_file()


def current_generation(root: Path) -> Path:
    """The live generation folder of the index at ``root``."""
    if not root.exists():
        raise ClinsearchError(f"{root}: no such index directory")
    if not is_index(root):
        raise ClinsearchError(f"{root}: not a clinsearch index (no {CURRENT} file)")
    name = (root / CURRENT).read_text(encoding="utf-8").strip()
    if not _GEN.match(name) or not (root / name).is_dir():
        raise ClinsearchError(f"{root / CURRENT}: names generation {name!r}, which is missing")
    return root / name


@contextmanager
def new_generation(root: Path, expect_live: Path | None = None) -> Iterator[PendingGeneration]:
    """Write a new generation of ``root`` and make it live when the block ends without error.

    ``root`` must be an index, an empty folder, or absent (then it is created, and removed
    again if the block fails). On any error the temporary folder is removed and ``CURRENT``
    is untouched. Writers of the same index are serialised with a lock file; ``expect_live``
    (the generation a change was computed from) must still be the live one.
    """
    created = not root.exists()
    if not created and not root.is_dir():
        raise ClinsearchError(f"{root}: exists and is not a directory")
    if not created and not is_index(root) and _user_entries(root):
        raise ClinsearchError(
            f"{root}: refusing to write an index into a folder that is not empty and is not a"
            " clinsearch index"
        )
    root.mkdir(parents=True, exist_ok=True)
    try:
        with _locked(root):
            live = _live_name(root)
            if expect_live is not None and expect_live != root / str(live):
                raise ClinsearchError(f"{root}: the index changed while this change was prepared")
            _sweep(root, keep=live)
            pending = PendingGeneration(
                root / f"{TMP_PREFIX}{uuid.uuid4().hex}", _next_number(root)
            )
            pending.path.mkdir()
            try:
                yield pending
                _publish(root, pending)
            except BaseException:
                shutil.rmtree(pending.path, ignore_errors=True)
                raise
            _sweep(root, keep=generation_name(pending.number))
    except BaseException:
        if created:
            shutil.rmtree(root, ignore_errors=True)
        raise


def _publish(root: Path, pending: PendingGeneration) -> None:
    """Rename the finished folder into place, then point ``CURRENT`` at it atomically."""
    name = generation_name(pending.number)
    fsync_tree(pending.path)
    os.rename(pending.path, root / name)
    with atomic_path(root / CURRENT, prefix=f"{TMP_PREFIX}{CURRENT}-", durable=True) as tmp:
        tmp.write_text(name + "\n", encoding="utf-8")


def _sweep(root: Path, keep: str | None) -> None:
    """Remove every generation except ``keep`` and any leftover temporary folder or file."""
    for entry in root.iterdir():
        stale_gen = _GEN.match(entry.name) and entry.name != keep
        if stale_gen or entry.name.startswith(TMP_PREFIX):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _live_name(root: Path) -> str | None:
    """The live generation's folder name, or None for a fresh folder."""
    return current_generation(root).name if is_index(root) else None


def _next_number(root: Path) -> int:
    """One more than the highest generation number present."""
    numbers = [int(m.group(1)) for e in root.iterdir() if (m := _GEN.match(e.name))]
    return max(numbers, default=0) + 1


def _user_entries(root: Path) -> list[Path]:
    """Entries of ``root`` other than our own lock and temporary files."""
    return [e for e in root.iterdir() if e.name != LOCK and not e.name.startswith(TMP_PREFIX)]


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on the index so that two writers never interleave."""
    with open(root / LOCK, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClinsearchError(f"{root}: another process is writing this index") from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
