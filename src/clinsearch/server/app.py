"""The FastAPI app: the REST API and the web page over one live index, with tokens and audit.

Each resource is a router in ``server/routes/`` (a thin call into the Python API: ``Index.search``,
``Index.report``, ``Cohort``, ``explain_query``, ``Annotator``); the dependencies they share
(state, caller, purpose, audit) are declared once in ``server/deps.py``. ``RequestGuard`` checks
the Host, sizes and token before any route reads the request; ``error_bodies`` says what an
error answer may show. The interactive API pages (/docs, /redoc) are off: they load their
scripts from a CDN, which the page's policy forbids; the schema is at /openapi.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

import clinsearch
from clinsearch.errors import ClinsearchError
from clinsearch.server import error_bodies
from clinsearch.server.audit import AuditLog
from clinsearch.server.auth import UserStore
from clinsearch.server.guard import RequestGuard
from clinsearch.server.live import LiveIndex
from clinsearch.server.routes import ROUTERS
from clinsearch.server.routes.page import STATIC
from clinsearch.server.state import ServerConfig, ServerState
from clinsearch.server.workbench_store import WORKBENCH_FILE, WorkbenchStore

# Every answer: the page may load nothing from elsewhere, and answers holding PHI are not cached.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def create_app(index_path: str | Path, users: UserStore | None, audit: AuditLog,
               live: LiveIndex | None = None, config: ServerConfig | None = None,
               workbench: WorkbenchStore | None = None) -> FastAPI:
    """The app over the index at ``index_path``; ``users`` None means no authentication;
    ``workbench`` defaults to ``WORKBENCH_FILE`` beside the audit log."""
    app = FastAPI(title="clinsearch", version=clinsearch.__version__, docs_url=None,
                  redoc_url=None,
                  description="Negation-aware search over clinical reports: search, cohorts,"
                  " report views (audited), query explanation and annotation.")
    workbench = workbench or WorkbenchStore(audit.path.parent / WORKBENCH_FILE)
    state = ServerState(live or LiveIndex(index_path), users, audit, workbench,
                        config or ServerConfig())
    app.state.clinsearch = state
    state.audit_index.prepare()
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    for router in ROUTERS:
        app.include_router(router)
    app.add_exception_handler(ClinsearchError, error_bodies.user_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, error_bodies.http_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError,
                              error_bodies.invalid_request)  # type: ignore[arg-type]
    app.add_middleware(RequestGuard, state=state)
    app.middleware("http")(_headers_and_failures)  # added last: outermost, so on every answer
    return app


async def _headers_and_failures(request: Request, call_next: Any) -> Any:
    """Security headers on every answer; an exception no handler took is answered by
    ``error_bodies.failure`` and the connection is kept."""
    try:
        response = await call_next(request)
    except Exception as exc:
        response = error_bodies.failure(request.url.path, exc)
    response.headers.update(SECURITY_HEADERS)
    return response
