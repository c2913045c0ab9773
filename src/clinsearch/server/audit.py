"""The audit trail: one keyed, chained JSON line per access to report data (``audit_chain``
describes the format and its verifier).

Every record has ``seq``, ``time`` (UTC), the user, role, stated purpose, client address,
endpoint, parameters, counts, which reports were disclosed, ``prev`` and ``mac``. Records are
written whole and synced, then both heads, before the response they describe is sent; a record
the disk refuses (full, read-only) is cut off again and the heads stay, so the chain stays
intact, the request fails, and the server starts again once there is space. The log is checked
by inode before each record: removed or rotated away while serving, a new chain starts at the
path and its first record names the one it follows. A start without the log but with a head
(the log was removed or replaced while the server was stopped) is refused unless an admin
acknowledges the gap (``accept_gap``, ``serve --accept-audit-gap REASON``), which the new
chain's first record keeps; a plain (unkeyed) log is never taken over, only imported by
``import_plain`` (``clinsearch audit import``), also recorded. The log is opened with
``O_NOFOLLOW`` and refused when it is not a regular file private to its owner. Every
``checkpoint_every`` records a checkpoint record is added and its mac logged
(``clinsearch.audit``, to syslog with ``serve --audit-syslog``) for keeping off the machine.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import hashlib
import logging
import os
import stat
import tempfile
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clinsearch.atomic import fsync_path
from clinsearch.errors import ClinsearchError
from clinsearch.permissions import dir_mode, file_mode
from clinsearch.server.audit_chain import (
    GENESIS,
    HEAD_SLOT,
    KEYED_FORMAT,
    Verification,
    head_path,
    head_slot,
    is_keyed,
    keyed_line,
    newest_head,
    private_head_path,
    verify_audit,
)
from clinsearch.server.audit_key import check_apart, default_key_path, key_id, load_key
from clinsearch.user_files import FileRefused

CHECKPOINT_EVERY = 1000
IMPORTED = "imported from a plain SHA-256 chain ('clinsearch audit import')"
INLINE_IDS = 25  # longer id lists go to a private file named by their digest
checkpoints = logging.getLogger("clinsearch.audit")


def utc_now() -> str:
    """The current UTC time, ISO 8601 with milliseconds and a Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AuditLog:
    """Appends keyed, chained records to a JSON Lines file (created private)."""

    def __init__(self, path: str | Path, key_path: Path | None = None, *,
                 checkpoint_every: int = CHECKPOINT_EVERY, accept_gap: str | None = None,
                 follows: dict[str, Any] | None = None) -> None:
        """Continue the keyed log at ``path`` or start one; ``accept_gap`` is an admin's
        reason for starting after a log that went missing, ``follows`` what a new chain
        records it follows (``import_plain``)."""
        self.path = Path(path)
        self.key_path = key_path or default_key_path()
        check_apart(self.key_path, self.path)
        self.key = load_key(self.key_path, create=True)
        self.heads = (head_path(self.path), private_head_path(self.key_path, self.path))
        self.disclosed_dir = self.path.with_name(self.path.name + ".disclosed")
        self.checkpoint_every = checkpoint_every
        self._lock = threading.Lock()
        for head in self.heads:
            head.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode())
            _remove_stale_temporaries(head)
        self._fd = -1
        self._head_fds = [-1] * len(self.heads)  # each head file, once this process wrote it
        self._seq, self._prev = 0, GENESIS
        self._gap: dict[str, Any] | None = None  # the chain a new one must name as followed
        self._resume(accept_gap, follows)
        self.checkpoint("start")

    def write(self, **fields: Any) -> dict[str, Any]:
        """Append one record (``seq``, ``time``, ``prev`` and ``mac`` are added) and sync it;
        an OSError (naming the log) if the disk refuses it, with the log left as it was."""
        with self._lock:
            self._follow_the_path()
            record = self._append(fields)
            if self._seq % self.checkpoint_every == 0:
                self._append({"endpoint": "checkpoint", "records": self._seq})
                self._log_checkpoint("periodic")
        return record

    def disclosed(self, ids: list[str]) -> dict[str, Any]:
        """How a record names the ids shown: inline when few, else their count and digest,
        with the list kept privately beside the log under that digest."""
        if len(ids) <= INLINE_IDS:
            return {"ids": ids}
        data = "".join(f"{i}\n" for i in ids).encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        listed = self.disclosed_dir / f"{digest}.txt"
        if not listed.exists():
            self.disclosed_dir.mkdir(exist_ok=True, mode=dir_mode())
            _write_durably(listed, data)
        return {"count": len(ids), "sha256": digest,
                "list": f"{self.disclosed_dir.name}/{listed.name}"}

    def checkpoint(self, why: str) -> None:
        """Log the last record's number and mac for keeping off the machine."""
        with self._lock:
            self._log_checkpoint(why)

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            for fd in (self._fd, *self._head_fds):
                if fd >= 0:
                    os.close(fd)

    def _log_checkpoint(self, why: str) -> None:
        checkpoints.info("audit checkpoint (%s): %s record %d mac %s", why, self.path,
                         self._seq - 1, self._prev)

    def _append(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Write one record whole, then both heads; on any failure cut the log back."""
        record = {"seq": self._seq, "time": utc_now(), **fields, "prev": self._prev}
        line, mac = keyed_line(self.key, record)
        size = os.fstat(self._fd).st_size
        try:
            view = memoryview(line + b"\n")
            while view:
                view = view[os.write(self._fd, view):]
            os.fsync(self._fd)
            self._write_heads(self._seq, mac)
        except OSError as exc:
            with contextlib.suppress(OSError):  # else the next start's verification names it
                os.ftruncate(self._fd, size)
                os.fsync(self._fd)
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None
        self._seq, self._prev = self._seq + 1, mac
        return record

    def _write_heads(self, seq: int, mac: str) -> None:
        """Both heads: slot ``seq % 2`` of each file rewritten in place and synced. A chain's
        first record, and a file this process has not written yet or one removed or replaced
        since, is written whole (both slots) to a temporary first and renamed: a full disk
        fails before either head moves, and no slot of another chain remains."""
        slot = head_slot(self.key, seq, mac)
        whole = [i for i in range(len(self.heads)) if seq == 0 or not self._head_current(i)]
        if whole:
            self._replace_heads([self.heads[i] for i in whole], slot + slot)
        for i, head in enumerate(self.heads):
            if i in whole:
                if self._head_fds[i] >= 0:
                    os.close(self._head_fds[i])
                self._head_fds[i] = _open_head(head)
            else:
                os.pwrite(self._head_fds[i], slot, seq % 2 * HEAD_SLOT)
                os.fdatasync(self._head_fds[i])

    def _head_current(self, i: int) -> bool:
        """Whether head ``i`` is open and still the file at its path."""
        fd = self._head_fds[i]
        if fd < 0:
            return False
        try:
            there = os.lstat(self.heads[i])
        except FileNotFoundError:
            return False
        own = os.fstat(fd)
        return (there.st_dev, there.st_ino) == (own.st_dev, own.st_ino)

    @staticmethod
    def _replace_heads(heads: list[Path], data: bytes) -> None:
        """``heads`` written whole to temporaries, then renamed over the files."""
        written: list[tuple[str, Path]] = []
        try:
            for head in heads:
                fd, name = tempfile.mkstemp(prefix=f".{head.name}.", suffix=".tmp",
                                            dir=head.parent)
                written.append((name, head))
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
            for name, head in written:
                os.replace(name, head)
        finally:
            for name, _ in written:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)
        for head in heads:
            fsync_path(head.parent)

    def _resume(self, accept_gap: str | None, follows: dict[str, Any] | None) -> None:
        """Continue an intact keyed log; refuse a plain one, and a missing one whose head
        remains unless an admin accepts the gap."""
        if self.path.is_symlink():
            raise ClinsearchError(f"{self.path}: a symbolic link in the audit log's place;"
                                  " refused (the log is never followed through a link)")
        if self.path.exists() and self.path.stat().st_size:
            if follows is not None:
                raise ClinsearchError(f"{self.path}: already holds a log; nothing imported")
            if not is_keyed(self.path):
                raise ClinsearchError(
                    f"{self.path}: a plain (unkeyed) audit log, which anyone can recompute:"
                    " the server does not take it over. If it is the genuine log of an older"
                    f" clinsearch, import it with 'clinsearch audit import {self.path}'"
                    " (recorded in the keyed chain that follows it)")
            result = verify_audit(self.path, self.key, self.heads[1])
            if not result.ok:
                raise ClinsearchError(
                    f"{self.path}: the audit log fails verification ({result.problems[0]});"
                    " keep it as evidence and start a new log with --audit-log"
                )
            self._fd = _open_log(self.path, create=False)
            self._seq, self._prev = result.records, result.last_hash
            self._write_heads(self._seq - 1, self._prev)  # a head a crash left behind catches up
            return
        gap = self._missing_predecessor()
        if gap is not None:
            if accept_gap is None or not accept_gap.strip():
                raise ClinsearchError(
                    f"{self.path}: the audit log is missing or empty but its head remains"
                    f" ({gap['records']} records, the last with mac {gap['last'][:16]}...):"
                    " it was removed or replaced while the server was stopped. Keep what is"
                    " left as evidence; to start a new chain that records the gap, serve"
                    " with --accept-audit-gap 'REASON'")
            follows = gap | {"acknowledged": accept_gap.strip()[:500], "by": _os_user()}
            checkpoints.error("audit log %s is missing or empty but its head remains: the gap"
                              " is acknowledged (%s) and a new chain records it", self.path,
                              follows["acknowledged"])
        self._start_chain(follows)

    def _missing_predecessor(self) -> dict[str, Any] | None:
        """What a remaining head says of a log that is gone (None when no head remains)."""
        for head in reversed(self.heads):
            with contextlib.suppress(OSError):
                named = newest_head(head, None)  # a gap is named whoever wrote its head
                if named is not None:
                    return {"reason": "the log was missing or empty at start",
                            "file": self.path.name, "records": named[0] + 1, "last": named[1]}
        return None

    def _start_chain(self, follows: dict[str, Any] | None) -> None:
        """Open (or create) the log at the path and write its chain-start record; on failure
        the chain it follows stays the current one, to be followed on the next write."""
        fd = _open_log(self.path, create=True)
        before = self._seq, self._prev
        self._fd, self._seq, self._prev = fd, 0, GENESIS
        try:
            self._append({"endpoint": "chain-start", "format": KEYED_FORMAT,
                          "key_id": key_id(self.key), "follows": follows})
        except OSError:
            os.close(fd)
            self._fd, (self._seq, self._prev) = -1, before
            self._gap = follows
            raise
        self._gap = None

    def _follow_the_path(self) -> None:
        """If the log was removed or rotated away, start a new chain at the path naming the
        old one; a non-empty foreign file there is refused."""
        try:
            there: os.stat_result | None = os.lstat(self.path)  # a link is never the log
        except FileNotFoundError:
            there = None
        if self._fd >= 0:
            own = os.fstat(self._fd)
            if there is not None and (there.st_dev, there.st_ino) == (own.st_dev, own.st_ino):
                return
            checkpoints.error("audit log %s was removed or replaced while serving: a new chain"
                              " starts and records the gap", self.path)
            self._gap = {"reason": "removed or replaced while serving",
                         "file": self.path.name, "records": self._seq, "last": self._prev}
            os.close(self._fd)
            self._fd = -1
        if there is not None and there.st_size:
            raise OSError(errno.EEXIST, "replaced by another file while serving; restart the"
                          " server to verify it", str(self.path))
        self._start_chain(self._gap)


def _open_log(path: Path, *, create: bool) -> int:
    """The log opened for appending, never through a symbolic link (``O_NOFOLLOW``), and only
    if it is a regular file no one else may read or change (else an OSError naming it)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | (os.O_CREAT if create else 0), file_mode())
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused(errno.ELOOP, "a symbolic link in the audit log's place;"
                              " refused", str(path)) from None
        raise
    info = os.fstat(fd)
    loose = stat.S_IMODE(info.st_mode) & ~file_mode()
    if not stat.S_ISREG(info.st_mode) or loose:
        os.close(fd)
        raise FileRefused(errno.EPERM, "not a regular file private to its owner (mode"
                          f" {stat.S_IMODE(info.st_mode):o}); the audit log is refused:"
                          " chmod 600 it", str(path))
    return fd


