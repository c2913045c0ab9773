"""The ``clinsearch`` command line: a thin layer over the Python API.

This module holds the Typer app, its error handling and consoles; each submodule registers one
group of commands on import (finding extraction, index and search, demo, cohorts, evaluation and
benchmarks, training).
"""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from clinsearch.errors import ClinsearchError

err_console = Console(stderr=True, soft_wrap=True)  # one line per message, never wrapped
console = Console(soft_wrap=True)


class _ClinsearchGroup(TyperGroup):
    """Turns user errors from any command into one clear line on stderr and exit status 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ClinsearchError as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from exc


app = typer.Typer(
    name="clinsearch",
    cls=_ClinsearchGroup,
    help="Negation-aware search over clinical reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Index clinical reports, find findings with negation, search and build cohorts."""


def main() -> None:
    """Console-script entry point."""
    app()


# Importing the command modules registers their commands, in this order in --help.
from clinsearch.cli import annotate, index, demo, cohort, evaluate, train, serve, export  # noqa: E402, F401, I001
