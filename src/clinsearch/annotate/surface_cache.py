"""A lexicon's concept surface index, computed once and then loaded from a private cache file.

Expanding the ~5,600 lexicon terms into their ~130k token-sequence variants runs the clinical
tokenizer on each and took about 0.5 s of every cold query. The index is pure data derived
from the concepts' surface forms, the code of ``surface``/``surface_index`` and the spaCy and
medspaCy versions (their tokenizer), so it is stored as JSON under a name holding a hash of all
of those; the file also records the hash of its payload, and a file that is unreadable, does
not match or fails validation is recomputed and rewritten. No code runs from the file.
"""

from __future__ import annotations

import gc
import hashlib
import json
import logging
from importlib.metadata import version
from pathlib import Path

from clinsearch.annotate import surface, surface_index
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.surface_index import SurfaceIndex, concept_index
from clinsearch.atomic import atomic_path
from clinsearch.cache_dir import default_cache_dir

FORMAT = "clinsearch surface index 1"
log = logging.getLogger(__name__)


def cache_key(lexicon: Lexicon) -> str:
    """A hash of everything the concept index of ``lexicon`` is derived from."""
    digest = hashlib.sha256(FORMAT.encode())
    for module in (surface, surface_index):
        digest.update(Path(str(module.__file__)).read_bytes())
    for package in ("spacy", "medspacy"):
        digest.update(f"\0{package} {version(package)}".encode())
    for concept in lexicon.concepts.values():
        digest.update(json.dumps([concept.id, concept.surface_forms, concept.abbreviations])
                      .encode())
    return digest.hexdigest()[:32]


def cached_concept_index(lexicon: Lexicon, cache_dir: Path | None = None) -> SurfaceIndex:
    """``surface_index.concept_index(lexicon)``, loaded from the cache when it holds a valid
    copy, else computed and stored (a cache folder that cannot be written is skipped)."""
    key = cache_key(lexicon)
    path = (cache_dir or default_cache_dir()) / f"surface-{key}.json"
    index = _load(path, key)
    if index is not None:
        return index
    index = concept_index(lexicon)
    try:
        _store(path, key, index)
    except (OSError, ValueError) as exc:
        log.debug("surface index not cached: %s", type(exc).__name__)
    return index


def _load(path: Path, key: str) -> SurfaceIndex | None:
    """The index stored at ``path`` under ``key``, or None when missing or not valid.

    The cyclic garbage collector is paused meanwhile: the ~100k containers made while loading
    hold no cycles, and the passes they would trigger took half the load time."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        header, _, payload = path.read_bytes().partition(b"\n")
        meta = json.loads(header)
        if meta != {"format": FORMAT, "key": key,
                    "sha256": hashlib.sha256(payload).hexdigest()}:
            return None
        return SurfaceIndex.from_data(json.loads(payload))
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    finally:
        if collecting:
            gc.enable()


def _store(path: Path, key: str, index: SurfaceIndex) -> None:
    """Write ``index`` to ``path`` atomically: a header line (format, key, payload hash), then
    the payload."""
    payload = json.dumps(index.to_data(), ensure_ascii=False, separators=(",", ":")).encode()
    header = json.dumps({"format": FORMAT, "key": key,
                         "sha256": hashlib.sha256(payload).hexdigest()}).encode()
    with atomic_path(path, mode=0o600) as tmp:
        tmp.write_bytes(header + b"\n" + payload)
