"""Opening an export (any file the user names for clinsearch to write: a CSV or JSONL of patient
data, weak labels, TREC runs, plots, a lexicon) safely.

One function makes every export (``export_path``; ``open_export`` for text): it never
overwrites a file unless asked (``force``), never writes inside an index directory, creates
the file private (see ``clinsearch.permissions``) and atomically (a temporary file beside it,
renamed into place when complete). CSV cells are neutralised against formula injection when a
spreadsheet opens them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from clinsearch.atomic import atomic_path
from clinsearch.errors import ClinsearchError
from clinsearch.permissions import dir_mode, file_mode
from clinsearch.user_files import kind_problem, os_reason

INDEX_MARKER = "CURRENT"  # the pointer file every index directory holds
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def check_export_path(path: Path, force: bool) -> None:
    """Raise a one-line error unless ``path`` may receive an export."""
    parent = path.parent
    if not parent.exists():
        raise ClinsearchError(f"{path}: folder {parent} does not exist")
    if not parent.is_dir():
        raise ClinsearchError(f"{path}: {parent} is not a folder")
    if inside_index(path):
        raise ClinsearchError(f"{path}: refusing to write an export inside an index directory")
    if os.path.lexists(path):
        try:
            problem = kind_problem(os.stat(path).st_mode)
        except OSError as exc:
            raise ClinsearchError(f"{path}: {os_reason(exc, path)}") from None
        if problem:
            raise ClinsearchError(f"{path}: {problem}")
        if not force:
            raise ClinsearchError(f"{path}: exists; use `force` to overwrite it")


def inside_index(path: Path) -> bool:
    """Whether ``path`` lies in an index directory (or is one of its files)."""
    folder = Path(os.path.realpath(path.parent))
    return any((f / INDEX_MARKER).is_file() for f in (folder, *folder.parents))


def export_folder(path: Path) -> Path:
    """The folder ``path`` that exports go into (``--save-runs``, ``--plot-dir``), created
    private if missing; its parent must exist, and it must not lie in an index directory."""
    if os.path.lexists(path) and not path.is_dir():
        raise ClinsearchError(f"{path}: is not a folder")
    if path.is_dir():
        if inside_index(path / "_"):
            raise ClinsearchError(f"{path}: refusing to write exports inside an index directory")
        return path
    check_export_path(path, force=False)  # its parent exists and lies outside any index
    try:
        path.mkdir(mode=dir_mode())
    except OSError as exc:
        raise ClinsearchError(f"{path}: {os_reason(exc, path)}") from None
    return path


@contextmanager
def export_path(path: str | Path, *, force: bool = False) -> Iterator[Path]:
    """A temporary file for a writer that takes a path (a PNG, Parquet): it becomes the export
    ``path`` on success and is removed on failure."""
    path = Path(path)
    check_export_path(path, force)
    try:
        with atomic_path(path, make_parent=False, durable=True, mode=file_mode(),
                         overwrite=force) as tmp:
            yield tmp
    except FileExistsError:
        raise ClinsearchError(f"{path}: exists; use `force` to overwrite it") from None
    except OSError as exc:
        raise ClinsearchError(f"{path}: {os_reason(exc, path.parent)}") from None


@contextmanager
def open_export(path: str | Path, *, force: bool = False, newline: str | None = None
                ) -> Iterator[TextIO]:
    """A text handle for the export ``path``: complete on success, absent on failure."""
    with export_path(path, force=force) as tmp, tmp.open(
            "w", encoding="utf-8", newline=newline) as out:
        yield out


def csv_cell(value: object) -> str:
    """``value`` as a CSV cell a spreadsheet shows as text: a leading = + - @ tab or carriage
    return (which would start a formula) gets a ' before it."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text
