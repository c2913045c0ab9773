"""Users and roles, managed by admins (a new token is in the answer that creates it only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from clinsearch.server.auth import DEFAULT_TOKEN_DAYS
from clinsearch.server.bodies import RequestBody
from clinsearch.server.deps import AdminAudit, AdminUsers, State

router = APIRouter(prefix="/api/users")


class NewUser(RequestBody):
    """A user to create."""

    name: str
    role: str
    days: int = DEFAULT_TOKEN_DAYS


@router.get("", summary="Users and roles (admin)")
def list_users(store: AdminUsers) -> dict[str, Any]:
    """Every user's name, role, creation, expiry and revocation times (tokens are never
    stored)."""
    return {"users": [{"name": u.name, "role": u.role, "created": u.created,
                       "expires": u.expires, "revoked": u.revoked}
                      for u in store.users.values()]}


@router.post("", summary="Add a user; the token is in this response only (admin)")
def add_user(body: NewUser, store: AdminUsers, audit: AdminAudit,
             state: State) -> dict[str, Any]:
    """Add a user with a role and answer its new token."""
    token = store.add(body.name, body.role, body.days)
    audit.record("users/add", {"name": body.name, "role": body.role, "days": body.days}, {},
                 state.live.snapshot.generation)
    return {"name": body.name, "role": body.role, "token": token,
            "expires": store.users[body.name].expires}


@router.post("/{name}/revoke", summary="Revoke a user's token, keeping the user listed (admin)")
def revoke_user(name: str, store: AdminUsers, audit: AdminAudit,
                state: State) -> dict[str, Any]:
    """Stop a user's token at once; the user and the time of revocation stay listed."""
    store.revoke(name)
    audit.record("users/revoke", {"name": name}, {}, state.live.snapshot.generation)
    return {"revoked": name, "at": store.users[name].revoked}


@router.delete("/{name}", summary="Remove a user (admin)")
def remove_user(name: str, store: AdminUsers, audit: AdminAudit,
                state: State) -> dict[str, Any]:
    """Remove a user; its token stops working at once."""
    store.remove(name)
    audit.record("users/remove", {"name": name}, {}, state.live.snapshot.generation)
    return {"removed": name}
