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

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
    app.add_middleware(HeadersAndFailures)  # added last: outermost, so on every answer
    return app


class HeadersAndFailures:
    """Security headers on every answer; an exception no handler took before the answer
    started is answered by ``error_bodies.failure`` and the connection is kept. A plain ASGI
    middleware: Starlette's ``@app.middleware("http")`` ran each request through a task and
    streams of its own, in the event loop's thread that every request shares."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                MutableHeaders(scope=message).update(SECURITY_HEADERS)
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:
            if started:  # part of an answer went out: nothing else can be said on it
                raise
            await error_bodies.failure(scope["path"], exc)(scope, receive, send_with_headers)
