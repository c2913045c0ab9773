"""Opening the user's files safely, and OS failures as one-line errors.

Every input file is opened without blocking and checked to be a regular file before a byte is
read, so a FIFO, socket or device never hangs or feeds a reader; symlink loops and dangling
links are named as such. ``describe_failure`` turns the OS failures a user can cause (disk full,
read-only file system, permissions, tantivy's "os error N") into one line naming the file.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import BinaryIO

from clinsearch.errors import InputError

_KINDS = (
    (stat.S_ISDIR, "is a directory, expected a file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), expected a regular file"),
    (stat.S_ISSOCK, "is a socket, expected a regular file"),
    (stat.S_ISCHR, "is a character device, expected a regular file"),
    (stat.S_ISBLK, "is a block device, expected a regular file"),
)
_RUST_OS_ERROR = re.compile(r"os error (\d+)|Os \{ code: (\d+)")
_MESSAGES = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.ELOOP: "symlink loop (too many levels of symbolic links)",
    errno.ENAMETOOLONG: "file name too long",
    errno.EFBIG: "file too large (a file size limit was reached)",
    errno.EMFILE: "too many open files",
}

_KIND_ERRNO: dict[type[OSError], int] = {
    FileNotFoundError: errno.ENOENT,
    PermissionError: errno.EACCES,
    IsADirectoryError: errno.EISDIR,
    NotADirectoryError: errno.ENOTDIR,
}


def kind_problem(mode: int) -> str | None:
    """Why a file of this ``st_mode`` cannot be read as input (None for a regular file)."""
    return next((why for test, why in _KINDS if test(mode)), None)


def open_user_file(path: str | Path) -> BinaryIO:
    """Open ``path`` for binary reading, only if it is a regular file; else an InputError."""
    path = Path(path)
    try:
        return open_regular(path)
    except OSError as exc:
        raise InputError(os_reason(exc, path), file=path) from None


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file: OSError if it cannot be
    opened, InputError if it is something else (a FIFO is opened without blocking, then
    refused)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        problem = kind_problem(os.fstat(fd).st_mode)
        if problem:
            raise InputError(problem, file=path)
        os.set_blocking(fd, True)
        return open(path, "rb", opener=lambda _path, _flags: fd)  # named by its path, not fd
    except BaseException:
        os.close(fd)
        raise


def read_user_bytes(path: str | Path) -> bytes:
    """The bytes of the regular file ``path`` (see ``open_user_file``)."""
    with open_user_file(path) as handle:
        return handle.read()


def read_user_text(path: str | Path) -> str:
    """The UTF-8 text (BOM dropped) of the regular file ``path``; bad bytes are an InputError
    naming the line."""
    data = read_user_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError("undecodable bytes (not UTF-8)", file=path, line=line) from None


def os_reason(exc: OSError, path: Path | None = None) -> str:
    """A short reason for an OS error, telling dangling symlinks from missing files."""
    if exc.errno == errno.ENOENT and path is not None and os.path.islink(path):
        return "dangling symlink (its target does not exist)"
    if exc.errno == errno.ENOENT:
        return "no such file or directory"
    if exc.errno == errno.EISDIR:
        return "is a directory, expected a file"
    if exc.errno == errno.ENOTDIR:
        return "a part of the path is not a directory"
    return _MESSAGES.get(exc.errno or 0) or (exc.strerror or type(exc).__name__).lower()


class FileRefused(OSError):
    """A file clinsearch refuses to use as it is (a link, others may change it): an OSError
    whose reason, written by clinsearch, is told as is."""


def describe_failure(exc: BaseException) -> str | None:
    """One line for a failure the user's system caused, or None for anything else (a bug)."""
    if isinstance(exc, FileRefused):
        return f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc.strerror)
    if isinstance(exc, shutil.Error):
        problems = exc.args[0] if exc.args and isinstance(exc.args[0], list) else []
        if problems and len(problems[0]) == 3:
            source, _, why = problems[0]
            return f"{source}: {str(why).splitlines()[0] if why else 'cannot copy'}"
        return f"file operation failed: {str(exc).splitlines()[0][:200]}"
    if isinstance(exc, OSError) and exc.errno is None and type(exc) in _KIND_ERRNO:
        # raised without an errno (pyarrow's FileNotFoundError('path')): the class says it
        path = exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else None
        exc = type(exc)(_KIND_ERRNO[type(exc)], "", path)
    if isinstance(exc, OSError) and exc.errno is not None:
        where = exc.filename if exc.filename is not None else ""
        reason = os_reason(exc, Path(where) if where else None)
        return f"{where}: {reason}" if where else reason
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, sqlite3.OperationalError):  # disk full, read-only, locked: no data in it
        return f"SQLite database: {str(exc).splitlines()[0][:200]}"
    match = _RUST_OS_ERROR.search(str(exc)) if isinstance(exc, Exception) else None
    if match:  # tantivy and other Rust libraries report OS failures in the message
        code = int(match.group(1) or match.group(2))
        return _MESSAGES.get(code) or os.strerror(code).lower()
    return None
