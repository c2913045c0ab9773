"""The ``txt-dir`` reader: a folder of text files, one report per file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.records import UNDECODABLE, RecordError, make_report
from clinsearch.errors import InputError

_FIELDS = {"id": "path", "text": "text", "date": "date"}


def read_txt_dir(
    path: Path, seen: dict[str, int], *, suffix: str = ".txt"
) -> Iterator[Report | RecordError]:
    """Stream one report per ``*suffix`` file under ``path`` (recursively, sorted).

    The id is the path relative to ``path`` without its extension, with "/" separators.
    """
    if not path.is_dir():
        raise InputError("not a directory (format txt-dir reads a folder of .txt files)", file=path)
    for file in _walk(path, suffix):
        report_id = file.relative_to(path).with_suffix("").as_posix()
        try:
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


def _walk(root: Path, suffix: str) -> Iterator[Path]:
    """Files under ``root`` ending in ``suffix``, in sorted path order, hidden ones skipped."""
    with os.scandir(root) as listing:
        entries = sorted((e for e in listing if not e.name.startswith(".")), key=lambda e: e.name)
    for entry in entries:
        if entry.is_dir():
            yield from _walk(Path(entry.path), suffix)
        elif entry.name.endswith(suffix):
            yield Path(entry.path)


def _read_text(file: Path) -> str:
    """The UTF-8 text of ``file``, or a RecordError naming the first undecodable line."""
    data = file.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise RecordError(
            UNDECODABLE, "undecodable bytes (not UTF-8)", file=file, line=line
        ) from None
