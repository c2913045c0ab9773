"""Service commands: ``serve``, ``users add|remove|list`` and ``audit verify|checkpoint|import``."""

from __future__ import annotations

import ipaddress
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from clinsearch.cli import app, console, err_console
from clinsearch.cli.options import IndexDir
from clinsearch.errors import ClinsearchError

if TYPE_CHECKING:
    from clinsearch.server.auth import UserStore

UsersFile = Annotated[
    Path | None,
    typer.Option("--users", help="Users file (default: $CLINSEARCH_USERS, else"
                 " ~/.config/clinsearch/users.json)."),
]

users_app = typer.Typer(help="Manage API users and their tokens.", no_args_is_help=True)
audit_app = typer.Typer(help="Check, anchor and import the audit trail.", no_args_is_help=True)
app.add_typer(users_app, name="users")
app.add_typer(audit_app, name="audit")


@app.command("serve")
def serve_command(
    index_dir: IndexDir,
    host: Annotated[str, typer.Option(help="Address to bind; other than loopback only with"
                                      " authentication (a users file with users).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", min=0, max=65535)] = 8000,
    audit_log: Annotated[
        Path, typer.Option(help="Audit trail (JSON Lines, hash-chained; appended to).")
    ] = Path("clinsearch-audit.jsonl"),
    users: UsersFile = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="Serve without tokens (loopback only).")
    ] = False,
    workbench: Annotated[
        Path | None, typer.Option(help="The users' bundles, id lists, saved searches and"
                                  " history (SQLite, private; default: beside the audit log).")
    ] = None,
    audit_key: Annotated[
        Path | None, typer.Option(help="Key of the audit chain's HMACs, apart from the log"
                                  " (default: $CLINSEARCH_AUDIT_KEY, else audit.key in"
                                  " ~/.config/clinsearch; created on first use).")
    ] = None,
    accept_audit_gap: Annotated[
        str | None, typer.Option(help="Start although the audit log is missing or empty while"
                                 " its head remains (it was removed or replaced while the"
                                 " server was stopped): REASON, kept with your account name"
                                 " in the new chain's first record. Without it such a start"
                                 " is refused.", metavar="REASON")
    ] = None,
    audit_syslog: Annotated[
        bool, typer.Option("--audit-syslog", help="Also send audit checkpoints to the local"
                           " syslog (/dev/log), to keep them off this machine.")
    ] = False,
    allowed_host: Annotated[
        list[str] | None, typer.Option(help="A host name clients may reach the server by"
                                       " (repeatable; loopback names always).")
    ] = None,
    allow_model: Annotated[
        list[Path] | None, typer.Option(help="A model folder clients may name (by its folder"
                                        " name) in rerank=, model= or term_model= (repeatable).")
    ] = None,
    viewer_min_count: Annotated[
        int, typer.Option(help="Counts below this are withheld from viewers, larger ones"
                          " rounded; filters must select at least this many reports.", min=1)
    ] = 10,
    request_memory: Annotated[
        str | None, typer.Option(help="Memory the server may take beyond what it holds between"
                                 " requests (e.g. 4G; 0: no guard; default: half the memory"
                                 " available at start). Requests running when it is passed"
                                 " fail (503) instead of the server being killed.")
    ] = None,
) -> None:
    """Serve the REST API and the web page for an index (models load once and stay warm;
    the server follows 'clinsearch add' and 'delete' without a restart)."""
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

    headroom = parse_size(request_memory) if request_memory is not None else None
    if headroom != 0:
        share_freed_memory()
    store = _user_store(users)
    if no_auth:
        if not is_loopback(host):
            raise ClinsearchError(f"--no-auth is allowed on loopback only, not on {host!r}")
        user_store = None
    elif store.users:
        user_store = store
    elif is_loopback(host):
        raise ClinsearchError(
            f"no users in {store.path}: add one with 'clinsearch users add NAME --role"
            " researcher', or pass --no-auth to serve on loopback without tokens"
        )
    else:
        raise ClinsearchError(
            f"refusing to bind {host!r} without authentication: no users in {store.path}"
            " (add one with 'clinsearch users add NAME --role researcher')"
        )
    hosts = {*LOOPBACK_NAMES, *(h.strip().lower() for h in allowed_host or ())}
    if not is_wildcard(host):
        hosts.add(host.strip("[]").lower())
    config = ServerConfig(tuple(sorted(hosts)), allowed_models(allow_model or []),
                          viewer_min_count)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    if audit_syslog:
        _checkpoints_to_syslog()
    audit = AuditLog(audit_log, audit_key, accept_gap=accept_audit_gap)
    bench = WorkbenchStore(workbench or audit_log.parent / WORKBENCH_FILE)
    with console.status("loading the index and warming the models"):
        live = LiveIndex(index_dir)
    live.start()
    live.guard = MemoryGuard.start(default_headroom() if headroom is None else headroom)
    logging.getLogger("clinsearch.server").info(
        "memory guard: %s", f"requests stopped above {live.guard.limit >> 20:,} MiB resident"
        if live.guard else "off")
    snapshot = live.snapshot
    console.print(
        f"serving {escape(str(index_dir))} ({snapshot.generation},"
        f" {snapshot.index.manifest.counts.reports:,} reports) on http://{host}:{port}/;"
        f" auth: {'off (loopback)' if user_store is None else escape(str(store.path))};"
        f" audit: {escape(str(audit_log))}"
    )
    try:
        uvicorn.run(create_app(index_dir, user_store, audit, live, config, bench), host=host,
                    port=port,
                    log_level="info", access_log=True, log_config=log_config())
    finally:
        if live.guard:
            live.guard.stop()
        live.stop()
        audit.checkpoint("stop")
        audit.close()
        bench.close()


