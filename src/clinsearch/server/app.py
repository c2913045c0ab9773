"""The FastAPI app: the REST API and the web page over one live index, with tokens and audit.

Each resource is a router in ``server/routes/`` (a thin call into the Python API: ``Index.search``,
``Index.report``, ``Cohort``, ``explain_query``, ``Annotator``); the dependencies they share
(state, caller, purpose, audit) are declared once in ``server/deps.py``. User errors become
HTTP 400 with the CLI's message; failures of the server's system (disk full, read-only file
system, a broken index) 503 with the CLI's one line; report text never reaches the log.
"""

from __future__ import annotations

import logging
import traceback
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles

import clinsearch
from clinsearch.errors import ClinsearchError
from clinsearch.search.cohort import CohortSyntaxError
from clinsearch.server.audit import AuditLog
from clinsearch.server.auth import UserStore
from clinsearch.server.live import LiveIndex
from clinsearch.server.routes import ROUTERS
from clinsearch.server.routes.page import STATIC
from clinsearch.server.state import ServerState
from clinsearch.server.workbench_store import WORKBENCH_FILE, WorkbenchStore
from clinsearch.terminal import printable
from clinsearch.user_files import describe_failure

log = logging.getLogger("clinsearch.server")
# Every answer: the page may load nothing from elsewhere, and answers holding PHI are not cached.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def create_app(index_path: str | Path, users: UserStore | None, audit: AuditLog,
               live: LiveIndex | None = None, workbench: WorkbenchStore | None = None
               ) -> FastAPI:
    """The app over the index at ``index_path``; ``users`` None means no authentication;
    ``workbench`` defaults to ``WORKBENCH_FILE`` beside the audit log."""
    app = FastAPI(title="clinsearch", version=clinsearch.__version__,
                  description="Negation-aware search over clinical reports: search, cohorts,"
                  " report views (audited), query explanation and annotation.")
    workbench = workbench or WorkbenchStore(audit.path.parent / WORKBENCH_FILE)
    app.state.clinsearch = ServerState(live or LiveIndex(index_path), users, audit, workbench)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    for router in ROUTERS:
        app.include_router(router)
    app.add_exception_handler(ClinsearchError, _user_error)  # type: ignore[arg-type]
    app.middleware("http")(_headers_and_failures)
    return app


async def _user_error(request: Request, exc: ClinsearchError) -> JSONResponse:
    """A user error: 400 with the CLI's message (and the column of a cohort syntax error)."""
    body: dict[str, Any] = {"detail": str(exc)}
    if isinstance(exc, CohortSyntaxError):
        body |= {"column": exc.position + 1, "message": exc.message}
    return JSONResponse(body, status_code=400)


async def _headers_and_failures(request: Request, call_next: Any) -> Any:
    """Security headers on every answer; an exception no handler took is answered by
    ``_failure`` and the connection is kept."""
    try:
        response = await call_next(request)
    except Exception as exc:
        response = _failure(request.url.path, exc)
    response.headers.update(SECURITY_HEADERS)
    return response


def _failure(path: str, exc: Exception) -> JSONResponse:
    """The answer to an exception no handler took: 503 with the CLI's one line for a failure
    of the system (``describe_failure``: a path and a reason, never report text), else 500 for
    a bug, logged by type and code location only (its message may quote report text)."""
    message = describe_failure(exc)
    if message is not None:
        line = printable(message, one_line=True)
        log.error("cannot serve %s: %s", path, line)
        return JSONResponse({"detail": line}, status_code=503)
    where = traceback.extract_tb(exc.__traceback__)[-1]
    log.error("internal error on %s: %s at %s:%d", path, type(exc).__name__, where.filename,
              where.lineno)
    return JSONResponse({"detail": "internal server error"}, status_code=500)
