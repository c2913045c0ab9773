"""An index of the audit log for the admin viewer: each record's byte offset, and its user,
endpoint, purpose and day as small codes. It reads the log once, then only what was appended
since (a log replaced or cut short is read again), so a page of records is found by the codes
and read by its offsets alone instead of parsing the whole log on every request."""

from __future__ import annotations

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
        try:
            record = json.loads(line)
        except ValueError:
            return  # the verification names it
        if not isinstance(record, dict):
            return
        day = str(record.get("time", ""))[:10]
        self._offsets.append(offset)
        self._users.append(self._user_codes.code(str(record.get("user", ""))))
        self._endpoints.append(self._endpoint_codes.code(str(record.get("endpoint", ""))))
        self._purposes.append(self._purpose_codes.code(str(record.get("purpose", ""))))
        self._days.append(int(day.replace("-", "")) if _DAY.match(day) else 0)
