"""Opening an export (a CSV or JSONL of patient data the user asked for) safely.

One function opens every export: it never overwrites a file unless asked (``force``), never
writes inside an index directory, creates the file private (see ``clinsearch.permissions``)
and atomically (a temporary file beside it, renamed into place when complete). CSV cells are
neutralised against formula injection when a spreadsheet opens them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from clinsearch.atomic import atomic_path
from clinsearch.errors import ClinsearchError
from clinsearch.permissions import file_mode
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
            raise ClinsearchError(f"{path}: exists; use --force to overwrite it")


def inside_index(path: Path) -> bool:
    """Whether ``path`` lies in an index directory (or is one of its files)."""
    folder = Path(os.path.realpath(path.parent))
    return any((f / INDEX_MARKER).is_file() for f in (folder, *folder.parents))


@contextmanager
def open_export(path: str | Path, *, force: bool = False, newline: str | None = None
                ) -> Iterator[TextIO]:
    """A text handle for the export ``path``: complete on success, absent on failure."""
    path = Path(path)
    check_export_path(path, force)
    try:
        with (
            atomic_path(path, make_parent=False, durable=True, mode=file_mode(),
                        overwrite=force) as tmp,
            tmp.open("w", encoding="utf-8", newline=newline) as out,
        ):
            yield out
    except FileExistsError:
        raise ClinsearchError(f"{path}: exists; use --force to overwrite it") from None
    except OSError as exc:
        raise ClinsearchError(f"{path}: {os_reason(exc, path.parent)}") from None


def csv_cell(value: object) -> str:
    """``value`` as a CSV cell a spreadsheet shows as text: a leading = + - @ tab or carriage
    return (which would start a formula) gets a ' before it."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text
