"""The FastAPI app: the REST API and the web page over one live index, with tokens and audit.

Every route is a thin call into the Python API (``Index.search``, ``Index.report``, ``Cohort``,
``explain_query``, ``Annotator``); records go out in their ``to_dict`` shapes. User errors
become HTTP 400 with the CLI's message; failures of the server's system (disk full, read-only
file system, a broken index) 503 with the CLI's one line; report text never reaches the log.
"""

from __future__ import annotations

import csv
import io
import logging
import threading
import traceback
import urllib.parse
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

import clinsearch
from clinsearch.annotate.finding import Finding
from clinsearch.errors import ClinsearchError
from clinsearch.hit import Hit
from clinsearch.search.cohort import ID_COLUMNS, CohortSyntaxError, members_csv_rows
from clinsearch.search.filters import ReportFilters
from clinsearch.search.polarity import polarity_options
from clinsearch.search.registry import parse_method
from clinsearch.server.audit import AuditLog
from clinsearch.server.auth import User, UserStore
from clinsearch.server.live import LiveIndex, Snapshot
from clinsearch.terminal import printable
from clinsearch.units import LEVELS, check_level
from clinsearch.user_files import describe_failure

log = logging.getLogger("clinsearch.server")
MAX_TOP = 100
RESULT_CAP = 200  # hits one query pages through at most: ``total`` is exact below it
FIRST_DEPTH = 50  # hits computed for the first pages (deeper pages compute RESULT_CAP)
MAX_MEMBERS_PAGE = 500
HITS_CACHE = 256  # queries whose hits are kept for paging
LOCAL_USER = User("local", "admin", "", "")
# Every answer: the page may load nothing from elsewhere, and answers holding PHI are not cached.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass
class ServerState:
    """What the routes share: the live index, the users (None: no auth) and the audit log."""

    live: LiveIndex
    users: UserStore | None
    audit: AuditLog
    hits_cache: OrderedDict[tuple[Any, ...], list[Hit]] = field(default_factory=OrderedDict)
    cache_lock: threading.Lock = field(default_factory=threading.Lock)

    def cached_hits(self, key: tuple[Any, ...]) -> list[Hit] | None:
        """The hits computed for ``key`` (generation, query, method, level, options), if kept."""
        with self.cache_lock:
            return self.hits_cache.get(key)

    def cache_hits(self, key: tuple[Any, ...], hits: list[Hit]) -> None:
        """Keep ``hits`` for paging (the last HITS_CACHE queries)."""
        with self.cache_lock:
            self.hits_cache[key] = hits
            while len(self.hits_cache) > HITS_CACHE:
                self.hits_cache.popitem(last=False)

    def reload_users(self) -> None:
        """Reread the users file when it changed (users added or removed while serving)."""
        if self.users is None:
            return
        path = self.users.path
        mtime = path.stat().st_mtime_ns if path.exists() else 0
        if mtime != self.users.mtime:
            self.users = UserStore(path)


class CohortRequest(BaseModel):
    """A cohort query, the level its members are listed at, and which page of members."""

    query: str
    level: str = "patient"
    offset: int = Field(0, ge=0)
    limit: int = Field(20, ge=0, le=MAX_MEMBERS_PAGE)


class AnnotateRequest(BaseModel):
    """Text to annotate."""

    text: str


class NewUser(BaseModel):
    """A user to create."""

    name: str
    role: str


def principal(request: Request, authorization: Annotated[str | None, Header()] = None) -> User:
    """The caller, from ``Authorization: Bearer TOKEN`` (LOCAL_USER without auth)."""
    state: ServerState = request.app.state.clinsearch
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


def purpose(x_purpose: Annotated[str | None, Header()] = None) -> str:
    """The purpose the caller states for this access (the page asks once per session)."""
    stated = urllib.parse.unquote(x_purpose or "").strip()  # the page percent-encodes it
    if not stated:
        raise HTTPException(400, "state the purpose of this access in the X-Purpose header")
    return stated[:500]


Caller = Annotated[User, Depends(principal)]
Purpose = Annotated[str, Depends(purpose)]


