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
    WRONG_TYPE,
    ReadContext,
    RecordError,
    make_report,
)
from clinsearch.corpus.readers.textio import decode_lines, has_undecodable, open_input
from clinsearch.errors import InputError
from clinsearch.jsonl import JsonLineError, json_object

KNOWN_KEYS = ("id", "text", "patient_id", "visit_id", "type", "date")
_FIELDS = {"id": "id", "text": "text", "date": "date"}
_JSON_TYPES = {bool: "a boolean", int: "a number", float: "a number", list: "a list",
               dict: "an object"}


def read_jsonl(path: Path, seen: ReadContext) -> Iterator[Report | RecordError]:
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


def _parse(path: Path, number: int, line: str, seen: ReadContext) -> Report:
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
        report_id=_text_field(obj, "id", path, number),
        text=_text_field(obj, "text", path, number),
        fields=_FIELDS,
        patient_id=_text_field(obj, "patient_id", path, number),
        visit_id=_text_field(obj, "visit_id", path, number),
        type_=_text_field(obj, "type", path, number),
        date_value=_text_field(obj, "date", path, number),
        metadata={k: _metadata(v) for k, v in obj.items() if k not in KNOWN_KEYS},
        seen=seen,
    )


def _text_field(obj: dict[str, Any], key: str, path: Path, number: int) -> str:
    """A known key's value, which must be a JSON string (null or absent: ""): a number, a
    boolean, a list or an object is an error, never silently turned into text."""
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RecordError(
            WRONG_TYPE,
            f"expected a string, got {_JSON_TYPES.get(type(value), 'a value')}",
            file=path,
            line=number,
            field=key,
        )
    return value


def _metadata(value: Any) -> str:
    """A metadata value as a string: strings as they are, null as "", anything else as JSON."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value)
