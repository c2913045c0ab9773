"""Line-numbered, decoding-checked access to text files, shared by the file-based readers."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from clinsearch.corpus.readers.records import UNDECODABLE, RecordError
from clinsearch.errors import InputError
from clinsearch.jsonl import MAX_RECORD_BYTES, bounded_lines, too_long
from clinsearch.user_files import open_user_file

_SURROGATE = re.compile("[\udc80-\udcff]")
_LETTERS, _DIGITS = re.compile(r"[^\W\d_]+"), re.compile(r"\d+")
csv.field_size_limit(MAX_RECORD_BYTES)  # long notes exceed the 128 KiB default


def open_input(path: Path) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file; anything else (missing,
    unreadable, a folder, a FIFO, a symlink loop) is an InputError."""
    return open_user_file(path)


def decode_lines(raw: BinaryIO, bad_lines: list[int]) -> Iterator[str]:
    """Decode UTF-8 lines lazily (no BOM); bad bytes become surrogates noted in ``bad_lines``;
    a line over ``MAX_RECORD_BYTES`` is refused without being held in memory."""
    for number, data in enumerate(bounded_lines(raw), start=1):
        if data is None:
            raise too_long(getattr(raw, "name", None), number)
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError:
            line = data.decode("utf-8", errors="surrogateescape")
            bad_lines.append(number)
        if number == 1:
            line = line.removeprefix("\ufeff")
        yield line


def has_undecodable(value: str) -> bool:
    """Whether ``value`` holds bytes that were not valid UTF-8 (decoded as surrogates)."""
    return _SURROGATE.search(value) is not None


@dataclass(frozen=True, slots=True)
class CsvRow:
    """One CSV record: the line it starts on and its values by column name."""

    line: int
    values: dict[str, str]


def read_csv_rows(path: Path, required: Sequence[str]) -> Iterator[CsvRow | RecordError]:
    """Stream rows of a headed CSV file; bad rows come as RecordError values, to raise or skip.

    A quoted field may span lines (notes hold newlines), but a quote is refused, naming the
    line of the record it opened in, when it is still open at the end of the file, when it
    closes on a quote not followed by a comma or line end (RFC 4180, read strictly: the usual
    trace of a quote left open that swallowed the rows after it up to the next quoted field),
    when it spans a line that starts like a new record of the same shape (a quote left open
    that closes at the end of a later line), or when its field grows past ``MAX_RECORD_BYTES``.
    Raises InputError for these, a missing file, an empty file or missing columns (at the
    header line).
    """
    with open_input(path) as raw:
        bad_lines: list[int] = []
        lines: list[str] = []  # the lines of the record being read

        def recorded() -> Iterator[str]:
            for line in decode_lines(raw, bad_lines):
                lines.append(line)
                yield line

        reader = csv.reader(recorded(), strict=True)
        try:
            header = [name.strip() for name in next(reader)]
        except StopIteration:
            raise InputError("empty file, expected a header line", file=path, line=1) from None
        except csv.Error as exc:
            raise InputError(f"malformed CSV header: {exc}", file=path, line=1) from None
        _check_header(path, header, required, bad_lines)
        lines.clear()
        previous_end = reader.line_num
        while True:
            start = previous_end + 1
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise _malformed(path, start, reader.line_num, exc) from None
            previous_end = reader.line_num
            if not cells:
                lines.clear()
                continue
            values = {name: cells[i] if i < len(cells) else "" for i, name in enumerate(header)}
            if len(lines) > 1:
                _refuse_swallowed_records(path, start, header, values, lines)
            lines.clear()
            if bad_lines and bad_lines[0] <= previous_end:
                yield _undecodable(path, values, bad_lines, previous_end)
                continue
            yield CsvRow(start, values)


def _malformed(path: Path, start: int, end: int, exc: csv.Error) -> InputError:
    """The error for a record the CSV reader refused, naming the line the record began on."""
    why = str(exc)
    if "unexpected end of data" in why:
        return InputError(f"a quote opened in the record on this line is never closed (it runs"
                          f" to the end of the file, line {end}, swallowing every row after"
                          " it)", file=path, line=start)
    if "expected after" in why:
        return InputError(f"a quoted field opened in the record on this line closes on line"
                          f" {end} with text after the closing quote (a quote left open that"
                          " swallowed the rows between?)", file=path, line=start)
    if "field larger" in why:
        return InputError(f"a field of the record on this line runs past"
                          f" {MAX_RECORD_BYTES >> 20} MiB (a quote left open?)", file=path,
                          line=start)
    return InputError(f"malformed CSV (record ending on line {end}): {why}", file=path,
                      line=start)


def id_shape(value: str) -> str:
    """The shape of an id: runs of letters as ``a``, of digits as ``9`` (``A12`` -> ``a9``)."""
    return _DIGITS.sub("9", _LETTERS.sub("a", value.strip()))


def _refuse_swallowed_records(path: Path, start: int, header: list[str],
                              values: dict[str, str], lines: list[str]) -> None:
    """An InputError when a record spanning ``lines`` holds a line that, read alone, is a
    record of the header's width whose first field has the shape of this record's first field
    (``A2,bob,...`` inside a quote opened on ``A1``'s line, an id with digits): rows a quote
    left open swallowed."""
    shape = id_shape(next(iter(values.values()), ""))
    if "9" not in shape:
        return  # a first field without digits is no id: words would look alike too often
    for offset, line in enumerate(lines[1:], start=1):
        try:
            alone = next(csv.reader([line]))
        except (csv.Error, StopIteration):
            continue
        if (len(alone) >= len(header) and alone[0].strip() and '"' not in alone[0]
                and id_shape(alone[0]) == shape):
            spanning = next((name for name, value in values.items() if "\n" in value), None)
            raise InputError(
                f"a quoted field opened in the record on this line spans line {start + offset},"
                " which starts like a new record of the same shape (a quote left open that"
                " swallowed the rows after it?); close the quote, or quote that line's text",
                file=path, line=start, field=spanning)


def _check_header(path: Path, header: list[str], required: Sequence[str], bad: list[int]) -> None:
    """Raise an InputError at line 1 when the header is undecodable or lacks a required column."""
    if bad:
        raise InputError("undecodable bytes (not UTF-8) in the header", file=path, line=1)
    missing = [name for name in required if name not in header]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(map(repr, missing))}; found: {', '.join(header)}",
            file=path,
            line=1,
            field=missing[0],
        )


def _undecodable(path: Path, values: dict[str, str], bad_lines: list[int], end: int) -> RecordError:
    """The error for a row holding undecodable bytes, naming its first bad line and field."""
    line = bad_lines[0]
    while bad_lines and bad_lines[0] <= end:
        bad_lines.pop(0)
    column = next((name for name, value in values.items() if has_undecodable(value)), None)
    return RecordError(
        UNDECODABLE, "undecodable bytes (not UTF-8)", file=path, line=line, field=column
    )
