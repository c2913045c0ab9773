"""The server's memory guard: once the index and models are loaded, the process's data memory
is capped (``RLIMIT_DATA``) at what it then holds plus a headroom, so that a request needing
more than the headroom fails alone (``MemoryError``: HTTP 503) instead of the kernel's
out-of-memory killer ending the whole server.

The cap counts the heap and private anonymous mappings (Linux 4.7 and later), not the index
files the server maps read-only, so it bounds what requests allocate. The headroom must cover
the requests served at once and a second generation while ``add`` or ``delete`` swaps one in.
Native code that aborts instead of failing an allocation is kept from large allocations by the
bounds of ``clinsearch.limits``; the guard is the second line. The C allocator is told to use
one arena (``share_freed_memory``), so that memory a failed request frees serves every thread
again (per-thread arenas keep freed memory counted against the cap, out of the others' reach).
"""

from __future__ import annotations

import contextlib
import ctypes
import re
import resource
import sys
from pathlib import Path

from clinsearch.errors import ClinsearchError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_M_ARENA_MAX = -8  # glibc's mallopt parameter


def share_freed_memory() -> None:
    """Make glibc's allocator keep one arena for every thread (call before threads start);
    nothing where the C library has no ``mallopt``."""
    with contextlib.suppress(AttributeError, OSError):
        ctypes.CDLL(None).mallopt(_M_ARENA_MAX, 1)


def parse_size(text: str) -> int:
    """Bytes of a size such as ``512M``, ``4G`` or ``1.5GiB`` (``0``: no cap)."""
    match = _SIZE.match(text)
    if match is None:
        raise ClinsearchError(f"--request-memory: {text!r} is not a size such as 512M or 4G")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


def _status_kib(field: str, path: str = "/proc/self/status") -> int | None:
    """A ``kB`` field of a /proc status file (``VmData``, ``MemAvailable``), None if absent."""
    try:
        text = Path(path).read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    found = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def default_headroom() -> int:
    """Half the memory the machine has available now (0 where it cannot be read: no cap)."""
    available = _status_kib("MemAvailable", "/proc/meminfo")
    return (available or 0) * 1024 // 2


def cap_memory(headroom: int) -> int | None:
    """Cap the process's data memory at its present size plus ``headroom`` bytes; the cap in
    bytes, or None when ``headroom`` is 0 or the system has no such cap (not Linux)."""
    held = _status_kib("VmData")
    if headroom <= 0 or held is None or not sys.platform.startswith("linux"):
        return None
    cap = held * 1024 + headroom
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    return cap
