"""The audit key: 32 random bytes that key the audit chain's HMACs, kept apart from the log.

Someone who can write the log but not the server's private configuration folder cannot forge
a record, recompute the chain after an edit, or write a head for a log cut short. The key is
created on first use (0600, in a 0700 folder) and refused when others may read or write it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from pathlib import Path

from clinsearch.errors import ClinsearchError
from clinsearch.trust import config_dir

KEY_ENV = "CLINSEARCH_AUDIT_KEY"


def default_key_path() -> Path:
    """``$CLINSEARCH_AUDIT_KEY``, else ``audit.key`` in clinsearch's configuration folder."""
    if configured := os.environ.get(KEY_ENV):
        return Path(configured)
    return config_dir() / "audit.key"


def key_id(key: bytes) -> str:
    """A short public name of ``key`` (its SHA-256 prefix), recorded at each chain's start."""
    return hashlib.sha256(b"clinsearch-audit-key-id\0" + key).hexdigest()[:16]


def load_key(path: Path, *, create: bool) -> bytes:
    """The key at ``path`` (created when missing and ``create``); an error if others may read
    or change it, or if it is not 64 hex digits."""
    if not path.exists():
        if not create:
            raise ClinsearchError(f"{path}: no audit key (the server that wrote the log made"
                                  " it; pass --audit-key)")
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as out:
            out.write(secrets.token_hex(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
    info = path.stat()
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ClinsearchError(f"{path}: the audit key may be read or changed by others (mode"
                              f" {stat.S_IMODE(info.st_mode):o}); chmod 600 it")
    text = path.read_text(encoding="ascii", errors="replace").strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise ClinsearchError(f"{path}: not an audit key (expected 64 hex digits)")
    return key


def check_apart(key_path: Path, log_path: Path) -> None:
    """Refuse a key in the log's own folder: whoever can write the log could then read it."""
    if key_path.resolve().parent == log_path.resolve().parent:
        raise ClinsearchError(f"{key_path}: keep the audit key apart from the log's folder"
                              " (e.g. in ~/.config/clinsearch, the default)")
