"""Progress bars on stderr for long work (indexing, batch search), silent when disabled."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

T = TypeVar("T")

_console = Console(stderr=True)


def stderr_is_terminal() -> bool:
    """Whether progress would be seen: stderr is a terminal (not a log, a pipe or a test)."""
    return _console.is_terminal


@contextmanager
def progress_bar(
    description: str, total: int | None = None, *, enabled: bool = True
) -> Iterator[Callable[[int], None]]:
    """A progress bar (a counter when ``total`` is unknown); yields ``advance(n)``."""
    if not enabled:
        yield lambda n: None
        return
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    else:
        columns += [TextColumn("{task.completed}")]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=_console, transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


def track(
    items: Iterable[T], description: str, *, total: int | None = None, enabled: bool = True
) -> Iterator[T]:
    """Yield ``items`` while drawing a progress bar (a counter when ``total`` is unknown)."""
    with progress_bar(description, total, enabled=enabled) as advance:
        for item in items:
            yield item
            advance(1)
