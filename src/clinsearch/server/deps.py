"""The dependencies routes declare, each defined once: the shared state, the caller (token),
the stated purpose, the text-seeing and admin roles, and the audit record of an access.

Each is ``async``: none does I/O, and FastAPI runs a plain ``def`` dependency in its thread
pool, a hop to another thread and back (and a wait for the interpreter lock) per dependency
per request."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, HTTPException, Request

from clinsearch.errors import ClinsearchError
from clinsearch.server.auth import User, UserStore
from clinsearch.server.state import ServerState

LOCAL_USER = User("local", "admin", "", "")


async def server_state(request: Request) -> ServerState:
    """The state ``create_app`` made for this app."""
    return request.app.state.clinsearch  # type: ignore[no-any-return]


State = Annotated[ServerState, Depends(server_state)]


async def principal(request: Request, state: State) -> User:
    """The caller ``RequestGuard`` authenticated from its token before the body was read
    (LOCAL_USER without auth)."""
    if state.users is None:
        return LOCAL_USER
    user: User | None = getattr(request.state, "user", None)
    if user is None:  # the guard answers 401 first; this holds if a route moves out of /api
        raise HTTPException(401, "a valid API token is required",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


Caller = Annotated[User, Depends(principal)]


async def purpose(x_purpose: Annotated[str | None, Header()] = None) -> str:
    """The purpose the caller states for this access (the page asks once per session):
    printable text, percent-encoded by the page."""
    stated = urllib.parse.unquote(x_purpose or "").strip()
    if not stated:
        raise HTTPException(400, "state the purpose of this access in the X-Purpose header")
    if not stated.isprintable():
        raise HTTPException(400, "the X-Purpose header holds control characters; state the"
                            " purpose as printable text")
    return stated[:500]


Purpose = Annotated[str, Depends(purpose)]


async def text_reader(user: Caller) -> User:
    """The caller, if its role sees report text (403 for counts-only roles)."""
    if not user.sees_text:
        raise HTTPException(403, f"role {user.role!r} sees counts only")
    return user


TextReader = Annotated[User, Depends(text_reader)]


async def admin_users(user: Caller, state: State) -> UserStore:
    """The users file, if the caller is an admin of a server with authentication."""
    if user.role != "admin":
        raise HTTPException(403, "only an admin manages users")
    if state.users is None:
        raise ClinsearchError("this server runs without authentication (--no-auth): no users")
    return state.users


AdminUsers = Annotated[UserStore, Depends(admin_users)]


@dataclass(frozen=True)
class Auditor:
    """Writes the audit record of one request: who, from which address, in which role, for
    what purpose, and which reports (or patients, visits) were disclosed."""

    state: ServerState
    user: User
    purpose: str
    client: str

    def record(self, endpoint: str, params: dict[str, Any], counts: dict[str, Any],
               generation: str, disclosed: dict[str, list[str]] | None = None) -> None:
        """Append the record (the request fails if the disk refuses it); ``disclosed`` maps
        a kind of id (reports, patients, visits) to the ids the answer shows."""
        audit = self.state.audit
        shown = {kind: audit.disclosed(sorted(set(ids)))
                 for kind, ids in (disclosed or {}).items() if ids}
        audit.write(user=self.user.name, role=self.user.role, purpose=self.purpose,
                    client=self.client, endpoint=endpoint, params=params, counts=counts,
                    disclosed=shown, generation=generation)


def _client(request: Request) -> str:
    """The caller's address and port as the server saw them."""
    return f"{request.client.host}:{request.client.port}" if request.client else "unknown"


async def data_auditor(request: Request, state: State, user: Caller, why: Purpose) -> Auditor:
    """The auditor of a data access (a purpose must be stated)."""
    return Auditor(state, user, why, _client(request))


def auditor_for(why: str) -> Any:
    """A dependency: the auditor of an admin's task ``why`` (no purpose header asked)."""

    async def auditor(request: Request, state: State, user: Caller) -> Auditor:
        return Auditor(state, user, why, _client(request))

    return auditor


Audit = Annotated[Auditor, Depends(data_auditor)]
AdminAudit = Annotated[Auditor, Depends(auditor_for("user management"))]
