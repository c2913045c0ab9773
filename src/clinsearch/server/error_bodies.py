"""What an error answer may show: the message capped in length, server paths cut to their last
name (the server log keeps them whole), never an echo of a long value or of report text.

User errors answer 400 with the CLI's message; a refused request field, or a value beyond a
declared bound (``clinsearch.limits``), 422 naming the field or the bound (without the value);
a failure of the server's system 503 with one line; a bug 500, logged by type and code
location only.
"""

from __future__ import annotations

import logging
import re
import traceback
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from clinsearch.errors import ClinsearchError, LimitError
from clinsearch.search.cohort import CohortSyntaxError
from clinsearch.server.guard import BodyTooLarge
from clinsearch.terminal import printable
from clinsearch.user_files import describe_failure

log = logging.getLogger("clinsearch.server")
MAX_DETAIL = 300  # characters of one line of an error message in an answer
MAX_LINES = 4
_PATH = re.compile(r"(?<![\w.~-])(?:~|/)[^\s:'\"]*/([^\s/:'\"]*)")


def public_detail(message: str) -> str:
    """``message`` with absolute paths cut to their last name, at most MAX_LINES lines of at
    most MAX_DETAIL characters (a cohort syntax error's caret line stays under its query)."""
    lines = _PATH.sub(lambda m: m.group(1) or "/", printable(message)).splitlines()[:MAX_LINES]
    return "\n".join(ln if len(ln) <= MAX_DETAIL else ln[: MAX_DETAIL - 1] + "…" for ln in lines)


async def user_error(request: Request, exc: ClinsearchError) -> JSONResponse:
    """A user error: 400 with the CLI's message (and the column of a cohort syntax error);
    422 for a value beyond a declared bound."""
    body: dict[str, Any] = {"detail": public_detail(str(exc))}
    if isinstance(exc, CohortSyntaxError):
        body |= {"column": exc.position + 1, "message": public_detail(exc.message)}
    return JSONResponse(body, status_code=422 if isinstance(exc, LimitError) else 400)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    """A refusal a route raised (401, 403, 404...), its message made public."""
    return JSONResponse({"detail": public_detail(str(exc.detail))}, status_code=exc.status_code,
                        headers=exc.headers)


async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 naming each refused field and why, without echoing its value."""
    problems = [{"loc": list(e.get("loc", ())), "msg": public_detail(str(e.get("msg", ""))),
                 "type": e.get("type")} for e in exc.errors()[:10]]
    return JSONResponse({"detail": problems}, status_code=422)


def failure(path: str, exc: Exception) -> JSONResponse:
    """The answer to an exception no handler took: 503 with the CLI's one line for a failure
    of the system (``describe_failure``: a path and a reason, never report text), else 500 for
    a bug, logged by type and code location only (its message may quote report text)."""
    if isinstance(exc, BodyTooLarge):
        return JSONResponse({"detail": "the request body is too large"}, status_code=413)
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, MemoryError):
        cause = cause.__cause__ or cause.__context__  # "import failed" over the memory guard
    message = describe_failure(cause or exc)
    if message is not None:
        line = printable(message, one_line=True)
        log.error("cannot serve %s: %s", path, line)
        return JSONResponse({"detail": public_detail(line)}, status_code=503)
    where = traceback.extract_tb(exc.__traceback__)[-1]
    log.error("internal error on %s: %s at %s:%d", path, type(exc).__name__, where.filename,
              where.lineno)
    return JSONResponse({"detail": "internal server error"}, status_code=500)
