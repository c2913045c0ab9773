"""Stream reports from the user's corpus in one of several formats, chosen by name.

``read_reports(path, fmt, **mapping)`` yields :class:`~clinsearch.corpus.model.Report` records
one at a time; only the set of ids seen so far is kept in memory (to reject duplicates).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.cmc2007 import read_cmc2007, read_cmc2007_coded
from clinsearch.corpus.readers.csv_format import read_csv
from clinsearch.corpus.readers.iu_xray import read_iu_xray
from clinsearch.corpus.readers.jsonl_format import read_jsonl
from clinsearch.corpus.readers.mimic_notes import read_mimic_notes
from clinsearch.corpus.readers.records import (
    ISO_DATE,
    ReadContext,
    ReadStats,
    RecordError,
    check_date_format,
)
from clinsearch.corpus.readers.txt_dir import read_txt_dir
from clinsearch.errors import InputError

FormatReader = Callable[..., Iterator[Report | RecordError]]

FORMATS: dict[str, FormatReader] = {
    "csv": read_csv,
    "jsonl": read_jsonl,
    "txt-dir": read_txt_dir,
    "iu-xray": read_iu_xray,
    "mimic-notes": read_mimic_notes,
    "cmc2007": read_cmc2007,
    "cmc2007-coded": read_cmc2007_coded,
}

__all__ = ["FORMATS", "ISO_DATE", "ReadStats", "RecordError", "format_options", "read_reports"]


def format_options(fmt: str) -> tuple[str, ...]:
    """The mapping options a format accepts (e.g. ``id_column`` for ``csv``)."""
    parameters = inspect.signature(_reader(fmt)).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


def read_reports(
    path: str | Path,
    fmt: str,
    *,
    skip_bad: bool = False,
    stats: ReadStats | None = None,
    date_format: str = ISO_DATE,
    **mapping: Any,
) -> Iterator[Report]:
    """Stream the reports in ``path`` read as format ``fmt``.

    Bad records raise :class:`InputError` naming file, line and field; with ``skip_bad`` they
    are skipped and counted by reason in ``stats``. The format, options and path are checked at
    once; records are read lazily. Options left as None are ignored (the format's default).
    Dates must match ``date_format``: "iso" (YYYY-MM-DD) or a strptime format such as
    "%m/%d/%Y"; nothing is guessed.
    """
    reader = _reader(fmt)
    options = {k: v for k, v in mapping.items() if v is not None}
    unknown = sorted(set(options) - set(format_options(fmt)))
    if unknown:
        accepted = ", ".join(format_options(fmt)) or "none"
        raise InputError(
            f"format {fmt!r} takes no option {', '.join(unknown)} (accepted: {accepted})"
        )
    context = ReadContext(check_date_format(date_format or ISO_DATE))
    path = Path(path)
    if not os.path.lexists(path):
        raise InputError("no such file or directory", file=path)
    return _stream(
        reader(path, context, **options), skip_bad, stats if stats is not None else ReadStats()
    )


def _reader(fmt: str) -> FormatReader:
    """The reader registered as ``fmt``, or an InputError listing the known formats."""
    try:
        return FORMATS[fmt]
    except KeyError:
        raise InputError(
            f"unknown format {fmt!r}; known formats: {', '.join(FORMATS)}", field="format"
        ) from None


def _stream(
    items: Iterator[Report | RecordError], skip_bad: bool, stats: ReadStats
) -> Iterator[Report]:
    """Yield the reports, raising each bad record's error or (``skip_bad``) counting it."""
    for item in items:
        if isinstance(item, RecordError):
            if not skip_bad:
                raise item
            stats.count_skip(item)
            continue
        stats.reports += 1
        yield item
