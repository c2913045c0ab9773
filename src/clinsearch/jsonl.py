"""JSON Lines: the one parser (one object per line, errors naming file and line) and writer."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from clinsearch.errors import InputError
from clinsearch.exports import open_export
from clinsearch.text_checks import surrogate_in
from clinsearch.user_files import open_user_file

MAX_RECORD_BYTES = 16 << 20  # one JSON line; longer ones are refused before they are parsed


class JsonLineError(InputError):
    """A line that is not valid JSON; ``detail`` is the parser's reason and column."""

    def __init__(self, detail: str, *, file: str | Path | None, line: int) -> None:
        self.detail = detail
        super().__init__(f"not valid JSON: {detail}", file=file, line=line)


def json_object(text: str, *, file: str | Path | None, line: int) -> dict[str, Any]:
    """``text`` parsed as one JSON object, or an InputError naming ``file`` and ``line``."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonLineError(f"{exc.msg} at column {exc.colno}", file=file, line=line) from None
    except RecursionError:
        raise JsonLineError("nested too deeply", file=file, line=line) from None
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object", file=file, line=line)
    if surrogate_in(obj):
        raise JsonLineError("a \\ud800-style escape that is no character (a lone surrogate)",
                            file=file, line=line)
    return obj


def bounded_lines(handle: BinaryIO, limit: int = MAX_RECORD_BYTES) -> Iterator[bytes | None]:
    """The lines of ``handle``, each read with at most ``limit`` bytes held: a longer line
    is skipped to its end and given as None (so memory stays bounded and numbering right)."""
    while data := handle.readline(limit + 1):
        if len(data) <= limit or data.endswith(b"\n"):
            yield data
            continue
        while (more := handle.readline(limit + 1)) and not more.endswith(b"\n"):
            pass
        yield None


def too_long(file: str | Path | None, line: int) -> InputError:
    """The error for a line over MAX_RECORD_BYTES."""
    return InputError(f"a line longer than {MAX_RECORD_BYTES >> 20} MiB", file=file, line=line)


def read_json_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a UTF-8 JSON Lines file."""
    path = Path(path)
    with open_user_file(path) as handle:  # a regular file only: never blocks on a FIFO
        for number, data in enumerate(bounded_lines(handle), start=1):
            if data is None:
                raise too_long(path, number)
            try:
                text = data.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError:
                raise InputError("undecodable bytes (not UTF-8)", file=path, line=number) from None
            if text.strip():
                yield number, json_object(text, file=path, line=number)


def json_line(record: object) -> str:
    """One record as a JSON line (UTF-8 kept as is)."""
    return json.dumps(record, ensure_ascii=False)


def write_json_lines(path: str | Path, records: Iterable[object], *, force: bool = False
                     ) -> None:
    """Write one JSON line per record to ``path`` atomically."""
    with open_export(path, force=force) as out:
        out.writelines(json_line(r) + "\n" for r in records)
