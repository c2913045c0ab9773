"""The dependencies routes declare, each defined once: the shared state, the caller (token),
the stated purpose, the text-seeing and admin roles, and the audit record of an access."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Header, HTTPException, Request

from clinsearch.errors import ClinsearchError
from clinsearch.server.auth import User, UserStore
from clinsearch.server.state import ServerState

LOCAL_USER = User("local", "admin", "", "")


def server_state(request: Request) -> ServerState:
    """The state ``create_app`` made for this app."""
    return request.app.state.clinsearch  # type: ignore[no-any-return]


State = Annotated[ServerState, Depends(server_state)]


def principal(state: State, authorization: Annotated[str | None, Header()] = None) -> User:
    """The caller, from ``Authorization: Bearer TOKEN`` (LOCAL_USER without auth)."""
    if state.users is None:
        return LOCAL_USER
    state.reload_users()
    token = (authorization or "").removeprefix("Bearer ").strip()
    user = state.users.authenticate(token) if token else None
    if user is None:
        raise HTTPException(401, "a valid API token is required (Authorization: Bearer TOKEN;"
                            " 'clinsearch users add' issues one)",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


Caller = Annotated[User, Depends(principal)]


def purpose(x_purpose: Annotated[str | None, Header()] = None) -> str:
    """The purpose the caller states for this access (the page asks once per session)."""
    stated = urllib.parse.unquote(x_purpose or "").strip()  # the page percent-encodes it
    if not stated:
        raise HTTPException(400, "state the purpose of this access in the X-Purpose header")
    return stated[:500]


Purpose = Annotated[str, Depends(purpose)]


def text_reader(user: Caller) -> User:
    """The caller, if its role sees report text (403 for counts-only roles)."""
    if not user.sees_text:
        raise HTTPException(403, f"role {user.role!r} sees counts only")
    return user


TextReader = Annotated[User, Depends(text_reader)]


def admin_users(user: Caller, state: State) -> UserStore:
    """The users file, if the caller is an admin of a server with authentication."""
    if user.role != "admin":
        raise HTTPException(403, "only an admin manages users")
    if state.users is None:
        raise ClinsearchError("this server runs without authentication (--no-auth): no users")
    return state.users


AdminUsers = Annotated[UserStore, Depends(admin_users)]


@dataclass(frozen=True)
class Auditor:
    """Writes the audit record of one request: who, in which role, for what purpose."""

    state: ServerState
    user: User
    purpose: str

    def record(self, endpoint: str, params: dict[str, Any], counts: dict[str, int],
               generation: str) -> None:
        """Append the record (the request fails if the disk refuses it)."""
        self.state.audit.write(user=self.user.name, role=self.user.role, purpose=self.purpose,
                               endpoint=endpoint, params=params, counts=counts,
                               generation=generation)


def data_auditor(state: State, user: Caller, why: Purpose) -> Auditor:
    """The auditor of a data access (a purpose must be stated)."""
    return Auditor(state, user, why)


def admin_auditor(state: State, user: Caller) -> Auditor:
    """The auditor of user management."""
    return Auditor(state, user, "user management")


Audit = Annotated[Auditor, Depends(data_auditor)]
AdminAudit = Annotated[Auditor, Depends(admin_auditor)]
