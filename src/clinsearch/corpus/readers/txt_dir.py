"""The ``txt-dir`` reader: a folder of text files, one report per file.

Symlinks are followed only while they stay inside the folder, and each file (or folder) is read
once however many links lead to it; a link that dangles, loops or leaves the folder, and an
entry that is not a regular file (a FIFO, a socket), is a bad record naming its path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.records import (
    DUPLICATE_FILE,
    UNDECODABLE,
    UNREADABLE,
    ReadContext,
    RecordError,
    make_report,
)
from clinsearch.errors import InputError
from clinsearch.user_files import kind_problem, os_reason, read_user_bytes

_FIELDS = {"id": "path", "text": "text", "date": "date"}


def read_txt_dir(
    path: Path, seen: ReadContext, *, suffix: str = ".txt"
) -> Iterator[Report | RecordError]:
    """Stream one report per ``*suffix`` file under ``path`` (recursively, sorted).

    The id is the path relative to ``path`` without its extension, with "/" separators.
    """
    if not path.is_dir():
        raise InputError("not a directory (format txt-dir reads a folder of .txt files)", file=path)
    root = Path(os.path.realpath(path))
    read: dict[tuple[int, int], Path] = {}
    for file in _walk(path, root, suffix, set()):
        if isinstance(file, RecordError):
            yield file
            continue
        report_id = file.relative_to(path).with_suffix("").as_posix()
        try:
            identity = _identity(file)
            if identity in read:
                raise RecordError(
                    DUPLICATE_FILE,
                    f"same file as {read[identity].relative_to(path).as_posix()} (a link to it)",
                    file=file,
                )
            read[identity] = file
            result: Report | RecordError = make_report(
                file=file,
                line=1,
                report_id=report_id,
                text=_read_text(file),
                fields=_FIELDS,
                seen=seen,
            )
        except RecordError as error:
            result = error
        yield result


def _walk(
    folder: Path, root: Path, suffix: str, visited: set[tuple[int, int]]
) -> Iterator[Path | RecordError]:
    """Files under ``folder`` ending in ``suffix``, in sorted path order, hidden ones skipped;
    links leaving ``root``, dangling or looping, and special files come as RecordErrors."""
    visited.add(_identity(folder))
    with os.scandir(folder) as listing:
        entries = sorted((e for e in listing if not e.name.startswith(".")), key=lambda e: e.name)
    for entry in entries:
        entry_path = Path(entry.path)
        try:
            target = Path(os.path.realpath(entry_path, strict=True))
            info = os.stat(entry_path)
        except OSError as exc:
            if entry.name.endswith(suffix) or entry.is_symlink():
                yield RecordError(UNREADABLE, os_reason(exc, entry_path), file=entry_path)
            continue
        if target != root and root not in target.parents:
            if entry.name.endswith(suffix) or os.path.isdir(target):
                yield RecordError(UNREADABLE, "symlink points outside the folder", file=entry_path)
            continue
        if os.path.isdir(target):
            if (info.st_dev, info.st_ino) not in visited:  # a link back up would loop
                yield from _walk(entry_path, root, suffix, visited)
        elif entry.name.endswith(suffix):
            problem = kind_problem(info.st_mode)
            yield RecordError(UNREADABLE, problem, file=entry_path) if problem else entry_path


def _identity(path: Path) -> tuple[int, int]:
    """The (device, inode) pair that names a file whatever link reaches it."""
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _read_text(file: Path) -> str:
    """The UTF-8 text of ``file``, or a RecordError naming the first undecodable line."""
    try:
        data = read_user_bytes(file)
    except InputError as exc:
        raise RecordError(UNREADABLE, exc.message, file=file) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RecordError(
            UNDECODABLE, "undecodable bytes (not UTF-8)", file=file, line=line
        ) from None
