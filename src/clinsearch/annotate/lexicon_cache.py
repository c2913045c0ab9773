"""A parsed lexicon, computed once and then loaded from the private cache.

Composing the YAML of the shipped lexicon's files (about 2,600 concepts) and validating it is
most of a cold start's lexicon time; the parsed result, as JSON, loads several times faster.
The cache file is named by a hash of the main file's text and the loader's code, and records
the hash of every file the main one includes: a cached copy is used only while each of them is
unchanged. Only a lexicon that passed validation is ever stored (``derived_cache``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from clinsearch.annotate import lexicon as lexicon_module
from clinsearch.annotate.derived_cache import cached, digest
from clinsearch.annotate.lexicon import (
    AnatomyState,
    Concept,
    Include,
    Lexicon,
    StateVocabulary,
    parse_lexicon,
)
from clinsearch.cache_dir import default_cache_dir


def load_lexicon(text: str, file: str | Path, include: Include,
                 cache_dir: Path | None = None) -> Lexicon:
    """``parse_lexicon(text, file, include)``, from the cache when it holds a current copy.

    The cache file's name covers ``text`` (so the names it includes) and ``file``; its payload
    holds the hash of each included file, checked against the files read now."""
    key = digest([lexicon_module, Path(__file__)])  # the lexicon's code and this shape's
    key.update(str(file).encode() + b"\0" + text.encode())
    path = (cache_dir or default_cache_dir()) / f"lexicon-{key.hexdigest()[:32]}.json"

    def make() -> tuple[Lexicon, dict[str, str]]:
        hashes: dict[str, str] = {}

        def remembered(name: str) -> tuple[str, str]:
            found = include(name)
            hashes[name] = _hash(found[0])
            return found

        return parse_lexicon(text, file, include=remembered), hashes

    def dump(pair: tuple[Lexicon, dict[str, str]]) -> bytes:
        return json.dumps({"included": pair[1], "lexicon": _to_data(pair[0])},
                          ensure_ascii=False, separators=(",", ":")).encode()

    def load(payload: bytes) -> tuple[Lexicon, dict[str, str]]:
        data = json.loads(payload)
        hashes = data["included"]
        for name, expected in hashes.items():
            if _hash(include(name)[0]) != expected:
                raise ValueError("an included file changed since the lexicon was cached")
        return _from_data(data["lexicon"]), hashes

    return cached(path, make, dump, load)[0]


def _hash(text: str) -> str:
    """The hex SHA-256 of a file's text."""
    return hashlib.sha256(text.encode()).hexdigest()


def _to_data(lexicon: Lexicon) -> dict[str, Any]:
    """The lexicon as JSON-ready data (``_from_data`` makes it back)."""
    vocabulary = lexicon.anatomy_states
    return {
        "name": lexicon.name, "version": lexicon.version, "path": lexicon.path,
        "sources": list(lexicon.sources), "plain_words": sorted(lexicon.plain_words),
        "concepts": [[c.id, c.name, c.type, c.region, list(c.parents), list(c.terms),
                      list(c.abbreviations), [[s, list(ids)] for s, ids in c.states],
                      [list(code) for code in c.codes]]
                     for c in lexicon.concepts.values()],
        "modifiers": {cat: {v: list(f) for v, f in values.items()}
                      for cat, values in lexicon.modifiers.items()},
        "compounds": lexicon.compounds,
        "relations": [[a, b, credit] for (a, b), credit in lexicon.modifier_relations.items()],
        "states": [[s.name, s.polarity, list(s.words)] for s in vocabulary.states.values()],
        "links": sorted(vocabulary.links), "coordinators": sorted(vocabulary.coordinators),
    }


def _from_data(data: dict[str, Any]) -> Lexicon:
    """The lexicon ``_to_data`` gave (KeyError, TypeError or ValueError on another shape)."""
    concepts = {
        row[0]: Concept(row[0], row[1], row[2], row[3], tuple(row[4]), tuple(row[5]),
                        tuple(row[6]), tuple((s, tuple(ids)) for s, ids in row[7]),
                        tuple((system, code) for system, code in row[8]))
        for row in data["concepts"]
    }
    states = {name: AnatomyState(name, polarity, tuple(words))
              for name, polarity, words in data["states"]}
    return Lexicon(
        name=data["name"], version=data["version"], concepts=concepts,
        modifiers={cat: {v: tuple(f) for v, f in values.items()}
                   for cat, values in data["modifiers"].items()},
        compounds={form: dict(parts) for form, parts in data["compounds"].items()},
        modifier_relations={(a, b): float(credit) for a, b, credit in data["relations"]},
        sources=tuple(data["sources"]), path=data["path"],
        plain_words=frozenset(data["plain_words"]),
        anatomy_states=StateVocabulary(states, frozenset(data["links"]),
                                       frozenset(data["coordinators"])),
    )
