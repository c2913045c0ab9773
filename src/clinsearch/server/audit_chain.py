"""The audit chain's format and its verifier.

A keyed chain (``clinsearch-audit/2``) is JSON Lines; every record ends with ``mac``, the
HMAC-SHA256 (audit key) of the line up to it, and holds ``prev``, the previous record's
``mac`` (64 zeros for the first). Its first record (``chain-start``) names the key by its id
and, when the chain follows another (an older plain log, or a log that went missing), what it
follows. The head, the last record's number and mac and an HMAC over both, is kept twice:
beside the log (``PATH.head``) and in the key's private folder (``audit-heads/``), where
whoever can write the log cannot reach it; each file has two slots written in turn, and its
newest slot whose HMAC holds counts. A missing head, or one that names another record,
fails verification; a head one record behind the log is the trace of a crash between the two
writes. Without the key nobody can forge a record, recompute the chain after an edit, or write
a head for a log cut short; restoring an older log with its heads needs the private folder too,
and checkpoints anchored off the machine catch even that.

The first format (plain SHA-256 of the previous line in ``prev``, an optional unsigned head) is
still checked, to import it (``audit.import_plain``, on an admin's command): anyone can
recompute such a chain, so ``audit.verify_log`` never passes it on its own.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinsearch.errors import ClinsearchError

GENESIS = "0" * 64
HEAD_SUFFIX = ".head"
HEAD_SLOT = 256  # bytes of each of a head file's two slots
KEYED_FORMAT = "clinsearch-audit/2 hmac-sha256"
_MAC_TAIL = re.compile(rb',"mac":"([0-9a-f]{64})"\}$')


def head_path(log: Path) -> Path:
    """The head file beside ``log``."""
    return log.with_name(log.name + HEAD_SUFFIX)


def mac_of(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` under ``key``, hex."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def keyed_line(key: bytes, record: dict[str, Any]) -> tuple[bytes, str]:
    """``record`` as one line ending in its mac, and that mac."""
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    mac = mac_of(key, body)
    return body[:-1] + f',"mac":"{mac}"}}'.encode(), mac


def head_text(key: bytes, seq: int, mac: str) -> str:
    """A head: the last record's number and mac, and an HMAC over both (one line)."""
    return f"{seq} {mac} {_head_mac(key, seq, mac)}\n"


def _head_mac(key: bytes, seq: int, mac: str) -> str:
    """The HMAC a head holds over its record number and mac."""
    return mac_of(key, f"head {seq} {mac}".encode())


def head_slot(key: bytes, seq: int, mac: str) -> bytes:
    """``head_text`` filling one of a head file's two slots (HEAD_SLOT bytes). Record ``seq``
    goes to slot ``seq % 2``, rewritten in place, so a write cut short by a crash spoils that
    slot alone and the other still names the record before."""
    return head_text(key, seq, mac).rstrip("\n").ljust(HEAD_SLOT - 1).encode("ascii") + b"\n"


def newest_head(head: Path, key: bytes | None) -> tuple[int, str] | None:
    """The record number and mac the head file names: of its slots (one in a file an older
    clinsearch wrote) the one with the highest number whose HMAC holds under ``key`` (any
    that reads as a head when ``key`` is None); None if none does."""
    data = head.read_bytes()
    found = []
    for start in range(0, len(data), HEAD_SLOT):
        words = data[start:start + HEAD_SLOT].split()
        if len(words) != 3 or not words[0].isdigit():  # a slot cut short, or not a head
            continue
        seq, mac = int(words[0]), words[1].decode("ascii", errors="replace")
        if key is None or hmac.compare_digest(words[2], _head_mac(key, seq, mac).encode()):
            found.append((seq, mac))
    return max(found, default=None)


def plain_hash(line: bytes) -> str:
    """The first format's link: SHA-256 of one record line (without its newline)."""
    return hashlib.sha256(line).hexdigest()


@dataclass
class Verification:
    """What ``verify_audit`` found: records, the last link, problems, and what the chain
    follows (a predecessor named by its first record)."""

    records: int = 0
    last_hash: str = GENESIS
    keyed: bool = False
    problems: list[str] = field(default_factory=list)
    follows: dict[str, Any] | None = None
    macs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether the chain is intact."""
        return not self.problems


def read_lines(path: Path, result: Verification) -> list[bytes]:
    """The log's lines (a last line without its newline is noted as cut short)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ClinsearchError(f"{path}: cannot read the audit log ({exc.strerror})") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        result.problems.append(f"{path}:{len(lines)}: the last record is cut short")
    return lines


def is_keyed(path: Path) -> bool:
    """Whether the log at ``path`` is a keyed chain (its first line ends with a mac)."""
    with path.open("rb") as handle:
        first = handle.readline().rstrip(b"\n")
    return _MAC_TAIL.search(first) is not None


