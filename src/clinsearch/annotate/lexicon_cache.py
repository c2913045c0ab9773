"""A parsed lexicon, computed once and then loaded from the private cache.

Composing the YAML of the shipped lexicon's files (about 2,600 concepts) and validating it is
most of a cold start's lexicon time; the parsed result, as JSON, loads several times faster.
The cache file is named by a hash of the main file's text and the loader's code, and records
the hash of every file the main one includes: a cached copy is used only while each of them is
unchanged. Only a lexicon that passed validation is ever stored (``derived_cache``). The parser
and the JSON shape come from ``annotate.lexicon``, which imports this module (not the reverse).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from clinsearch.annotate.derived_cache import cached, digest
from clinsearch.cache_dir import default_cache_dir

T = TypeVar("T")
Include = Callable[[str], tuple[str, str]]  # an included file's name -> (text, display name)


def load_cached(text: str, file: str | Path, include: Include, *,
                parse: Callable[[str, str | Path, Include], T], to_data: Callable[[T], Any],
                from_data: Callable[[Any], T], code: Sequence[ModuleType | Path],
                cache_dir: Path | None = None) -> T:
    """``parse(text, file, include)``, from the cache when it holds a current copy (stored as
    ``to_data`` gives it, read back by ``from_data``).

    The cache file's name covers ``text`` (so the names it includes), ``file`` and the ``code``
    that parses; its payload holds the hash of each included file, checked against the files
    read now."""
    key = digest([*code, Path(__file__)])  # the parser's code and this shape's
    key.update(str(file).encode() + b"\0" + text.encode())
    path = (cache_dir or default_cache_dir()) / f"lexicon-{key.hexdigest()[:32]}.json"

    def make() -> tuple[T, dict[str, str]]:
        hashes: dict[str, str] = {}

        def remembered(name: str) -> tuple[str, str]:
            found = include(name)
            hashes[name] = _hash(found[0])
            return found

        return parse(text, file, remembered), hashes

    def dump(pair: tuple[T, dict[str, str]]) -> bytes:
        return json.dumps({"included": pair[1], "lexicon": to_data(pair[0])},
                          ensure_ascii=False, separators=(",", ":")).encode()

    def load(payload: bytes) -> tuple[T, dict[str, str]]:
        data = json.loads(payload)
        hashes = data["included"]
        for name, expected in hashes.items():
            if _hash(include(name)[0]) != expected:
                raise ValueError("an included file changed since the lexicon was cached")
        return from_data(data["lexicon"]), hashes

    return cached(path, make, dump, load)[0]


def _hash(text: str) -> str:
    """The hex SHA-256 of a file's text."""
    return hashlib.sha256(text.encode()).hexdigest()
