"""Users and roles, managed by admins (a new token is in the answer that creates it only)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from clinsearch.server.deps import AdminAudit, AdminUsers, State

router = APIRouter(prefix="/api/users")


class NewUser(BaseModel):
    """A user to create."""

    name: str
    role: str


@router.get("", summary="Users and roles (admin)")
def list_users(store: AdminUsers) -> dict[str, Any]:
    """Every user's name, role and creation time (tokens are never stored)."""
    return {"users": [{"name": u.name, "role": u.role, "created": u.created}
                      for u in store.users.values()]}


@router.post("", summary="Add a user; the token is in this response only (admin)")
def add_user(body: NewUser, store: AdminUsers, audit: AdminAudit,
             state: State) -> dict[str, Any]:
    """Add a user with a role and answer its new token."""
    token = store.add(body.name, body.role)
    audit.record("users/add", {"name": body.name, "role": body.role}, {},
                 state.live.snapshot.generation)
    return {"name": body.name, "role": body.role, "token": token}


@router.delete("/{name}", summary="Remove a user (admin)")
def remove_user(name: str, store: AdminUsers, audit: AdminAudit,
                state: State) -> dict[str, Any]:
    """Remove a user; its token stops working at once."""
    store.remove(name)
    audit.record("users/remove", {"name": name}, {}, state.live.snapshot.generation)
    return {"removed": name}
