"""The concept surface index cache: a hit equals a fresh computation; a corrupt, tampered or
stale file is never used."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.modifiers import ModifierMatcher
from clinsearch.annotate.surface import tokenizer
from clinsearch.annotate.surface_cache import cached_concept_index, surface_key
from clinsearch.annotate.surface_index import SurfaceIndex, concept_entries, concept_index


def _same(a: SurfaceIndex, b: SurfaceIndex) -> bool:
    return (len(a), a.to_data()) == (len(b), b.to_data())


def test_a_cached_index_equals_a_computed_one(mini_lexicon: Lexicon, tmp_path: Path) -> None:
    fresh = concept_index(mini_lexicon)
    assert _same(cached_concept_index(mini_lexicon, tmp_path), fresh)  # computed, stored
    (stored,) = tmp_path.glob("surface-*.json")
    assert stored.stat().st_mode & 0o077 == 0  # private
    assert _same(cached_concept_index(mini_lexicon, tmp_path), fresh)  # loaded
    assert stored.stat().st_mtime_ns == next(tmp_path.glob("surface-*.json")).stat().st_mtime_ns


def test_a_corrupt_or_tampered_file_is_recomputed(mini_lexicon: Lexicon, tmp_path: Path) -> None:
    fresh = concept_index(mini_lexicon)
    cached_concept_index(mini_lexicon, tmp_path)
    (stored,) = tmp_path.glob("surface-*.json")
    good = stored.read_bytes()
    for bad in (good[: len(good) // 2], good.replace(b'"groups"', b'"group_"'), b"", b"\n{}"):
        stored.write_bytes(bad)
        assert _same(cached_concept_index(mini_lexicon, tmp_path), fresh)
        assert stored.read_bytes() == good  # rewritten


def test_a_loaded_index_unpacks_only_the_groups_a_text_needs(mini_lexicon: Lexicon,
                                                            tmp_path: Path) -> None:
    fresh = concept_index(mini_lexicon)
    cached_concept_index(mini_lexicon, tmp_path)
    loaded = cached_concept_index(mini_lexicon, tmp_path)
    assert len(loaded) == len(fresh)
    doc = tokenizer()("Small right pleural effusion. No pneumothorax.")
    assert loaded.find(doc) == fresh.find(doc) != []
    assert 0 < len(loaded._lower) + len(loaded._exact) < len(fresh)  # the rest still packed
    assert loaded.lookup("pneumothorax") == fresh.lookup("pneumothorax")


def test_another_lexicon_has_another_key(mini_lexicon: Lexicon) -> None:
    concept = next(iter(mini_lexicon.concepts.values()))
    changed = replace(concept, abbreviations=(*concept.abbreviations, "ZQX"))
    other = replace(mini_lexicon, concepts={**mini_lexicon.concepts, concept.id: changed})
    assert surface_key(*concept_entries(other)) != surface_key(*concept_entries(mini_lexicon))


def test_modifier_matching_is_the_same_from_the_cache(mini_lexicon: Lexicon,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("CLINSEARCH_CACHE", str(tmp_path))
    text = "small right lower lobe opacity, mildly enlarged"
    first = ModifierMatcher(mini_lexicon)  # computed and stored
    assert list(tmp_path.glob("surface-*.json"))
    loaded = ModifierMatcher(mini_lexicon)
    assert _same(first._index, loaded._index)
    doc = tokenizer()(text)
    assert loaded(doc) == first(doc) != []


def test_an_unwritable_cache_folder_is_skipped(mini_lexicon: Lexicon, tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert _same(cached_concept_index(mini_lexicon, blocked), concept_index(mini_lexicon))