def _os_user() -> str:
    """Who ran the command that acknowledged a gap or imported a log (the OS account)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"


def import_plain(path: Path, key_path: Path | None = None) -> AuditLog:
    """Import a plain (first-format) log at ``path``: verify its chain, keep it under a dated
    name and start a keyed chain whose first record names it and who imported it (the keyed
    chain's verification then checks the kept file against that record). Refused when the
    server wrote a keyed chain at ``path`` before: a plain log there replaced it."""
    key_path = key_path or default_key_path()
    if not path.exists() or not path.stat().st_size:
        raise ClinsearchError(f"{path}: no audit log to import")
    if is_keyed(path):
        raise ClinsearchError(f"{path}: already a keyed audit log; nothing to import")
    result = verify_audit(path, None, private_head_path(key_path, path))
    if not result.ok:
        raise ClinsearchError(f"{path}: not imported: {result.problems[0]}")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = path.with_name(f"{path.name}.plain-{stamp}")
    os.link(path, kept)  # fails rather than overwrite
    if head_path(path).exists():
        os.replace(head_path(path), head_path(kept))
    os.unlink(path)
    checkpoints.warning("audit log %s was a plain SHA-256 chain: imported, kept as %s, a keyed"
                        " chain starts after it", path, kept.name)
    return AuditLog(path, key_path, follows={
        "reason": IMPORTED, "file": kept.name, "records": result.records,
        "last": result.last_hash, "by": _os_user()})


def _open_head(head: Path) -> int:
    """A head file opened for rewriting its slots, never through a symbolic link."""
    return os.open(head, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)


def _write_durably(path: Path, data: bytes) -> None:
    """Write a new private file and sync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, file_mode())
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except OSError:
        path.unlink(missing_ok=True)
        raise


