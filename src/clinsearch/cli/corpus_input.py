"""Reading a corpus from the corpus options that ``index``, ``add`` and benchmarks share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.markup import escape

from clinsearch.cli import err_console
from clinsearch.errors import InputError
from clinsearch.terminal import printable


def reader_mapping(*values: str | None) -> dict[str, str | None]:
    """Reader options from the column-mapping flags (None: the format's default)."""
    names = (
        "id_column",
        "text_columns",
        "patient_column",
        "visit_column",
        "type_column",
        "date_column",
        "suffix",
    )
    return dict(zip(names, values, strict=True))


def read_corpus(
    corpus: Path,
    fmt: str,
    skip_bad: bool,
    stats: Any,
    mapping: dict[str, str | None],
    date_format: str = "iso",
) -> Iterator[Any]:
    """Stream the corpus's reports; an input with no usable report is a user error."""
    from clinsearch.corpus.readers import read_reports

    empty = True
    reports = read_reports(
        corpus, fmt, skip_bad=skip_bad, stats=stats, date_format=date_format, **mapping
    )
    for report in reports:
        empty = False
        yield report
    if empty:
        raise InputError("no reports found", file=corpus)


def report_long_sentences(count: int) -> None:
    """Warn, with their number, about sentences annotated in pieces (see annotate.pieces)."""
    from clinsearch.annotate.pieces import PIECE_CHARS

    if count:
        err_console.print(
            f"warning: {count} long sentence(s) (over {PIECE_CHARS:,} characters) were annotated"
            " in pieces; a negation or modifier does not reach across a cut"
        )


def report_skips(stats: Any) -> None:
    """Tell how many bad records --skip-bad skipped, by reason, with the first examples."""
    if not stats.skipped_total:
        return
    reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(stats.skipped.items()))
    err_console.print(f"skipped {stats.skipped_total} bad records ({reasons}); first ones:")
    for example in stats.examples:
        err_console.print(f"  {escape(printable(example, one_line=True))}", highlight=False)
