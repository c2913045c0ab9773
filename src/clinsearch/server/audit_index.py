"""An index of the audit log for the admin viewer: each record's byte offset, and its user,
endpoint, purpose and day as small codes. It reads the log once, then only what was appended
since (a log replaced or cut short is read again), so a page of records is found by the codes
and read by its offsets alone instead of parsing the whole log on every request."""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clinsearch.errors import InputError

READ_CHUNK = 1 << 22  # bytes read at a time while indexing
_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
# A record's top-level fields as the server writes them (compact JSON, these keys before any
# nested value), found by their first occurrence: a quote inside a string value is escaped,
# so '"user":"' cannot occur within one.
_KEYS = {name: f'"{name}":"'.encode() for name in ("time", "user", "endpoint", "purpose")}


@dataclass(frozen=True)
class AuditFilter:
    """What the viewer asks for: ``user`` and ``endpoint`` exactly, ``purpose`` as a
    case-insensitive part, days (YYYY-MM-DD, inclusive) against the record's UTC time."""

    user: str = ""
    endpoint: str = ""
    purpose: str = ""
    date_from: str = ""
    date_to: str = ""


@dataclass
class _Codes:
    """Distinct values of one field, each numbered once."""

    numbers: dict[str, int] = field(default_factory=dict)

    def code(self, value: str) -> int:
        return self.numbers.setdefault(value, len(self.numbers))


def day_number(value: str, name: str) -> int:
    """``YYYY-MM-DD`` as the integer YYYYMMDD (an InputError naming ``name`` otherwise)."""
    match = _DAY.match(value)
    if match is None:
        raise InputError(f"{name}: expected a date as YYYY-MM-DD (got {value[:40]!r})")
    return int("".join(match.groups()))


class AuditIndex:
    """Offsets and codes of the records of the log at ``path`` (see the module's docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._reset(None)

    def _reset(self, identity: tuple[int, int] | None) -> None:
        self._identity, self._end = identity, 0
        self._offsets = array("q")
        self._users, self._endpoints, self._purposes = array("i"), array("i"), array("i")
        self._days = array("i")
        self._user_codes, self._endpoint_codes, self._purpose_codes = _Codes(), _Codes(), _Codes()

    def prepare(self) -> threading.Thread:
        """Build the index in the background (the server does so at start), so that the first
        page an admin asks for does not wait for a read of the whole log."""

        def build() -> None:
            with self._lock, contextlib.suppress(OSError), self.path.open("rb") as log:
                self._catch_up(log)

        thread = threading.Thread(target=build, name="audit-index", daemon=True)
        thread.start()
        return thread

    def page(self, wanted: AuditFilter, offset: int, limit: int
             ) -> tuple[int, list[dict[str, Any]]]:
        """How many records match ``wanted`` and the page of them, newest first."""
        low = day_number(wanted.date_from, "date_from") if wanted.date_from else 0
        high = day_number(wanted.date_to, "date_to") if wanted.date_to else 99_999_999
        with self._lock, self.path.open("rb") as log:
            self._catch_up(log)
            mask = self._mask(wanted, low, high)
            rows = np.flatnonzero(mask)[::-1]
            chosen = rows[offset : offset + limit]
            records = []
            for row in chosen.tolist():
                log.seek(self._offsets[row])
                with contextlib.suppress(ValueError):  # the verification names a bad line
                    records.append(json.loads(log.readline()))
        return len(rows), records

    def _mask(self, wanted: AuditFilter, low: int, high: int) -> np.ndarray:
        days = np.frombuffer(self._days, dtype=np.int32)
        mask = (days >= low) & (days <= high)
        for value, codes, column in ((wanted.user, self._user_codes, self._users),
                                     (wanted.endpoint, self._endpoint_codes, self._endpoints)):
            if value:
                mask &= np.frombuffer(column, dtype=np.int32) == codes.numbers.get(value, -1)
        if wanted.purpose:
            part = wanted.purpose.lower()
            matching = [n for text, n in self._purpose_codes.numbers.items()
                        if part in text.lower()]
            mask &= np.isin(np.frombuffer(self._purposes, dtype=np.int32), matching)
        return mask

    def _catch_up(self, log: Any) -> None:
        """Index the records appended since the last call (all of them for a new log)."""
        info = os.fstat(log.fileno())
        identity = (info.st_dev, info.st_ino)
        if identity != self._identity or info.st_size < self._end:
            self._reset(identity)
        log.seek(self._end)
        offset, rest = self._end, b""
        while chunk := log.read(READ_CHUNK):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()  # a record still being written waits for the next call
            for line in lines:
                self._add(offset, line)
                offset += len(line) + 1
        self._end = offset

    def _add(self, offset: int, line: bytes) -> None:
        if not line.startswith(b"{") or not line.endswith(b"}"):
            return  # not a record: the verification names it
        day = _field(line, "time")[:10]
        self._offsets.append(offset)
        self._users.append(self._user_codes.code(_field(line, "user")))
        self._endpoints.append(self._endpoint_codes.code(_field(line, "endpoint")))
        self._purposes.append(self._purpose_codes.code(_field(line, "purpose")))
        self._days.append(int(day.replace("-", "")) if _DAY.match(day) else 0)


def _field(line: bytes, name: str) -> str:
    """The string value of the top-level field ``name`` of a record line ("" if none)."""
    key = _KEYS[name]
    start = line.find(key)
    if start < 0:
        return ""
    start += len(key)
    end = line.find(b'"', start)
    while end > 0 and line[end - 1] == 0x5C and (end - len(line[:end].rstrip(b"\\"))) % 2:
        end = line.find(b'"', end + 1)
    if end < 0:
        return ""
    raw = line[start:end]
    if b"\\" not in raw:
        return raw.decode("utf-8", errors="replace")
    try:
        return str(json.loads(b'"' + raw + b'"'))
    except ValueError:
        return ""
