"""The server's memory guard: a watcher thread reads the process's resident memory every 20 ms;
above what it held when no request was running (after loading, and at each idle moment since:
caches it keeps are bounded) plus a headroom, every request running at that moment gets a
``MemoryError`` raised in its thread (it answers 503 and frees what it built) and the freed
memory is given back to the system, instead of the kernel's out-of-memory killer ending the
whole server.

The error lands at the request's next Python instruction, so the guard stops growth made by
Python code (what a costly query builds); a single huge allocation in native code is kept off
by the bounds of ``clinsearch.limits`` (an allocation cap such as ``RLIMIT_DATA`` was tried:
native libraries abort on a failed allocation, taking the server down). glibc is told to keep
one arena, so that memory a failed request frees serves every thread and can be trimmed.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from clinsearch.errors import ClinsearchError

log = logging.getLogger("clinsearch.server")
POLL_SECONDS = 0.02
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_M_ARENA_MAX = -8  # glibc's mallopt parameter
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def parse_size(text: str) -> int:
    """Bytes of a size such as ``512M``, ``4G`` or ``1.5GiB`` (``0``: no guard)."""
    match = _SIZE.match(text)
    if match is None:
        raise ClinsearchError(f"--request-memory: {text!r} is not a size such as 512M or 4G")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def _libc() -> ctypes.CDLL | None:
    with contextlib.suppress(OSError):
        return ctypes.CDLL(None)
    return None


def _trim() -> None:
    """Give memory freed to glibc back to the system (nothing without ``malloc_trim``)."""
    with contextlib.suppress(AttributeError):
        if (libc := _libc()) is not None:
            libc.malloc_trim(0)


def share_freed_memory() -> None:
    """Make glibc's allocator keep one arena for every thread (call before threads start);
    nothing where the C library has no ``mallopt``."""
    with contextlib.suppress(AttributeError):
        if (libc := _libc()) is not None:
            libc.mallopt(_M_ARENA_MAX, 1)


def resident_bytes() -> int | None:
    """The process's resident memory (Linux ``/proc/self/statm``), None where unknown."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return None


def default_headroom() -> int:
    """Half the memory the machine has available now (0 where it cannot be read: no guard)."""
    try:
        text = Path("/proc/meminfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return 0
    found = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) * 1024 // 2 if found else 0


class MemoryGuard:
    """Stops the requests running when resident memory grows ``headroom`` bytes past what
    the server held when idle (``limit``)."""

    def __init__(self, held: int, headroom: int) -> None:
        self.headroom = headroom
        self.limit = held + headroom
        self.stopped = 0  # requests stopped since start
        self._running: set[int] = set()  # thread ids of requests at work
        self._raised: set[int] = set()
        self._lock = threading.Lock()
        self._end = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="clinsearch-memory",
                                        daemon=True)

    @classmethod
    def start(cls, headroom: int) -> MemoryGuard | None:
        """A started guard at the present resident memory plus ``headroom`` (None when
        ``headroom`` is 0 or resident memory cannot be read)."""
        held = resident_bytes()
        if headroom <= 0 or held is None:
            return None
        guard = cls(held, headroom)
        guard._thread.start()
        return guard

    def stop(self) -> None:
        """End the watcher."""
        self._end.set()

    @contextlib.contextmanager
    def request(self) -> Iterator[None]:
        """Watch the calling thread while it works for one request."""
        me = threading.get_ident()
        with self._lock:
            self._running.add(me)
        try:
            yield
        finally:
            with self._lock:
                self._running.discard(me)
                stopped = me in self._raised
                if stopped:  # an error not yet delivered must not outlive the work
                    self._raised.discard(me)
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(me), None)
            if stopped:  # the next request must not meet what this one built: give it back
                _trim()
            self._rest()

    def _rest(self) -> None:
        """At an idle moment, take what is held now as the server's own."""
        resident = resident_bytes()
        with self._lock:
            if not self._running and resident is not None:
                self.limit = resident + self.headroom

    def _watch(self) -> None:
        trimmed = 0.0
        while not self._end.wait(POLL_SECONDS):
            resident = resident_bytes()
            if resident is None:
                continue
            with self._lock:
                if not self._running:  # idle: what is held now is the server's own
                    self.limit = resident + self.headroom
                if resident <= self.limit:
                    continue
                targets = self._running - self._raised
                self._raised |= targets
                for thread in targets:
                    self.stopped += ctypes.pythonapi.PyThreadState_SetAsyncExc(
                        ctypes.c_ulong(thread), ctypes.py_object(MemoryError))
            if targets:
                log.error("memory guard: %d MiB resident, over the %d MiB limit: stopped %d"
                          " request(s)", resident >> 20, self.limit >> 20, len(targets))
            if time.monotonic() - trimmed > 1.0:  # give what requests freed back to the system
                trimmed = time.monotonic()
                _trim()
