"""The index directory: generation folders, the ``CURRENT`` pointer, atomic replacement, leases.

A change writes a complete generation into ``.tmp-*``, renames it to ``gen-NNNNNN``, then
replaces ``CURRENT`` with ``os.replace`` (atomic on POSIX); older generations are removed last.
A crash at any point leaves the previous generation live (or, for a first build, a folder that
holds only our own leftovers, which the next build sweeps and accepts).

Readers hold a *lease* on the generation they opened: a shared ``flock`` on its ``.lease`` file
(works in a read-only directory, and the kernel drops it when the reader exits or is killed, so
no stale lease ever needs a timeout). A writer removes an old generation only after taking the
exclusive lock on its lease file, so a generation is never removed under a reader.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from clinsearch.atomic import atomic_path, fsync_tree
from clinsearch.errors import ClinsearchError
from clinsearch.permissions import dir_mode, file_mode, make_private
from clinsearch.user_files import open_regular, open_user_file

CURRENT = "CURRENT"
LOCK = ".lock"
LEASE = ".lease"
TMP_PREFIX = ".tmp-"
_GEN = re.compile(r"^gen-(\d{6,})$")
_POINTER_MAX = 64  # bytes: a generation name and a newline
_OPEN_RETRIES = 20


@dataclass(frozen=True, slots=True)
class PendingGeneration:
    """A generation being written: its temporary folder and the number it will get."""

    path: Path
    number: int


class Lease:
    """A reader's hold on one generation folder: kept until ``release`` (or process exit)."""

    def __init__(self, path: Path, handle: IO[bytes] | None) -> None:
        self.path = path
        self._handle = handle

    def release(self) -> None:
        """Let writers remove the generation once no other reader holds it."""
        if self._handle is not None:
            self._handle.close()  # closing the file drops the flock
            self._handle = None


def generation_name(number: int) -> str:
    """The folder name of generation ``number``."""
    return f"gen-{number:06d}"


def is_index(root: Path) -> bool:
    """Whether ``root`` is a clinsearch index directory (it has a ``CURRENT`` pointer)."""
    return (root / CURRENT).is_file()


def current_generation(root: Path) -> Path:
    """The live generation folder of the index at ``root``."""
    gen = root / _current_name(root)
    if not gen.is_dir():
        raise ClinsearchError(f"{root / CURRENT}: names generation {gen.name}, which is missing")
    return gen


def lease_current(root: Path) -> Lease:
    """Lease the live generation of ``root`` (retrying if a commit replaces it meanwhile).

    Needs no write access: the lease is a shared lock on a file the writer created.
    """
    for _ in range(_OPEN_RETRIES):
        gen = root / _current_name(root)
        try:
            handle = open_regular(gen / LEASE)  # held open for the lease
        except FileNotFoundError:
            if _current_name(root) != gen.name:
                continue  # replaced and removed since we read CURRENT: read it again
            if not gen.is_dir():
                raise ClinsearchError(
                    f"{root / CURRENT}: names generation {gen.name}, which is missing"
                ) from None
            return Lease(gen, None)  # a generation written before leases existed
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
        except OSError:  # a filesystem without flock: read without a lease
            handle.close()
            return Lease(gen, None)
        if _same_file(handle, gen / LEASE):
            return Lease(gen, handle)
        handle.close()  # the writer removed it while we waited for the lock
    raise ClinsearchError(f"{root}: the index keeps changing; could not open a generation")


def _current_name(root: Path) -> str:
    """The generation name ``CURRENT`` holds (not checked to exist)."""
    if not root.exists():
        raise ClinsearchError(f"{root}: no such index directory")
    if not is_index(root):
        raise ClinsearchError(f"{root}: not a clinsearch index (no {CURRENT} file)")
    with open_user_file(root / CURRENT) as handle:
        raw = handle.read(_POINTER_MAX + 1)
    name = raw.decode("ascii", errors="replace").strip()
    if len(raw) > _POINTER_MAX or not _GEN.match(name):  # never echo it: it may be anything
        raise ClinsearchError(
            f"{root / CURRENT}: corrupt pointer (it does not name a generation); restore it"
            " from a backup or rebuild the index"
        )
    return name


