"""Service commands: ``serve``, ``users add|remove|list`` and ``audit verify``."""

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
audit_app = typer.Typer(help="Check the audit trail.", no_args_is_help=True)
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
) -> None:
    """Serve the REST API and the web page for an index (models load once and stay warm;
    the server follows 'clinsearch add' and 'delete' without a restart)."""
    import uvicorn

    from clinsearch.server.access_log import log_config
    from clinsearch.server.app import create_app
    from clinsearch.server.audit import AuditLog
    from clinsearch.server.live import LiveIndex
    from clinsearch.server.workbench_store import WORKBENCH_FILE, WorkbenchStore

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
    audit = AuditLog(audit_log)
    bench = WorkbenchStore(workbench or audit_log.parent / WORKBENCH_FILE)
    with console.status("loading the index and warming the models"):
        live = LiveIndex(index_dir)
    live.start()
    snapshot = live.snapshot
    console.print(
        f"serving {escape(str(index_dir))} ({snapshot.generation},"
        f" {snapshot.index.manifest.counts.reports:,} reports) on http://{host}:{port}/;"
        f" auth: {'off (loopback)' if user_store is None else escape(str(store.path))};"
        f" audit: {escape(str(audit_log))}"
    )
    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    try:
        uvicorn.run(create_app(index_dir, user_store, audit, live, bench), host=host, port=port,
                    log_level="info", access_log=True, log_config=log_config())
    finally:
        live.stop()
        audit.close()
        bench.close()


@users_app.command("add")
def users_add_command(
    name: Annotated[str, typer.Argument(help="User name.", show_default=False)],
    role: Annotated[str, typer.Option(help="viewer (counts only), researcher (text and"
                                      " exports) or admin (also manages users).")],
    users: UsersFile = None,
) -> None:
    """Add a user and print its API token once (only its SHA-256 is stored)."""
    store = _user_store(users)
    token = store.add(name, role)
    err_console.print(f"added {escape(name)} ({role}) to {escape(str(store.path))}; the token"
                      " is shown once, keep it secret:")
    typer.echo(token)


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
    """List users and roles (tokens are not stored, so never shown)."""
    store = _user_store(users)
    for user in store.users.values():
        console.print(f"{escape(user.name)}\t{user.role}\t{user.created}")


@audit_app.command("verify")
def audit_verify_command(
    path: Annotated[Path, typer.Argument(help="Audit log (JSON Lines).", show_default=False)],
) -> None:
    """Check the hash chain: exit 0 if intact, 1 (listing each problem) if a record was edited,
    removed, inserted or reordered."""
    from clinsearch.server.audit import verify_audit

    result = verify_audit(path)
    if result.ok:
        console.print(f"{escape(str(path))}: {result.records} records, chain intact")
        return
    for problem in result.problems:
        err_console.print(f"[bold red]tampered:[/] {escape(problem)}", highlight=False)
    raise typer.Exit(1)


def _user_store(users: Path | None) -> UserStore:
    """The users file ``--users`` names, else the default one."""
    from clinsearch.server.auth import UserStore, default_users_path

    return UserStore(users or default_users_path())


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) resolves to loopback addresses only."""
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)
