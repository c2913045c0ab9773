"""The project's errors: the one policy for failures the user causes.

Library code raises these (never a bare ValueError) for bad input, options or data; the CLI
prints the message on one line and exits with status 2, the API answers 400/422. Each names
the file, line and field it is about where those are known.
"""

from __future__ import annotations

from pathlib import Path


class ClinsearchError(Exception):
    """An error caused by the user's input or setup; the CLI prints it without a traceback."""


class InputError(ClinsearchError):
    """Bad input data, located as precisely as we can: ``file:line: field 'x': message``."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file if self.line is None else f"{self.file}:{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        what = f"field '{self.field}': " if self.field else ""
        return f"{where}{what}{self.message}"


class LimitError(ClinsearchError):
    """A request beyond a bound declared in ``clinsearch.limits`` (too deep, too many, too
    costly), refused before any work: exit status 2 from the CLI, HTTP 422 from the API."""


class DataError(ClinsearchError):
    """The input is well-formed but holds too little for the task (no labels, no pairs); the
    caller that knows where the input came from may name it."""


def shown(value: object, limit: int = 40) -> str:
    """``value`` quoted for an error message, cut to ``limit`` characters: a message names a
    value (an id, a date) but never carries a whole field, which could be report text."""
    text = str(value)
    return repr(text if len(text) <= limit else text[:limit] + "...")
