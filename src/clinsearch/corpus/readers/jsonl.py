"""The ``jsonl`` reader: one JSON object per line with keys id, text and optional fields."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.records import (
    MALFORMED_JSON,
    MISSING_FIELD,
    UNDECODABLE,
    RecordError,
    make_report,
)
from clinsearch.corpus.readers.textio import decode_lines, has_undecodable, open_input
from clinsearch.errors import InputError
from clinsearch.jsonl import JsonLineError, json_object

KNOWN_KEYS = ("id", "text", "patient_id", "visit_id", "type", "date")
_FIELDS = {"id": "id", "text": "text", "date": "date"}


def read_jsonl(path: Path, seen: dict[str, int]) -> Iterator[Report | RecordError]:
    """Stream reports from JSON Lines; keys other than ``KNOWN_KEYS`` go to metadata."""
    with open_input(path) as raw:
        bad_lines: list[int] = []
        for number, line in enumerate(decode_lines(raw, bad_lines), start=1):
            if not line.strip():
                continue
            try:
                result: Report | RecordError = _parse(path, number, line, seen)
            except RecordError as error:
                result = error
            yield result


def _parse(path: Path, number: int, line: str, seen: dict[str, int]) -> Report:
    """One line as a Report, or a RecordError naming the line and key."""
    if has_undecodable(line):
        raise RecordError(UNDECODABLE, "undecodable bytes (not UTF-8)", file=path, line=number)
    try:
        obj = json_object(line, file=path, line=number)
    except JsonLineError as exc:
        raise RecordError(
            MALFORMED_JSON, f"malformed JSON: {exc.detail}", file=path, line=number
        ) from None
    except InputError as exc:
        raise RecordError(MALFORMED_JSON, exc.message, file=path, line=number) from None
    for key in ("id", "text"):
        if obj.get(key) is None:
            raise RecordError(MISSING_FIELD, "missing key", file=path, line=number, field=key)
    return make_report(
        file=path,
        line=number,
        report_id=_string(obj["id"]),
        text=_string(obj["text"]),
        fields=_FIELDS,
        patient_id=_string(obj.get("patient_id", "")),
        visit_id=_string(obj.get("visit_id", "")),
        type_=_string(obj.get("type", "")),
        date_value=_string(obj.get("date", "")),
        metadata={k: _string(v) for k, v in obj.items() if k not in KNOWN_KEYS},
        seen=seen,
    )


def _string(value: Any) -> str:
    """A JSON value as a string: strings as they are, null as "", anything else as JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value)