def _remove_stale_temporaries(head: Path) -> None:
    """Temporaries of ``head`` a killed server left (only this log's heads write them)."""
    for stale in head.parent.glob(f".{head.name}.*.tmp"):
        stale.unlink(missing_ok=True)


def verify_log(path: Path, key_path: Path | None = None,
               anchors: dict[int, str] | None = None) -> Verification:
    """``verify_audit`` with the key and private head of ``key_path`` (default: the server's).
    A plain chain never passes (without a key anyone can recompute it); a keyed chain that
    imported one also checks the kept plain file against its first record."""
    key_path = key_path or default_key_path()
    keyed = path.exists() and path.stat().st_size > 0 and is_keyed(path)
    key = load_key(key_path, create=False) if keyed else None
    result = verify_audit(path, key, private_head_path(key_path, path), anchors)
    if not keyed and result.records:
        result.problems.append(
            f"{path}: a plain SHA-256 chain: without a key anyone can recompute it, so it"
            " proves nothing; import it ('clinsearch audit import') and verify the keyed chain"
            " that names it")
    elif result.follows and result.follows.get("reason") == IMPORTED:
        _check_imported(path.with_name(str(result.follows.get("file"))), result)
    return result


def _check_imported(kept: Path, result: Verification) -> None:
    """The plain log a keyed chain imported must still be the one its first record names."""
    follows = result.follows or {}
    if not kept.exists():
        result.problems.append(f"{kept}: the imported plain log the chain names is missing")
        return
    plain = verify_audit(kept)
    if not plain.ok or (plain.records, plain.last_hash) != (follows.get("records"),
                                                           follows.get("last")):
        result.problems.append(f"{kept}: the imported plain log is not the one the keyed chain"
                               " recorded at import (edited, cut or replaced since)")