@contextmanager
def new_generation(root: Path, expect_live: Path | None = None) -> Iterator[PendingGeneration]:
    """Write a new generation of ``root`` and make it live when the block ends without error.

    ``root`` must be an index, an empty folder, a folder a killed first build left, or absent
    (then it is created, and removed again if the block fails). On any error the temporary
    folder is removed and ``CURRENT`` is untouched. Writers are serialised with a lock file and
    touch nothing before they hold it; ``expect_live`` (the generation a change was computed
    from) must still be the live one.
    """
    if root.exists() and not root.is_dir():
        raise ClinsearchError(f"{root}: exists and is not a directory")
    if root.is_dir() and not is_index(root) and _user_entries(root):
        raise ClinsearchError(
            f"{root}: refusing to write an index into a folder that is not empty and is not a"
            " clinsearch index"
        )
    created = not root.exists()
    root.mkdir(mode=dir_mode(), parents=True, exist_ok=True)
    with _locked(root):
        live = _live_name(root)
        if expect_live is not None and expect_live != root / str(live):
            raise ClinsearchError(f"{root}: the index changed while this change was prepared")
        _sweep(root, keep=live)
        pending = PendingGeneration(root / f"{TMP_PREFIX}{uuid.uuid4().hex}", _next_number(root))
        pending.path.mkdir(mode=dir_mode())
        (pending.path / LEASE).touch()
        try:
            yield pending
            _publish(root, pending)
        except BaseException:
            shutil.rmtree(pending.path, ignore_errors=True)
            if live is None and created:
                _remove_if_only_lock(root)
            raise
        _sweep(root, keep=generation_name(pending.number))


def _publish(root: Path, pending: PendingGeneration) -> None:
    """Rename the finished folder into place, then point ``CURRENT`` at it atomically."""
    name = generation_name(pending.number)
    make_private(pending.path)
    fsync_tree(pending.path)
    os.rename(pending.path, root / name)
    with atomic_path(root / CURRENT, prefix=f"{TMP_PREFIX}{CURRENT}-", durable=True,
                     mode=file_mode()) as tmp:
        tmp.write_text(name + "\n", encoding="utf-8")


def _sweep(root: Path, keep: str | None) -> None:
    """Remove leftover temporary entries and every generation but ``keep`` no reader holds.

    Called with the writer lock held, so every temporary entry is a dead writer's.
    """
    for entry in root.iterdir():
        if entry.name.startswith(TMP_PREFIX):
            _remove(entry)
        elif _GEN.match(entry.name) and entry.name != keep:
            _remove_unleased(root, entry)


def _remove_unleased(root: Path, gen: Path) -> None:
    """Remove a generation unless a reader leases it: lock its lease, move it aside, delete."""
    try:
        handle = open(gen / LEASE, "rb")  # noqa: SIM115
    except FileNotFoundError:
        handle = None  # an unfinished or pre-lease generation: nobody can lease it
    try:
        if handle is not None:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # a reader holds it; the next writer tries again
        doomed = root / f"{TMP_PREFIX}old-{uuid.uuid4().hex}"
        os.rename(gen, doomed)  # readers now find the name gone and retry CURRENT
        _remove(doomed)
    finally:
        if handle is not None:
            handle.close()


def _remove(entry: Path) -> None:
    """Delete a file or folder tree, ignoring what is already gone."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def _remove_if_only_lock(root: Path) -> None:
    """After a failed first build, remove the folder if nothing but our lock file is left.

    A build racing into the same new folder writes nothing without the lock we hold, so this
    check never removes its work.
    """
    if [e.name for e in root.iterdir()] == [LOCK]:
        with suppress(OSError):
            (root / LOCK).unlink()
            root.rmdir()


def _same_file(handle: IO[bytes], path: Path) -> bool:
    """Whether the open ``handle`` is still the file at ``path``."""
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def _live_name(root: Path) -> str | None:
    """The live generation's folder name, or None for a fresh folder."""
    return current_generation(root).name if is_index(root) else None


def _next_number(root: Path) -> int:
    """One more than the highest generation number present."""
    numbers = [int(m.group(1)) for e in root.iterdir() if (m := _GEN.match(e.name))]
    return max(numbers, default=0) + 1


def _user_entries(root: Path) -> list[Path]:
    """Entries of ``root`` that are not ours (lock, temporary entries, generation folders)."""
    return [
        e
        for e in root.iterdir()
        if e.name != LOCK
        and not e.name.startswith(TMP_PREFIX)
        and not (_GEN.match(e.name) and e.is_dir())
    ]


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold an exclusive lock on the index so that two writers never interleave."""
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, file_mode())
    with open(fd, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClinsearchError(f"{root}: another process is writing this index") from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
