"""Longest-match lookup of surface forms in a tokenized Doc, via a dictionary of token sequences.

Used instead of medspaCy's TargetMatcher for lexicon concepts: with the chest X-ray lexicon's
variant sequences the TargetMatcher was slow to build and a token-pattern TargetMatcher slow to
match; this index builds and matches far faster (figures: benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from medspacy.common.util import prune_overlapping_matches
from spacy.tokens import Doc

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.surface import (
    TextKeys,
    abbreviation_variants,
    key_of,
    term_variants,
    text_keys,
)

Key = tuple[str, ...]
KEY_SEP = "\x1f"  # joins a key's tokens in ``to_data`` (the tokenizer never puts it in a token)


class SurfaceIndex:
    """Token sequences (lowercase terms, exact-case abbreviations) mapped to labels."""

    def __init__(self) -> None:
        self._lower: dict[Key, set[str]] = {}
        self._exact: dict[Key, set[str]] = {}
        self._max_len = 0
        self._firsts: set[str] = set()  # first tokens of all keys (both cases), to skip fast
        self._stems: set[Key] = set()  # proper prefixes of all keys: a match may go on

    def add_term(self, form: str, label: str) -> None:
        """Match ``form`` and its variants case-insensitively as ``label``."""
        for key in term_variants(form):
            self._lower.setdefault(key, set()).add(label)
            self._note(key)

    def add_abbreviation(self, form: str, label: str) -> None:
        """Match ``form`` (and a plural 's') with its exact case as ``label``."""
        for key in abbreviation_variants(form):
            self._exact.setdefault(key, set()).add(label)
            self._note(key)

    def _note(self, key: Key) -> None:
        """Remember a new key's first token, prefixes and length, for ``_matches``."""
        self._firsts.add(key[0])
        self._stems.update(key[:i] for i in range(1, len(key)))
        self._max_len = max(self._max_len, len(key))

    def to_data(self) -> dict[str, Any]:
        """The index as JSON-ready data (``from_data`` makes it back): keys joined by KEY_SEP,
        labels sorted. ValueError if a token holds KEY_SEP."""
        def joined(keys: Sequence[Key]) -> list[str]:
            out = [KEY_SEP.join(key) for key in keys]
            if sum(map(len, keys)) != sum(s.count(KEY_SEP) + 1 for s in out):
                raise ValueError("a surface key token holds the key separator")
            return out

        tables = {
            name: dict(zip(joined(list(keys)), map(sorted, keys.values()), strict=True))
            for name, keys in (("lower", self._lower), ("exact", self._exact))
        }
        return tables | {"stems": joined(sorted(self._stems))}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SurfaceIndex:
        """The index ``to_data`` gave; ValueError when ``data`` does not have its shape."""
        index = cls()
        for name, keys in (("lower", index._lower), ("exact", index._exact)):
            table = data.get(name)
            if not isinstance(table, dict) or not all(
                isinstance(labels, list) and labels and all(isinstance(x, str) for x in labels)
                for labels in table.values()
            ):
                raise ValueError(f"surface index data without a valid {name!r} table")
            keys.update({tuple(joined.split(KEY_SEP)): set(labels)
                         for joined, labels in table.items()})
        stems = data.get("stems")
        if not isinstance(stems, list) or not all(isinstance(s, str) for s in stems):
            raise ValueError("surface index data without a valid 'stems' list")
        index._stems = {tuple(joined.split(KEY_SEP)) for joined in stems}
        every = [*index._lower, *index._exact]
        if not all(every):
            raise ValueError("surface index data with an empty key")
        index._firsts = {key[0] for key in every}
        index._max_len = max(map(len, every), default=0)
        return index

    def __len__(self) -> int:
        return len(self._lower) + len(self._exact)

    def lookup(self, text: str) -> list[str]:
        """The labels ``text`` resolves to as a whole (sorted)."""
        lower = self._lower.get(key_of(text), set())
        return sorted(lower | self._exact.get(key_of(text, exact=True), set()))

    def find(self, doc: Doc, keys: TextKeys | None = None) -> list[tuple[str, int, int]]:
        """Non-overlapping matches ``(label, start token, end token)``; longest wins overlaps."""
        return self.find_with_gaps(doc, keys)

    def find_with_gaps(
        self, doc: Doc, keys: TextKeys | None = None, gaps: Sequence[frozenset[int]] = ()
    ) -> list[tuple[str, int, int]]:
        """As ``find``, also matching with each set of ``gaps`` token positions left out of the
        text, so that words such as modifiers may stand inside a term ("flattened posterior
        diaphragm" for "flattened diaphragm"); such a match must skip a word inside it. Longest
        span (in the text) wins overlaps."""
        keys = keys if keys is not None else text_keys(doc)
        labels: list[str] = []
        found: list[tuple[int, int, int]] = []
        for label, start, end in self._matches(keys):
            found.append((len(labels), start, end))
            labels.append(label)
        for gap in gaps:
            kept = [k for k, p in enumerate(keys.positions) if p not in gap]
            if len(kept) == len(keys.positions):
                continue
            view = TextKeys(*([seq[k] for k in kept] for seq in (keys.positions, keys.lower,
                                                                  keys.exact)))
            for label, start, end in self._matches(view):
                if not gap.isdisjoint(range(start, end)):
                    found.append((len(labels), start, end))
                    labels.append(label)
        if len(found) > 1:
            found = prune_overlapping_matches(found)
        return [(labels[k], i, j) for k, i, j in sorted(found, key=lambda f: f[1])]

    def _matches(self, keys: TextKeys) -> list[tuple[str, int, int]]:
        """Every match ``(label, start token, end token)`` in ``keys``, overlaps included; a
        match is extended only while its words begin some key."""
        lower, exact, firsts, stems = keys.lower, keys.exact, self._firsts, self._stems
        pos = keys.positions
        n = len(lower)
        out: list[tuple[str, int, int]] = []
        for i in range(n):
            if lower[i] not in firsts and exact[i] not in firsts:
                continue
            for length in range(1, min(self._max_len, n - i) + 1):
                low, cased = tuple(lower[i : i + length]), tuple(exact[i : i + length])
                hit = self._lower.get(low) or self._exact.get(cased)
                if hit:
                    out.append((min(hit), pos[i], pos[i + length - 1] + 1))
                if low not in stems and cased not in stems:
                    break
        return out


Entry = tuple[str, str]  # a surface form and its label


def concept_entries(lexicon: Lexicon) -> tuple[list[Entry], list[Entry]]:
    """Every concept's surface forms (case-insensitive) and abbreviations (exact case)."""
    terms = [(form, c.id) for c in lexicon.concepts.values() for form in c.surface_forms]
    abbreviations = [(abbr, c.id) for c in lexicon.concepts.values() for abbr in c.abbreviations]
    return terms, abbreviations


def index_of(terms: Iterable[Entry], abbreviations: Iterable[Entry] = ()) -> SurfaceIndex:
    """A surface index of ``terms`` (case-insensitive) and ``abbreviations`` (exact case)."""
    index = SurfaceIndex()
    for form, label in terms:
        index.add_term(form, label)
    for abbr, label in abbreviations:
        index.add_abbreviation(abbr, label)
    return index


def concept_index(lexicon: Lexicon) -> SurfaceIndex:
    """Every concept's surface forms (case-insensitive) and abbreviations (exact case)."""
    return index_of(*concept_entries(lexicon))
