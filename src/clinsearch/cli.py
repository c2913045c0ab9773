"""The ``clinsearch`` command line: a thin layer over the Python API."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from clinsearch.errors import ClinsearchError

app = typer.Typer(
    name="clinsearch",
    help="Negation-aware search over clinical reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True)


@app.callback()
def _root() -> None:
    """Index clinical reports, find findings with negation, search and build cohorts."""


def main() -> None:
    """Entry point: run the app; user errors print one clear line and exit 2, never a traceback."""
    try:
        app(standalone_mode=False)
    except ClinsearchError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise
