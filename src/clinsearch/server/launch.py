"""Start the service for an index, as ``clinsearch serve`` does: decide authentication (tokens,
or none on loopback only), the hosts and models allowed, open the audit trail and the workbench
store, warm the index, and run the server until it stops, closing what it opened."""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from clinsearch.errors import ClinsearchError
from clinsearch.server.auth import UserStore, default_users_path


@dataclass(frozen=True)
class ServeOptions:
    """What ``clinsearch serve`` was asked for (see its ``--help`` for each)."""

    index_dir: Path
    host: str
    port: int
    audit_log: Path
    users: Path | None = None
    no_auth: bool = False
    workbench: Path | None = None
    audit_key: Path | None = None
    audit_syslog: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allowed_models: tuple[Path, ...] = ()
    viewer_min_count: int = 10
    accept_audit_gap: str | None = None
    request_memory: str | None = None


def serve(options: ServeOptions, say: Callable[[str], None],
          loading: Callable[[str], AbstractContextManager[object]]) -> None:
    """Serve until stopped; ``say`` tells the user where (plain text), ``loading(what)``
    shows the wait while the index opens and the models warm."""
    import uvicorn

    from clinsearch.server.access_log import log_config
    from clinsearch.server.app import create_app
    from clinsearch.server.audit import AuditLog
    from clinsearch.server.live import LiveIndex
    from clinsearch.server.memory_guard import (
        MemoryGuard,
        default_headroom,
        parse_size,
        share_freed_memory,
    )
    from clinsearch.server.model_names import allowed_models
    from clinsearch.server.state import LOOPBACK_NAMES, ServerConfig
    from clinsearch.server.workbench_store import WORKBENCH_FILE, WorkbenchStore

    host = options.host
    headroom = parse_size(options.request_memory) if options.request_memory is not None else None
    if headroom != 0:
        share_freed_memory()
    store = UserStore(options.users or default_users_path())
    user_store = _authentication(store, host, options.no_auth)
    hosts = {*LOOPBACK_NAMES, *(h.strip().lower() for h in options.allowed_hosts)}
    if not is_wildcard(host):
        hosts.add(host.strip("[]").lower())
    config = ServerConfig(tuple(sorted(hosts)), allowed_models(list(options.allowed_models)),
                          options.viewer_min_count)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    if options.audit_syslog:
        _checkpoints_to_syslog()
    audit = AuditLog(options.audit_log, options.audit_key, accept_gap=options.accept_audit_gap)
    bench = WorkbenchStore(options.workbench or options.audit_log.parent / WORKBENCH_FILE)
    with loading("loading the index (the lexicon tools and dense encoder then load in the"
                 " background)"):
        live = LiveIndex(options.index_dir)
    live.start()
    live.guard = MemoryGuard.start(default_headroom() if headroom is None else headroom)
    logging.getLogger("clinsearch.server").info(
        "memory guard: %s", f"requests stopped above {live.guard.limit >> 20:,} MiB resident"
        if live.guard else "off")
    snapshot = live.snapshot
    say(f"serving {options.index_dir} ({snapshot.generation},"
        f" {snapshot.index.manifest.counts.reports:,} reports) on http://{host}:{options.port}/;"
        f" auth: {'off (loopback)' if user_store is None else store.path};"
        f" audit: {options.audit_log}")
    try:
        uvicorn.run(create_app(options.index_dir, user_store, audit, live, config, bench),
                    host=host, port=options.port, log_level="info", access_log=True,
                    log_config=log_config())
    finally:
        if live.guard:
            live.guard.stop()
        live.stop()
        audit.checkpoint("stop")
        audit.close()
        bench.close()


def _authentication(store: UserStore, host: str, no_auth: bool) -> UserStore | None:
    """The users whose tokens the server checks, or None (no tokens: loopback only)."""
    if no_auth:
        if not is_loopback(host):
            raise ClinsearchError(f"--no-auth is allowed on loopback only, not on {host!r}")
        return None
    if store.users:
        return store
    if is_loopback(host):
        raise ClinsearchError(
            f"no users in {store.path}: add one with 'clinsearch users add NAME --role"
            " researcher', or pass --no-auth to serve on loopback without tokens"
        )
    raise ClinsearchError(
        f"refusing to bind {host!r} without authentication: no users in {store.path}"
        " (add one with 'clinsearch users add NAME --role researcher')"
    )


def _checkpoints_to_syslog() -> None:
    """Send the audit checkpoints to the local syslog as well."""
    from logging.handlers import SysLogHandler

    try:
        handler = SysLogHandler(address="/dev/log")
    except OSError as exc:
        raise ClinsearchError(f"/dev/log: cannot reach syslog ({exc.strerror})") from None
    handler.setFormatter(logging.Formatter("clinsearch: %(message)s"))
    logging.getLogger("clinsearch.audit").addHandler(handler)


def is_wildcard(host: str) -> bool:
    """Whether ``host`` binds every address (0.0.0.0, ::), so names no host clients use."""
    return host.strip("[]") in ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) resolves to loopback addresses only."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)
