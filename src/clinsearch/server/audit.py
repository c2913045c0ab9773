"""The audit trail: one JSON line per access to report data, each holding the previous line's hash.

Every record has ``seq`` (0, 1, ...), ``time`` (UTC), the user, role, stated purpose, endpoint,
parameters and counts, and ``prev``: the SHA-256 of the previous line's bytes (64 zeros for the
first). Editing, removing, inserting or reordering lines breaks the chain; ``PATH.head`` holds
the last record's number and hash, so that cutting records off the end is caught as well. The
head is written durably after its record; a head one record behind the log is the trace of a
crash between the two writes (not of records cut off) and is brought up to date on the next start.
Records are flushed and fsynced before the response they describe is sent; a record the disk
refuses (full, read-only) is cut off again, so the chain stays intact and the request fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clinsearch.atomic import atomic_path
from clinsearch.errors import ClinsearchError
from clinsearch.permissions import dir_mode, file_mode

GENESIS = "0" * 64
HEAD_SUFFIX = ".head"


def line_hash(line: bytes) -> str:
    """The SHA-256 hex digest of one record line (without its newline)."""
    return hashlib.sha256(line).hexdigest()


def utc_now() -> str:
    """The current UTC time, ISO 8601 with milliseconds and a Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Appends hash-chained records to a JSON Lines file (created private, as
    ``clinsearch.permissions`` sets)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.head_path = self.path.with_name(self.path.name + HEAD_SUFFIX)
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode())
        self._seq, self._prev = self._resume()
        if self._seq:
            self._write_head()  # after a crash between a record and its head, it catches up
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, file_mode())

    def write(self, **fields: Any) -> dict[str, Any]:
        """Append one record (``seq``, ``time`` and ``prev`` are added) and sync it to disk; an
        OSError (naming the log) if the disk refuses it, with the log left as it was."""
        with self._lock:
            record = {"seq": self._seq, "time": utc_now(), **fields, "prev": self._prev}
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            try:
                self._append(line + b"\n")
                self._prev, self._seq = line_hash(line), self._seq + 1
                self._write_head()
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        return record

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            os.close(self._fd)

    def _append(self, data: bytes) -> None:
        """Write ``data`` at the end and sync it; on failure cut the file back to its size."""
        size = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
        except OSError:
            with contextlib.suppress(OSError):  # else the next start's verification names it
                os.ftruncate(self._fd, size)
            raise

    def _write_head(self) -> None:
        """Record the last record's number and hash beside the log (replaced atomically)."""
        with atomic_path(self.head_path, make_parent=False, durable=True) as tmp:
            tmp.write_text(f"{self._seq - 1} {self._prev}\n", encoding="utf-8")

    def _resume(self) -> tuple[int, str]:
        """Continue an existing log after checking it: the next number and the last hash."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return 0, GENESIS
        result = verify_audit(self.path)
        if not result.ok:
            raise ClinsearchError(
                f"{self.path}: the audit log fails verification ({result.problems[0]}); keep it"
                " as evidence and start a new log with --audit-log"
            )
        return result.records, result.last_hash


@dataclass
class Verification:
    """What ``verify_audit`` found: how many records, the last hash, and every problem."""

    records: int = 0
    last_hash: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the chain is intact."""
        return not self.problems


def verify_audit(path: str | Path) -> Verification:
    """Check every record's number and chain link, and the head file when there is one."""
    path = Path(path)
    result = Verification()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ClinsearchError(f"{path}: cannot read the audit log ({exc.strerror})") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        result.problems.append(f"{path}:{len(lines)}: the last record is cut short")
    before_last = GENESIS
    for number, line in enumerate(lines, start=1):
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            result.problems.append(f"{where}: not a JSON record")
            record = {}
        if record.get("seq") != number - 1:
            result.problems.append(
                f"{where}: record number {record.get('seq')!r}, expected {number - 1}"
                " (records removed, inserted or reordered)"
            )
        if record.get("prev") != result.last_hash:
            result.problems.append(
                f"{where}: 'prev' does not match the hash of the record before it (that record"
                " was edited, or records were removed, inserted or reordered)"
            )
        before_last, result.last_hash = result.last_hash, line_hash(line)
    result.records = len(lines)
    head = path.with_name(path.name + HEAD_SUFFIX)
    if head.exists():
        written = head.read_text(encoding="utf-8").strip()
        crashed_before_head = f"{len(lines) - 2} {before_last}"
        if written not in (f"{len(lines) - 1} {result.last_hash}", crashed_before_head):
            result.problems.append(
                f"{head}: the last record is not the one last written (records were cut off"
                " the end, or the last record was edited)"
            )
    return result
