"""Start-up data the annotator derives from its inputs, computed once and then loaded from a
private cache file (the lexicon's concept surface index, the ConText rules' cues).

Such data is stored under a name holding a hash of everything it is derived from (its inputs,
the source files making it, the spaCy and medspaCy versions: ``digest``). A file also records
the hash of its payload; one that is unreadable, does not match or fails to load is recomputed
and rewritten; a cache folder that cannot be written is skipped. Payloads are data only (JSON,
validated on load): nothing in them is executed.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
from collections.abc import Callable, Iterable
from functools import lru_cache
from importlib.metadata import version
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from clinsearch.atomic import atomic_path
from clinsearch.cache_dir import private_folder
from clinsearch.gc_pause import collector_paused

FORMAT = "clinsearch derived data 1"
LIBRARIES = ("spacy", "medspacy")  # their tokenizer and rules go into the data
log = logging.getLogger(__name__)
T = TypeVar("T")


def digest(code: Iterable[ModuleType | Path]) -> Any:
    """A hash (``hashlib`` object) over the format, the source files ``code`` making the data
    (modules or files) and the libraries' versions; callers add their inputs."""
    out = hashlib.sha256(FORMAT.encode())
    for source in code:
        path = Path(inspect.getfile(source)) if isinstance(source, ModuleType) else source
        out.update(path.read_bytes())
    out.update(_library_versions())
    return out


@lru_cache(maxsize=1)
def _library_versions() -> bytes:
    """The versions of ``LIBRARIES``, looked up once per process (each lookup scans the
    installed distributions)."""
    return "".join(f"\0{package} {version(package)}" for package in LIBRARIES).encode()


def cached(path: Path, make: Callable[[], T], dump: Callable[[T], bytes],
           load: Callable[[bytes], T]) -> T:
    """``load`` of the payload stored at ``path``, or else ``make()``, stored there by ``dump``
    (``load`` raises ValueError, TypeError, KeyError or AttributeError on a bad payload)."""
    found = _load(path, load)
    if found is not None:
        return found
    made = make()
    try:
        _store(path, dump(made))
    except (OSError, ValueError, TypeError) as exc:
        log.debug("%s not cached: %s", path.name, type(exc).__name__)
    return made


def _load(path: Path, load: Callable[[bytes], T]) -> T | None:
    """``load`` of the payload at ``path``, or None when missing or not valid.

    The cyclic garbage collector is paused meanwhile: the ~100k containers a surface index
    makes hold no cycles, and the passes they would trigger took half its load time."""
    try:
        with collector_paused():
            header, _, payload = path.read_bytes().partition(b"\n")
            if json.loads(header) != _header(path, payload):
                return None
            return load(payload)
    except (OSError, ValueError, TypeError, AttributeError, KeyError, RecursionError):
        return None  # RecursionError: JSON nested deeper than the parser goes


def _header(path: Path, payload: bytes) -> dict[str, str]:
    """What a cache file's first line holds: format, name and the payload's hash."""
    return {"format": FORMAT, "name": path.name, "sha256": hashlib.sha256(payload).hexdigest()}


def _store(path: Path, payload: bytes) -> None:
    """Write ``payload`` to ``path`` atomically, after its header line (private file, in a
    private folder when this makes it)."""
    private_folder(path.parent)
    with atomic_path(path, mode=0o600) as tmp:
        tmp.write_bytes(json.dumps(_header(path, payload)).encode() + b"\n" + payload)
