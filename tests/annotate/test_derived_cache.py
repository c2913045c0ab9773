"""The derived-data cache: a hostile file (one whose header matches its payload) is never
trusted to the point of a crash: it is recomputed."""

from __future__ import annotations

import json
from pathlib import Path

from clinsearch.annotate import derived_cache
from clinsearch.annotate.context_rules import cached_rule_specs, context_rule_specs


def _plant(path: Path, payload: bytes) -> None:
    """Write ``payload`` at ``path`` with a header that matches it."""
    header = json.dumps(derived_cache._header(path, payload)).encode()
    path.write_bytes(header + b"\n" + payload)


def test_a_deeply_nested_payload_is_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "thing.json"
    _plant(path, b"[" * 100_000 + b"]" * 100_000)
    made = derived_cache.cached(path, lambda: [1, 2], lambda x: json.dumps(x).encode(),
                                lambda p: json.loads(p))
    assert made == [1, 2]
    assert derived_cache.cached(path, lambda: [3], lambda x: json.dumps(x).encode(),
                                lambda p: json.loads(p)) == [1, 2]  # rewritten, then loaded


def test_rule_specs_medspacy_would_refuse_are_recomputed(tmp_path: Path) -> None:
    specs = context_rule_specs(False)
    assert cached_rule_specs(False, tmp_path) == specs  # stored
    (stored,) = tmp_path.glob("rules-*")
    hostile = [{**specs[0], "no_such_argument": 1}, *specs[1:]]
    _plant(stored, json.dumps(hostile).encode())
    assert cached_rule_specs(False, tmp_path) == specs


def test_a_cache_folder_it_makes_is_private(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "thing.json"
    derived_cache.cached(path, lambda: [1], lambda x: json.dumps(x).encode(), json.loads)
    assert path.parent.stat().st_mode & 0o077 == 0
    assert path.stat().st_mode & 0o077 == 0
