"""Ordered, bounded parallel map over worker processes, for streaming builds.

At most ``2 * size`` items are in flight, so memory stays flat however long the input is;
results come back in input order. The processes start only when a map has a second item (a
small input runs in this process) and are shared by every map of one ``Workers``. After
``recycle_after`` items the processes are replaced by fresh ones: memory that a library keeps
growing for the life of a process (spaCy's vocabulary interns every new word it tokenizes, so a
worker annotating millions of sentences keeps growing) is given back.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import chain
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")
_END: Any = object()
RECYCLE_AFTER = 1_000  # items per set of processes: a spaCy worker reloads in a few seconds


def available_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Workers:
    """Up to ``size`` worker processes, started on first need and replaced after
    ``recycle_after`` items; ``close`` stops them."""

    def __init__(self, size: int = 1, recycle_after: int = RECYCLE_AFTER) -> None:
        self.size = max(1, size)
        self.recycle_after = max(1, recycle_after)
        self._pool: ProcessPoolExecutor | None = None
        self._sent = 0  # items given to the current processes

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker processes (if any were started)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def map(
        self,
        fn: Callable[[Any], R],
        items: Iterable[T],
        send: Callable[[T], Any] = lambda item: item,
    ) -> Iterator[tuple[T, R]]:
        """``(item, fn(send(item)))`` for each item, in order.

        ``fn`` must be a module-level function (it runs in fresh ``spawn`` processes); ``send``
        picks what of the item the worker needs, so the rest never crosses a process boundary.
        """
        stream = iter(items)
        first = next(stream, _END)
        if first is _END:
            return
        second = next(stream, _END) if self.size > 1 else _END
        if second is _END:
            yield first, fn(send(first))
            for item in stream:
                yield item, fn(send(item))
            return
        pending: deque[tuple[T, Future[R]]] = deque()
        for item in chain([first, second], stream):
            if self._sent >= self.recycle_after:
                while pending:  # the old processes finish their items, then stop
                    done, future = pending.popleft()
                    yield done, future.result()
                self.close()
            pending.append((item, self._started().submit(fn, send(item))))
            self._sent += 1
            if len(pending) >= 2 * self.size:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()

    def _started(self) -> ProcessPoolExecutor:
        """The pool, started now if needed (``spawn``: never fork a process with threads)."""
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(self.size, mp_context=context)
            self._sent = 0
        return self._pool