def private_head_path(key_path: Path, log: Path) -> Path:
    """The copy of ``log``'s head kept in the key's private folder."""
    name = hashlib.sha256(str(log.resolve()).encode()).hexdigest()[:32]
    return key_path.parent / "audit-heads" / f"{name}.head"


def verify_audit(path: str | Path, key: bytes | None = None, private_head: Path | None = None,
                 anchors: dict[int, str] | None = None) -> Verification:
    """Check every record's number, link and (keyed chain) mac, both heads, and ``anchors``
    (record number -> mac, as printed by a checkpoint and kept elsewhere)."""
    path = Path(path)
    result = Verification()
    lines = read_lines(path, result) if path.exists() else []
    result.keyed = bool(lines) and _MAC_TAIL.search(lines[0]) is not None
    if result.keyed:
        if key is None:
            raise ClinsearchError(f"{path}: a keyed audit log; its key is needed to verify it")
        _verify_keyed(path, lines, key, result)
        for head in (head_path(path), private_head):
            if head is not None:
                _check_head(head, key, lines, result)
    else:
        _verify_plain(path, lines, result)
        if private_head is not None and private_head.exists():
            result.problems.append(f"{path}: this server wrote a keyed chain here"
                                   f" ({private_head}), the log holds none (it was removed,"
                                   " emptied or replaced)")
    for seq, mac in (anchors or {}).items():
        if seq >= len(result.macs) or result.macs[seq] != mac:
            result.problems.append(f"{path}:{seq + 1}: record {seq} is not the one anchored"
                                   " elsewhere (records were cut off, replaced or rewritten)")
    return result


def _check_record(where: str, record: dict[str, Any], seq: int, prev: str,
                  problems: list[str]) -> None:
    if record.get("seq") != seq:
        problems.append(f"{where}: record number {record.get('seq')!r}, expected {seq}"
                        " (records removed, inserted or reordered)")
    if record.get("prev") != prev:
        problems.append(f"{where}: 'prev' does not match the record before it (that record"
                        " was edited, or records were removed, inserted or reordered)")


def _parse(where: str, line: bytes, problems: list[str]) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        record = None
    if not isinstance(record, dict):
        problems.append(f"{where}: not a JSON record")
        return {}
    return record


def _verify_keyed(path: Path, lines: list[bytes], key: bytes, result: Verification) -> None:
    from clinsearch.server.audit_key import key_id

    for number, line in enumerate(lines, start=1):
        where = f"{path}:{number}"
        record = _parse(where, line, result.problems)
        tail = _MAC_TAIL.search(line)
        body = line[: tail.start()] + b"}" if tail else b""
        mac = tail.group(1).decode() if tail else ""
        if not tail or not hmac.compare_digest(mac, mac_of(key, body)):
            result.problems.append(f"{where}: the record's mac does not match (the record was"
                                   " edited or forged, or another key signed it)")
        _check_record(where, record, number - 1, result.last_hash, result.problems)
        if number == 1:
            if record.get("endpoint") != "chain-start" or record.get("key_id") != key_id(key):
                result.problems.append(f"{where}: not the start of a chain under this key")
            result.follows = record.get("follows")
        result.last_hash = mac
        result.macs.append(mac)
    result.records = len(lines)


def _check_head(head: Path, key: bytes, lines: list[bytes], result: Verification) -> None:
    """A head must name the last record (or the one before: a crash between the writes)."""
    if not head.exists():
        result.problems.append(f"{head}: the head is missing (records may have been cut off"
                               " the end)")
        return
    last, before = len(lines) - 1, result.macs[-2] if len(lines) > 1 else GENESIS
    if newest_head(head, key) not in ((last, result.last_hash), (last - 1, before)):
        result.problems.append(f"{head}: the head does not name the last record (records were"
                               " cut off the end, the last one was edited, or the head forged)")


def _verify_plain(path: Path, lines: list[bytes], result: Verification) -> None:
    before_last = GENESIS
    for number, line in enumerate(lines, start=1):
        where = f"{path}:{number}"
        record = _parse(where, line, result.problems)
        _check_record(where, record, number - 1, result.last_hash, result.problems)
        before_last, result.last_hash = result.last_hash, plain_hash(line)
        result.macs.append(result.last_hash)
    result.records = len(lines)
    head = head_path(path)
    if head.exists():
        written = head.read_text(encoding="utf-8", errors="replace").strip()
        if written not in (f"{len(lines) - 1} {result.last_hash}",
                           f"{len(lines) - 2} {before_last}"):
            result.problems.append(f"{head}: the last record is not the one last written"
                                   " (records were cut off the end, or the last record was edited)")
