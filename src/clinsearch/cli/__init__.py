"""The ``clinsearch`` command line: a thin layer over the Python API.

This module holds the Typer app, its error handling and consoles; each submodule registers one
group of commands on import (finding extraction, index and search, demo, cohorts, evaluation and
benchmarks, training).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from clinsearch.arrow_pool import use_jemalloc
from clinsearch.errors import ClinsearchError
from clinsearch.permissions import apply_process_umask
from clinsearch.terminal import printable
from clinsearch.user_files import describe_failure

err_console = Console(stderr=True, soft_wrap=True)  # one line per message, never wrapped
console = Console(soft_wrap=True)


# Parameters the library names in its errors (between backticks: `force`), as the flags that
# set them on the command line; the method options' flags are added by ``cli.method_flags``.
PARAMETER_FLAGS = {
    "force": "--force", "date_format": "--date-format", "allow_unknown": "--allow-unknown-queries",
    "skip_collisions": "--skip-collisions", "polarity_filter": "--polarity",
    "term_model": "--term-model",
}


def as_flags(message: str, flags: Mapping[str, str] = PARAMETER_FLAGS) -> str:
    """``message`` with each parameter it names between backticks written as its flag."""
    return re.sub(r"`(\w+)`", lambda m: flags.get(m[1], m[0]), message)


class _ClinsearchGroup(TyperGroup):
    """Turns user errors from any command into one clear line on stderr and exit status 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ClinsearchError as exc:
            fail(as_flags(str(exc)))
        except Exception as exc:  # OS failures the user's system caused are not bugs
            message = describe_failure(exc)
            if message is None:
                raise
            fail(message)


def fail(message: str) -> NoReturn:
    """Print ``message`` as the one error line (control characters escaped) and exit 2."""
    err_console.print(f"[bold red]error:[/] {escape(printable(message))}", highlight=False)
    raise typer.Exit(2)


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
    apply_process_umask()  # everything written is private (CLINSEARCH_UMASK, default 077)
    use_jemalloc()  # Arrow's allocator (arrow_pool: mimalloc costs cold queries system time)


QUICK_EXIT = frozenset({"search", "cohort"})  # read-only commands, left without teardown


def main() -> None:
    """Console-script entry point.

    A query command ends the process as soon as its answer is out: Python's teardown of the
    objects a search loads (spaCy, the indexes' readers) is a noticeable part of a cold concept
    search (benchmarks/README.md), and a read-only command has nothing else to clean up (its
    files are closed when it returns; logging is flushed here).
    """
    try:
        app()
    except SystemExit as done:
        if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT and isinstance(done.code, int | None):
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(done.code or 0)
        raise


# Importing the command modules registers their commands, in this order in --help.
from clinsearch.cli import annotate, index, search, demo, cohort, review, evaluate  # noqa: E402, F401, I001
from clinsearch.cli import train, serve, export  # noqa: E402, F401
