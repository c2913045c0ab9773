"""The audit trail for admins: records filtered by user, purpose, endpoint and date, and the
verification of the keyed chain (``verify_log``, with the server's key), from the page."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from clinsearch.server.audit import verify_log
from clinsearch.server.auth import User
from clinsearch.server.deps import Caller, State

MAX_PAGE = 500
router = APIRouter(prefix="/api/audit")


def admin(user: Caller) -> User:
    """The caller, if an admin."""
    if user.role != "admin":
        raise HTTPException(403, "only an admin reads the audit trail")
    return user


Admin = Annotated[User, Depends(admin)]


@router.get("", summary="Audit records, newest first, filtered (admin)")
def records(user: Admin, state: State, name: Annotated[str, Query(alias="user")] = "",
            purpose: str = "", endpoint: str = "", date_from: str = "", date_to: str = "",
            offset: Annotated[int, Query(ge=0)] = 0,
            limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50) -> dict[str, Any]:
    """``user`` and ``endpoint`` match exactly, ``purpose`` as a case-insensitive part, dates
    (YYYY-MM-DD, inclusive) against the record's UTC time."""
    wanted = purpose.lower()
    kept = []
    with state.audit.path.open("rb") as log:
        for line in log:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # the verification names it
            day = str(record.get("time", ""))[:10]
            if ((name and record.get("user") != name)
                    or (endpoint and record.get("endpoint") != endpoint)
                    or (wanted and wanted not in str(record.get("purpose", "")).lower())
                    or (date_from and day < date_from) or (date_to and day > date_to)):
                continue
            kept.append(record)
    kept.reverse()
    return {"total": len(kept), "offset": offset, "records": kept[offset : offset + limit]}


@router.get("/verify", summary="Check the audit trail's hash chain (admin)")
def verify(user: Admin, state: State) -> dict[str, Any]:
    """Intact or not, with every problem found."""
    result = verify_log(state.audit.path, state.audit.key_path)
    return {"ok": result.ok, "records": result.records, "problems": result.problems}
