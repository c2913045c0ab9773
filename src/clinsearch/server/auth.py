"""API users: a name, a role and the SHA-256 of a random 256-bit token (never the token).

Tokens are 43 URL-safe characters from ``secrets``; with 256 random bits a plain SHA-256 is a
safe verifier (no password stretching is needed for a secret that cannot be guessed).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from clinsearch.atomic import atomic_path
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.permissions import dir_mode

ROLES = ("viewer", "researcher", "admin")
USERS_FORMAT = "clinsearch-users/1"
USERS_ENV = "CLINSEARCH_USERS"
_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True, slots=True)
class User:
    """An API user; ``token_sha256`` verifies the token, which is shown once and not kept."""

    name: str
    role: str
    token_sha256: str
    created: str

    @property
    def sees_text(self) -> bool:
        """Researchers and admins see report text, ids and exports; viewers see counts only."""
        return self.role in ("researcher", "admin")


def default_users_path() -> Path:
    """``$CLINSEARCH_USERS``, else ``~/.config/clinsearch/users.json``."""
    if env := os.environ.get(USERS_ENV):
        return Path(env)
    return Path.home() / ".config" / "clinsearch" / "users.json"


def token_hash(token: str) -> str:
    """The SHA-256 hex digest of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class UserStore:
    """The users file (JSON, private to its owner), read on open and rewritten atomically."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.mtime = self.path.stat().st_mtime_ns if self.path.exists() else 0  # as read
        self.users: dict[str, User] = self._read() if self.path.exists() else {}
        self._by_hash = {u.token_sha256: u for u in self.users.values()}

    def add(self, name: str, role: str) -> str:
        """Add user ``name`` with ``role``; returns the new token (shown once, not stored)."""
        if not _NAME.match(name):
            raise ClinsearchError(
                f"user name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-'"
            )
        if role not in ROLES:
            raise ClinsearchError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
        if name in self.users:
            raise ClinsearchError(f"user {name!r} exists; remove it first to issue a new token")
        token = secrets.token_urlsafe(32)
        created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        self.users[name] = User(name, role, token_hash(token), created)
        self._write()
        return token

    def remove(self, name: str) -> None:
        """Remove user ``name`` (its token stops working when the server rereads the file)."""
        if name not in self.users:
            raise ClinsearchError(f"no user {name!r} in {self.path}")
        del self.users[name]
        self._write()

    def authenticate(self, token: str) -> User | None:
        """The user holding ``token``, or None."""
        return self._by_hash.get(token_hash(token))

    def _read(self) -> dict[str, User]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot read users file ({exc})", file=self.path) from None
        if not isinstance(data, dict) or data.get("format") != USERS_FORMAT:
            raise InputError(f"not a {USERS_FORMAT} file", file=self.path, field="format")
        users = {}
        for number, item in enumerate(data.get("users", []), start=1):
            try:
                user = User(**item)
            except TypeError:
                raise InputError(f"user entry {number} is malformed", file=self.path,
                                 field="users") from None
            if user.role not in ROLES:
                raise InputError(f"user {user.name!r}: unknown role {user.role!r}",
                                 file=self.path, field="role")
            users[user.name] = user
        return users

    def _write(self) -> None:
        data = {"format": USERS_FORMAT, "users": [asdict(u) for u in self.users.values()]}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=dir_mode())
        with atomic_path(self.path, durable=True) as tmp:  # mkstemp: private to its owner
            tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        self._by_hash = {u.token_sha256: u for u in self.users.values()}
