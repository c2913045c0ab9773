"""Checks made on every request before any route reads it: the Host header (and the Origin of
a state-changing call, name and port) against the allowed names, which defeats DNS rebinding;
the size of the query string and of the body, and that the URL is UTF-8 text; and
the token, so that an unauthenticated body is never read (a users file the server must refuse
answers 503, its reason in the server log only).

A plain ASGI middleware: it answers from the request line and headers alone, without buffering
or parsing the body, and counts the bytes of a body it lets through.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from clinsearch.errors import ClinsearchError
from clinsearch.server.state import ServerState

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_QUERY_STRING = 16384  # bytes of a URL's query string
SAFE_METHODS = (b"GET", b"HEAD", b"OPTIONS")
OPEN_PATHS = ("/api/session",)  # API paths answered without a token
DEFAULT_PORTS = {"http": "80", "https": "443"}
log = logging.getLogger("clinsearch.server")


class BodyTooLarge(Exception):
    """A body that grew past the limit while it was read (no Content-Length given)."""


def host_name(value: str) -> str:
    """The host of a Host header or of an Origin's authority, lower-case, without the port."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def host_port(value: str, scheme: str = "http") -> str:
    """The port of a Host header or of an Origin's authority (the scheme's default if none)."""
    value = value.strip()
    tail = value.rsplit("]", 1)[1] if value.startswith("[") else (
        value if value.count(":") == 1 else "")
    port = tail.rsplit(":", 1)[1] if ":" in tail else ""
    return port or DEFAULT_PORTS.get(scheme, "")


def is_utf8_query(query: bytes) -> bool:
    """Whether a raw query string (or path) decodes, after percent-decoding, as UTF-8 text."""
    try:
        urllib.parse.unquote_to_bytes(query.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class RequestGuard:
    """The checks in front of the app (see the module's docstring)."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        await self.app(scope, _counted(receive, self.state.config.max_body), send)

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, str] | None:
        config = self.state.config
        host_header = headers.get(b"host", b"").decode("latin-1")
        host = host_name(host_header)
        if host not in config.allowed_hosts:
            return 400, ("this server does not answer to that Host name (start it with"
                         " --allowed-host NAME to allow one)")
        origin = headers.get(b"origin")
        if origin and scope["method"].encode() not in SAFE_METHODS:
            parts = urllib.parse.urlsplit(origin.decode("latin-1"))
            # a Host without a port means the default port of the scheme the page used (as a
            # TLS proxy in front passes it); another port is another site
            port = host_port(host_header, parts.scheme)
            if (host_name(parts.netloc) not in config.allowed_hosts
                    or host_port(parts.netloc, parts.scheme) != port):
                return 403, "requests from pages of other sites are refused"
        path = scope["path"]
        if path.startswith("/api/") and path not in OPEN_PATHS and self.state.users is not None:
            token = _bearer(headers)
            try:
                user = self._authenticated(token)
            except ClinsearchError as exc:
                log.error("cannot check tokens: %s", exc)
                return 503, ("the server cannot use its users file; its administrator must"
                             " fix it (the reason is in the server log)")
            if user is None:
                users = self.state.users
                return 401, (users.refusal(token) if token and users is not None else
                             "a valid API token is required (Authorization: Bearer TOKEN;"
                             " 'clinsearch users add' issues one)")
            scope.setdefault("state", {})["user"] = user
        if len(scope.get("query_string", b"")) > MAX_QUERY_STRING:
            return 414, f"the query string is longer than {MAX_QUERY_STRING} bytes"
        if not (is_utf8_query(scope.get("query_string", b""))
                and is_utf8_query(scope.get("raw_path") or b"")):
            return 400, "the URL is not UTF-8 text (a %FF-style byte, no character)"
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > config.max_body):
            return 413, f"the request body is larger than {config.max_body} bytes"
        if length is None and b"transfer-encoding" in headers:
            return 411, "send the body with a Content-Length"
        return None

    def _authenticated(self, token: str) -> Any:
        self.state.reload_users()
        users = self.state.users
        return users.authenticate(token) if users is not None and token else None


def _bearer(headers: dict[bytes, bytes]) -> str:
    """The token of the request's ``Authorization: Bearer`` header ("" when none)."""
    token = headers.get(b"authorization", b"").decode("latin-1")
    return token.removeprefix("Bearer ").strip()


def _counted(receive: Receive, limit: int) -> Receive:
    """``receive`` that fails once more than ``limit`` body bytes arrived."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > limit:
            raise BodyTooLarge
        return message

    return wrapped


async def _answer(send: Send, status: int, detail: str) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
