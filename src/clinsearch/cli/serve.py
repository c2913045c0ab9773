"""Service commands: ``serve``, ``users add|remove|list`` and ``audit verify|checkpoint|import``."""

from __future__ import annotations

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


_ServeHost = Annotated[str, typer.Option(help="Address to bind; other than loopback only with"
                                  " authentication (a users file with users).")]
_ServePort = Annotated[int, typer.Option(help="TCP port.", min=0, max=65535)]
_ServeAuditLog = Annotated[
    Path, typer.Option(help="Audit trail (JSON Lines, hash-chained; appended to).")
]
_ServeNoAuth = Annotated[
    bool, typer.Option("--no-auth", help="Serve without tokens (loopback only).")
]
_ServeWorkbench = Annotated[
    Path | None, typer.Option(help="The users' bundles, id lists, saved searches and"
                              " history (SQLite, private; default: beside the audit log).")
]
_ServeAuditKey = Annotated[
    Path | None, typer.Option(help="Key of the audit chain's HMACs, apart from the log"
                              " (default: $CLINSEARCH_AUDIT_KEY, else audit.key in"
                              " ~/.config/clinsearch; created on first use).")
]
_ServeAcceptAuditGap = Annotated[
    str | None, typer.Option(help="Start although the audit log is missing or empty while"
                             " its head remains (it was removed or replaced while the"
                             " server was stopped): REASON, kept with your account name"
                             " in the new chain's first record. Without it such a start"
                             " is refused.", metavar="REASON")
]
_ServeRequestMemory = Annotated[
    str | None, typer.Option(help="Memory the server may take beyond what it holds between"
                             " requests (e.g. 4G; 0: no guard; default: half the memory"
                             " available at start). Requests running when it is passed"
                             " fail (503) instead of the server being killed.")
]
_ServeAuditSyslog = Annotated[
    bool, typer.Option("--audit-syslog", help="Also send audit checkpoints to the local"
                       " syslog (/dev/log), to keep them off this machine.")
]
_ServeAllowedHost = Annotated[
    list[str] | None, typer.Option(help="A host name clients may reach the server by"
                                   " (repeatable; loopback names always).")
]
_ServeAllowModel = Annotated[
    list[Path] | None, typer.Option(help="A model folder clients may name (by its folder"
                                    " name) in rerank=, model= or term_model= (repeatable).")
]
_ServeViewerMinCount = Annotated[
    int, typer.Option(help="Counts below this are withheld from viewers, larger ones"
                      " rounded; filters must select at least this many reports.", min=1)
]


@app.command("serve")
def serve_command(
    index_dir: IndexDir,
    host: _ServeHost = "127.0.0.1",
    port: _ServePort = 8000,
    audit_log: _ServeAuditLog = Path("clinsearch-audit.jsonl"),
    users: UsersFile = None,
    no_auth: _ServeNoAuth = False,
    workbench: _ServeWorkbench = None,
    audit_key: _ServeAuditKey = None,
    accept_audit_gap: _ServeAcceptAuditGap = None,
    audit_syslog: _ServeAuditSyslog = False,
    allowed_host: _ServeAllowedHost = None,
    allow_model: _ServeAllowModel = None,
    viewer_min_count: _ServeViewerMinCount = 10,
    request_memory: _ServeRequestMemory = None,
) -> None:
    """Serve the REST API and the web page for an index (models load once and stay warm;
    the server follows 'clinsearch add' and 'delete' without a restart)."""
    from clinsearch.server.launch import ServeOptions, serve

    options = ServeOptions(
        index_dir, host, port, audit_log, users, no_auth, workbench, audit_key, audit_syslog,
        tuple(allowed_host or ()), tuple(allow_model or ()), viewer_min_count, accept_audit_gap,
        request_memory)
    serve(options, lambda text: console.print(escape(text)), console.status)


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


def _user_store(users: Path | None) -> UserStore:
    """The users file ``--users`` names, else the default one."""
    from clinsearch.server.auth import UserStore, default_users_path

    return UserStore(users or default_users_path())