def create_app(index_path: str | Path, users: UserStore | None, audit: AuditLog,
               live: LiveIndex | None = None) -> FastAPI:
    """The app over the index at ``index_path``; ``users`` None means no authentication."""
    state = ServerState(live or LiveIndex(index_path), users, audit)
    app = FastAPI(title="clinsearch", version=clinsearch.__version__,
                  description="Negation-aware search over clinical reports: search, cohorts,"
                  " report views (audited), query explanation and annotation.")
    app.state.clinsearch = state
    static = resources.files("clinsearch.server") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.exception_handler(ClinsearchError)
    async def user_error(request: Request, exc: ClinsearchError) -> JSONResponse:
        body: dict[str, Any] = {"detail": str(exc)}
        if isinstance(exc, CohortSyntaxError):
            body |= {"column": exc.position + 1, "message": exc.message}
        return JSONResponse(body, status_code=400)

    @app.middleware("http")
    async def internal_errors(request: Request, call_next: Any) -> Any:
        """Security headers on every answer; an exception no handler took is answered by
        ``_failure`` and the connection is kept."""
        try:
            response = await call_next(request)
        except Exception as exc:
            response = _failure(request.url.path, exc)
        response.headers.update(SECURITY_HEADERS)
        return response

    def needs_text(user: User) -> None:
        if not user.sees_text:
            raise HTTPException(403, f"role {user.role!r} sees counts only")

    def audit(user: User, why: str, endpoint: str, params: dict[str, Any],
              counts: dict[str, int], generation: str) -> None:
        state.audit.write(user=user.name, role=user.role, purpose=why, endpoint=endpoint,
                          params=params, counts=counts, generation=generation)

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(static / "index.html"))

    @app.get("/api/session", summary="Whether this server needs a token (no data)")
    def session() -> dict[str, Any]:
        return {"auth_required": state.users is not None, "version": clinsearch.__version__}

    @app.get("/api/info", summary="The live generation: counts, methods and configuration")
    def info(user: Caller) -> dict[str, Any]:
        snap = state.live.snapshot
        manifest = snap.index.manifest
        return {"generation": snap.generation, "counts": asdict(manifest.counts),
                "methods": list(snap.methods), "levels": list(LEVELS),
                "sections": list(snap.sections), "user": {"name": user.name, "role": user.role},
                "config": manifest.to_dict().get("config")}

    @app.get("/api/search", summary="Search: hits with best sentence, highlights, findings")
    def search(
        user: Caller, why: Purpose,
        q: str, method: str = "concept", level: str = "report",
        top: Annotated[int, Query()] = 10, offset: Annotated[int, Query()] = 0,
        polarity: str = "query", context: str | None = None,
        date_from: str | None = None, date_to: str | None = None,
        section: str | None = None,
        report_type: Annotated[str | None, Query(alias="type")] = None,
    ) -> dict[str, Any]:
        if not 1 <= top <= MAX_TOP:
            raise ClinsearchError(f"top must be between 1 and {MAX_TOP} (got {top})")
        if not 0 <= offset <= RESULT_CAP - top:
            raise ClinsearchError(f"offset must be between 0 and {RESULT_CAP - top} (got {offset})")
        filters = ReportFilters(date_from or None, date_to or None, section or None,
                                report_type or None, context or None)
        spec = parse_method(method)  # NAME[:key=value,...], as the CLI's --method
        spec = spec.with_options(**polarity_options(spec.method, polarity),
                                 filters=filters if filters.active else None)
        params = {"q": q, "method": method, "level": level, "top": top, "offset": offset,
                  "polarity": polarity} | {k: v for k, v in asdict(filters).items() if v}

        def run(snap: Snapshot) -> tuple[bool, list[dict[str, Any]], dict[str, int], str]:
            # the first pages come from a shallow search, later ones from the deepest
            depth = FIRST_DEPTH if offset + top <= FIRST_DEPTH else RESULT_CAP
            key = (snap.generation, q, spec.method, level, tuple(sorted(spec.options.items())))
            computed, hits = RESULT_CAP, state.cached_hits((*key, RESULT_CAP))
            if hits is None:
                computed, hits = depth, state.cached_hits((*key, depth))
            if hits is None:
                hits = snap.index.search(q, level, depth, spec)  # type: ignore[arg-type]
                state.cache_hits((*key, depth), hits)
            capped = len(hits) == computed  # the depth these hits were computed to
            page_hits = hits[offset : offset + top]
            counts = {"total": len(hits)}
            if not user.sees_text:
                return capped, [], counts, snap.generation
            counts |= {"returned": len(page_hits),
                       "reports": len({h.report_id for h in page_hits}),
                       "patients": len({h.patient_id for h in page_hits})}
            shown = [_hit_record(h, snap) for h in page_hits]
            return capped, shown, counts, snap.generation

        capped, shown, counts, generation = state.live.run(run)
        audit(user, why, "search", params, counts, generation)
        return {"hits": shown, "total": counts["total"], "total_capped": capped,
                "offset": offset, "top": top, "generation": generation}

    @app.post("/api/cohort", summary="Cohort: exact counts at three levels and a page of members")
    def cohort(body: CohortRequest, user: Caller, why: Purpose) -> dict[str, Any]:
        check_level(body.level)

        def run(snap: Snapshot) -> tuple[dict[str, int], list[Any], str]:
            counts = snap.cohort.counts(body.query)
            members = snap.cohort.members(body.query, body.level) if user.sees_text else []
            return counts, members, snap.generation

        counts, members, generation = state.live.run(run)
        page_members = members[body.offset : body.offset + body.limit]
        audit(user, why, "cohort", body.model_dump(),
              dict(counts) | {"returned": len(page_members)}, generation)
        return {"query": body.query, "level": body.level, "counts": counts,
                "total": len(members) if user.sees_text else counts.get(body.level),
                "offset": body.offset, "columns": list(ID_COLUMNS[body.level]),  # type: ignore[index]
                "members": [asdict(m) for m in page_members], "generation": generation}

    @app.get("/api/cohort/export", summary="The cohort's members as CSV (as cohort --export)")
    def cohort_export(user: Caller, why: Purpose, query: str,
                      level: str = "patient") -> StreamingResponse:
        needs_text(user)
        check_level(level)
        members, generation = state.live.run(
            lambda snap: (snap.cohort.members(query, level), snap.generation))  # type: ignore[arg-type]
        exported = {"exported": len(members),
                    "patients": len({m.ids[0] for m in members}),
                    "reports": len({m.report_id for m in members if m.report_id})}
        audit(user, why, "cohort/export", {"query": query, "level": level}, exported, generation)
        return StreamingResponse(
            _csv_chunks(members_csv_rows(members, level)),  # type: ignore[arg-type]
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": f'attachment; filename="cohort-{level}s.csv"'},
        )

    @app.get("/api/reports/{report_id}", summary="A report: sections, sentences, every finding")
    def report(report_id: str, user: Caller, why: Purpose) -> dict[str, Any]:
        needs_text(user)

        def run(snap: Snapshot) -> tuple[Any, str]:
            if snap.index.lookup.report_ids.rows_of([report_id])[0] < 0:
                raise HTTPException(404, f"report {report_id!r} is not in the index")
            return snap.index.report(report_id), snap.generation

        view, generation = state.live.run(run)
        audit(user, why, "report", {"id": report_id},
              {"reports": 1, "patients": 1, "findings": len(view.findings)}, generation)
        return view.to_dict() | {"generation": generation}

    @app.get("/api/explain-query", summary="How a query is understood (finding patterns)")
    def explain(q: str, user: Caller) -> dict[str, Any]:
        from clinsearch.search.concept.tools import index_concept_tools
        from clinsearch.search.explain_query import explain_query

        def run(snap: Snapshot) -> dict[str, Any]:
            tools = index_concept_tools(snap.index)
            return explain_query(tools.parser.parse(q), tools.hierarchy, tools.lexicon,
                                 tools.parser.encoder, tools.parser.annotator)

        return state.live.run(run)

    @app.post("/api/annotate", summary="Findings of a text (polarity, context, modifiers)")
    def annotate(body: AnnotateRequest, user: Caller) -> dict[str, Any]:
        from clinsearch.annotate.annotator import annotator_for
        from clinsearch.search.concept.tools import index_lexicon_path

        if not body.text.strip():
            raise ClinsearchError("field 'text': empty text")
        annotator = annotator_for(index_lexicon_path(state.live.snapshot.index))
        findings = annotator.annotate(body.text)
        return {"findings": [_finding_record(f) for f in findings]}

    @app.get("/api/users", summary="Users and roles (admin)")
    def list_users(user: Caller) -> dict[str, Any]:
        store = _admin_store(user)
        return {"users": [{"name": u.name, "role": u.role, "created": u.created}
                          for u in store.users.values()]}

    @app.post("/api/users", summary="Add a user; the token is in this response only (admin)")
    def add_user(body: NewUser, user: Caller) -> dict[str, Any]:
        store = _admin_store(user)
        token = store.add(body.name, body.role)
        audit(user, "user management", "users/add", {"name": body.name, "role": body.role}, {},
              state.live.snapshot.generation)
        return {"name": body.name, "role": body.role, "token": token}

    @app.delete("/api/users/{name}", summary="Remove a user (admin)")
    def remove_user(name: str, user: Caller) -> dict[str, Any]:
        _admin_store(user).remove(name)
        audit(user, "user management", "users/remove", {"name": name}, {},
              state.live.snapshot.generation)
        return {"removed": name}

    def _admin_store(user: User) -> UserStore:
        if user.role != "admin":
            raise HTTPException(403, "only an admin manages users")
        if state.users is None:
            raise ClinsearchError("this server runs without authentication (--no-auth): no users")
        return state.users

    return app


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


def _hit_record(hit: Hit, snap: Snapshot) -> dict[str, Any]:
    """A hit's JSON form plus the findings of its best sentence (offsets into the sentence)."""
    findings = snap.findings.of(hit.sentence_id)
    return hit.to_dict() | {"findings": [_finding_record(f) for f in findings]}


def _finding_record(finding: Finding) -> dict[str, Any]:
    """A finding's JSON form: its fields and its finding pattern."""
    return asdict(finding) | {"pattern": finding.pattern}


def _csv_chunks(rows: Iterator[list[str]]) -> Iterator[str]:
    """CSV text in chunks of about 64 KiB, written as ``csv.writer`` writes a file."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        writer.writerow(row)
        if buffer.tell() > 65536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()

