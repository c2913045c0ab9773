"""API users: a name, a role, the SHA-256 of a random 256-bit token (never the token), when
the token expires and when it was revoked.

Tokens are 43 URL-safe characters from ``secrets``; with 256 random bits a plain SHA-256 is a
safe verifier (no password stretching is needed for a secret that cannot be guessed). A token
expires after ``DEFAULT_TOKEN_DAYS`` unless another lifetime is given; a revoked user stays
listed (for the audit trail) but its token stops working. Entries written before expiry
existed have none. The file is refused when group or others may write it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import stat
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from clinsearch.atomic import atomic_path
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.permissions import dir_mode

ROLES = ("viewer", "researcher", "admin")
USERS_FORMAT = "clinsearch-users/1"
USERS_ENV = "CLINSEARCH_USERS"
DEFAULT_TOKEN_DAYS = 90
MAX_TOKEN_DAYS = 3650
_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")


@dataclass(frozen=True, slots=True)
class User:
    """An API user; ``token_sha256`` verifies the token, which is shown once and not kept."""

    name: str
    role: str
    token_sha256: str
    created: str
    expires: str = ""  # UTC, as ``created``; "" never (entries from before expiry existed)
    revoked: str = ""

    def valid_at(self, now: str) -> bool:
        """Whether the token works at ``now`` (UTC, as ``created``): not revoked, not expired."""
        return not self.revoked and (not self.expires or now < self.expires)

    @property
    def sees_text(self) -> bool:
        """Researchers and admins see report text, ids and exports; viewers see counts only."""
        return self.role in ("researcher", "admin")


def default_users_path() -> Path:
    """``$CLINSEARCH_USERS``, else ``~/.config/clinsearch/users.json``."""
    if env := os.environ.get(USERS_ENV):
        return Path(env)
    return Path.home() / ".config" / "clinsearch" / "users.json"


def utc_stamp(moment: datetime | None = None) -> str:
    """``moment`` (default now) in UTC, to the second, as users files write times."""
    moment = moment or datetime.now(UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


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

    def add(self, name: str, role: str, days: int = DEFAULT_TOKEN_DAYS) -> str:
        """Add user ``name`` with ``role`` and a token valid for ``days``; returns the token
        (shown once, not stored)."""
        if not 1 <= days <= MAX_TOKEN_DAYS:
            raise ClinsearchError(f"a token lives 1 to {MAX_TOKEN_DAYS} days (got {days})")
        if not _NAME.match(name):
            raise ClinsearchError(
                f"user name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-'"
            )
        if role not in ROLES:
            raise ClinsearchError(f"unknown role {role!r}; choose one of {', '.join(ROLES)}")
        if name in self.users:
            raise ClinsearchError(f"user {name!r} exists; remove it first to issue a new token")
        token = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        self.users[name] = User(name, role, token_hash(token), utc_stamp(now),
                                utc_stamp(now + timedelta(days=days)))
        self._write()
        return token

    def revoke(self, name: str) -> None:
        """Stop ``name``'s token now; the user stays listed with the time of revocation."""
        if name not in self.users:
            raise ClinsearchError(f"no user {name!r} in {self.path}")
        if not self.users[name].revoked:
            self.users[name] = replace(self.users[name], revoked=utc_stamp())
            self._write()

    def remove(self, name: str) -> None:
        """Remove user ``name`` (its token stops working when the server rereads the file)."""
        if name not in self.users:
            raise ClinsearchError(f"no user {name!r} in {self.path}")
        del self.users[name]
        self._write()

    def authenticate(self, token: str) -> User | None:
        """The user holding ``token`` if it is neither expired nor revoked, else None."""
        user = self._by_hash.get(token_hash(token))
        return user if user is not None and user.valid_at(utc_stamp()) else None

    def _read(self) -> dict[str, User]:
        try:
            mode = stat.S_IMODE(self.path.stat().st_mode)
        except OSError as exc:
            raise InputError(f"cannot read users file ({exc.strerror})", file=self.path) from None
        if mode & 0o022:
            raise InputError(f"others may change the users file (mode {mode:o}): anyone who"
                             " can write it can grant themselves a token; chmod 600 it",
                             file=self.path)
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