@users_app.command("add")
def users_add_command(
    name: Annotated[str, typer.Argument(help="User name.", show_default=False)],
    role: Annotated[str, typer.Option(help="viewer (counts only), researcher (text and"
                                      " exports) or admin (also manages users).")],
    users: UsersFile = None,
    expires_days: Annotated[int, typer.Option(help="Days until the token expires.", min=1,
                                              max=3650)] = 90,
) -> None:
    """Add a user and print its API token once (only its SHA-256 is stored)."""
    store = _user_store(users)
    token = store.add(name, role, expires_days)
    err_console.print(f"added {escape(name)} ({role}) to {escape(str(store.path))}; the token"
                      f" expires {store.users[name].expires} and is shown once, keep it secret:")
    typer.echo(token)


@users_app.command("revoke")
def users_revoke_command(
    name: Annotated[str, typer.Argument(help="User name.", show_default=False)],
    users: UsersFile = None,
) -> None:
    """Revoke a user's token (at once, also on a running server); the user stays listed."""
    store = _user_store(users)
    store.revoke(name)
    console.print(f"revoked {escape(name)} at {store.users[name].revoked}")


@users_app.command("remove")
def users_remove_command(
    name: Annotated[str, typer.Argument(help="User name.", show_default=False)],
    users: UsersFile = None,
) -> None:
    """Remove a user (its token stops working at once, also on a running server)."""
    store = _user_store(users)
    store.remove(name)
    console.print(f"removed {escape(name)}")


@users_app.command("list")
def users_list_command(users: UsersFile = None) -> None:
    """List users, roles, creation, expiry and revocation (tokens are never stored)."""
    store = _user_store(users)
    for user in store.users.values():
        state = f"revoked {user.revoked}" if user.revoked else f"expires {user.expires or 'never'}"
        console.print(f"{escape(user.name)}\t{user.role}\t{user.created}\t{state}")


@audit_app.command("verify")
def audit_verify_command(
    path: Annotated[Path, typer.Argument(help="Audit log (JSON Lines).", show_default=False)],
    audit_key: Annotated[Path | None, typer.Option(help="The server's audit key (default:"
                                                   " as serve's).")] = None,
    anchor: Annotated[list[str] | None, typer.Option(help="RECORD:MAC from a checkpoint kept"
                                                     " elsewhere (repeatable).")] = None,
) -> None:
    """Check the chain, its macs and heads: exit 0 if intact, 1 (listing each problem) if a
    record was edited, forged, removed, inserted or reordered, or the log cut short."""
    from clinsearch.server.audit import verify_log

    result = verify_log(path, audit_key, _anchors(anchor or []))
    if result.ok:
        console.print(f"{escape(str(path))}: {result.records} records, keyed chain intact")
        if result.follows:
            console.print(f"it follows another chain: {escape(str(result.follows))}")
        return
    label = "tampered" if result.keyed or not result.records else "not verifiable"
    for problem in result.problems:
        err_console.print(f"[bold red]{label}:[/] {escape(problem)}", highlight=False)
    raise typer.Exit(1)


@audit_app.command("import")
def audit_import_command(
    path: Annotated[Path, typer.Argument(help="A plain (unkeyed) audit log an older clinsearch"
                                         " wrote.", show_default=False)],
    audit_key: Annotated[Path | None, typer.Option(help="The server's audit key (default:"
                                                   " as serve's).")] = None,
) -> None:
    """Import a plain SHA-256 audit log (written before the keyed chain): check its chain,
    keep it as PATH.plain-DATE and start a keyed chain at PATH whose first record names it,
    its last hash and your account. Serve refuses a plain log until it is imported, and
    'audit verify' then checks the kept file against that record. Refused if this server's
    key ever wrote a keyed chain at PATH (a plain log there replaced it)."""
    from clinsearch.server.audit import import_plain

    log = import_plain(path, audit_key)
    log.close()
    console.print(f"imported {escape(str(path))}: a keyed chain starts after it")


@audit_app.command("checkpoint")
def audit_checkpoint_command(
    path: Annotated[Path, typer.Argument(help="Audit log (JSON Lines).", show_default=False)],
    audit_key: Annotated[Path | None, typer.Option(help="The server's audit key (default:"
                                                   " as serve's).")] = None,
) -> None:
    """Verify the log and print its last record as RECORD:MAC, to keep off this machine and
    give to 'audit verify --anchor' later."""
    from clinsearch.server.audit import verify_log

    result = verify_log(path, audit_key)
    if not result.ok:
        raise ClinsearchError(f"{path}: fails verification ({result.problems[0]})")
    if not result.records:
        raise ClinsearchError(f"{path}: no records yet")
    typer.echo(f"{result.records - 1}:{result.last_hash}")


def _anchors(values: list[str]) -> dict[int, str]:
    anchors = {}
    for value in values:
        seq, _, mac = value.partition(":")
        if not seq.isdigit() or len(mac) != 64:
            raise ClinsearchError(f"--anchor {value[:80]!r}: expected RECORD:MAC as 'audit"
                                  " checkpoint' prints it")
        anchors[int(seq)] = mac
    return anchors


def _checkpoints_to_syslog() -> None:
    """Send the audit checkpoints to the local syslog as well."""
    from logging.handlers import SysLogHandler

    try:
        handler = SysLogHandler(address="/dev/log")
    except OSError as exc:
        raise ClinsearchError(f"/dev/log: cannot reach syslog ({exc.strerror})") from None
    handler.setFormatter(logging.Formatter("clinsearch: %(message)s"))
    logging.getLogger("clinsearch.audit").addHandler(handler)


def _user_store(users: Path | None) -> UserStore:
    """The users file ``--users`` names, else the default one."""
    from clinsearch.server.auth import UserStore, default_users_path

    return UserStore(users or default_users_path())


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
