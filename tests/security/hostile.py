"""Hostile inputs shared by the security tests, and the CLI error-contract check."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from clinsearch.cli import app

# A folder name that closes a SQL string literal and runs a statement if pasted into SQL.
HOSTILE_NAME = "idx'); COPY (SELECT 1) TO 'pwned.csv' (FORMAT csv); --"
REPORTS = (
    ("r1", "p1", "v1", "No pneumothorax. Heart size is normal."),
    ("r2", "p1", "v2", "Small left pleural effusion."),
    ("r3", "p2", "v3", "Right lower lobe pneumonia."),
    ("r4", "p3", "v4", "Cardiomegaly. Mild pulmonary edema."),
)


def run(*args: str | Path) -> tuple[int, str, str]:
    """Run the CLI in-process: exit code, stdout, stderr; any traceback fails the test."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def one_line_error(code: int, stderr: str) -> str:
    """Assert the README's error contract (exit 2, one line, no traceback) and return the line."""
    assert code == 2, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()  # progress lines may come before, as in a terminal
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, stderr
    return errors[0]
