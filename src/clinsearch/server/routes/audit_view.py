"""The audit trail for admins: records filtered by user, purpose, endpoint and date, paged
through ``AuditIndex`` (offsets, not a read of the whole log), and the verification of the
keyed chain (``verify_log``, with the server's key), from the page. Reading records is itself
audited: which records were shown."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from clinsearch.server.audit import verify_log
from clinsearch.server.audit_index import AuditFilter
from clinsearch.server.auth import User
from clinsearch.server.deps import Auditor, Caller, State, auditor_for

MAX_PAGE = 500
router = APIRouter(prefix="/api/audit")


async def admin(user: Caller) -> User:
    """The caller, if an admin."""
    if user.role != "admin":
        raise HTTPException(403, "only an admin reads the audit trail")
    return user


Admin = Annotated[User, Depends(admin)]


@router.get("", summary="Audit records, newest first, filtered (admin)")
def records(user: Admin, state: State, audit: Annotated[Auditor, Depends(auditor_for(
            "audit review"))], name: Annotated[str, Query(alias="user")] = "",
            purpose: str = "", endpoint: str = "", date_from: str = "", date_to: str = "",
            offset: Annotated[int, Query(ge=0)] = 0,
            limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50) -> dict[str, Any]:
    """``user`` and ``endpoint`` match exactly, ``purpose`` as a case-insensitive part, dates
    (YYYY-MM-DD, inclusive) against the record's UTC time."""
    wanted = AuditFilter(name, endpoint, purpose, date_from, date_to)
    total, shown = state.audit_index.page(wanted, offset, limit)
    params = {"user": name, "purpose": purpose, "endpoint": endpoint, "date_from": date_from,
              "date_to": date_to, "offset": offset, "limit": limit}
    audit.record("audit/records", {k: v for k, v in params.items() if v}, {
        "total": total, "returned": len(shown)}, state.live.snapshot.generation,
        {"audit records": [str(r.get("seq")) for r in shown]} if shown else None)
    return {"total": total, "offset": offset, "records": shown}


@router.get("/verify", summary="Check the audit trail's hash chain (admin)")
def verify(user: Admin, state: State) -> dict[str, Any]:
    """Intact or not, with every problem found."""
    result = verify_log(state.audit.path, state.audit.key_path)
    return {"ok": result.ok, "records": result.records, "problems": result.problems}
