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
LABEL_SEP = "\x1d"  # separates a packed key from its labels, and the labels
ROW_SEP = "\x1e"  # separates the packed keys of one first token
_SEPARATORS = (KEY_SEP, LABEL_SEP, ROW_SEP)


class SurfaceIndex:
    """Token sequences (lowercase terms, exact-case abbreviations) mapped to labels.

    An index made by ``from_data`` keeps each first token's keys packed in one string and
    unpacks them when a text holds that token, so a cold query reads a few groups, not all."""

    def __init__(self) -> None:
        self._lower: dict[Key, set[str]] = {}
        self._exact: dict[Key, set[str]] = {}
        self._max_len = 0
        self._firsts: set[str] = set()  # first tokens of all keys (both cases), to skip fast
        self._stems: set[Key] = set()  # proper prefixes of all keys: a match may go on
        self._packed: dict[str, str] = {}  # first token -> its keys, not yet unpacked
        self._size = 0  # keys still packed

    def add_term(self, form: str, label: str) -> None:
        """Match ``form`` and its variants case-insensitively as ``label``."""
        for key in term_variants(form):
            self._unpack(key[0])
            self._lower.setdefault(key, set()).add(label)
            self._note(key)

    def add_abbreviation(self, form: str, label: str) -> None:
        """Match ``form`` (and a plural 's') with its exact case as ``label``."""
        for key in abbreviation_variants(form):
            self._unpack(key[0])
            self._exact.setdefault(key, set()).add(label)
            self._note(key)

    def _note(self, key: Key) -> None:
        """Remember a new key's first token, prefixes and length, for ``_matches``."""
        self._firsts.add(key[0])
        self._stems.update(key[:i] for i in range(1, len(key)))
        self._max_len = max(self._max_len, len(key))

    def to_data(self) -> dict[str, Any]:
        """The index as JSON-ready data (``from_data`` makes it back): per first token, one
        string of its keys (tokens joined by KEY_SEP, each key's table and sorted labels
        beside it). ValueError if a token or label holds a separator."""
        for first in list(self._packed):
            self._unpack(first)
        groups: dict[str, list[str]] = {}
        for table, keys in (("l", self._lower), ("e", self._exact)):
            for key, labels in keys.items():
                parts = [*key, *sorted(labels)]
                if any(sep in part for part in parts for sep in _SEPARATORS):
                    raise ValueError("a surface key token or label holds a separator")
                row = table + KEY_SEP.join(key) + LABEL_SEP + LABEL_SEP.join(sorted(labels))
                groups.setdefault(key[0], []).append(row)
        return {"max_len": self._max_len,
                "groups": {first: ROW_SEP.join(rows) for first, rows in groups.items()}}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> SurfaceIndex:
        """The index ``to_data`` gave, its groups left packed; ValueError when ``data`` does
        not have its shape."""
        groups, max_len = data.get("groups"), data.get("max_len")
        if not isinstance(groups, dict) or not all(
            isinstance(first, str) and first and isinstance(rows, str) and rows
            for first, rows in groups.items()
        ):
            raise ValueError("surface index data without a valid 'groups' table")
        if not isinstance(max_len, int) or isinstance(max_len, bool) or max_len < 0:
            raise ValueError("surface index data without a valid 'max_len'")
        index = cls()
        index._packed = dict(groups)
        index._firsts = set(groups)
        index._max_len = max_len
        index._size = sum(rows.count(ROW_SEP) + 1 for rows in groups.values())
        return index

    def _unpack(self, first: str) -> None:
        """Move the keys packed under ``first`` into the tables (ValueError on a bad row)."""
        rows = self._packed.pop(first, None)
        if rows is None:
            return
        for row in rows.split(ROW_SEP):
            table, joined, labels = row[:1], *row[1:].split(LABEL_SEP, 1)
            key = tuple(joined.split(KEY_SEP))
            if table not in ("l", "e") or key[0] != first or not all(key) or not labels:
                raise ValueError("surface index data with a malformed row")
            self._size -= 1
            (self._lower if table == "l" else self._exact)[key] = set(labels.split(LABEL_SEP))
            self._stems.update(key[:i] for i in range(1, len(key)))

    def __len__(self) -> int:
        return len(self._lower) + len(self._exact) + self._size

    def lookup(self, text: str) -> list[str]:
        """The labels ``text`` resolves to as a whole (sorted)."""
        lower_key, exact_key = key_of(text), key_of(text, exact=True)
        for key in (lower_key, exact_key):
            if key:
                self._unpack(key[0])
        lower = self._lower.get(lower_key, set())
        return sorted(lower | self._exact.get(exact_key, set()))

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
        packed = self._packed
        pos = keys.positions
        n = len(lower)
        out: list[tuple[str, int, int]] = []
        for i in range(n):
            if lower[i] not in firsts and exact[i] not in firsts:
                continue
            if packed:
                self._unpack(lower[i])
                self._unpack(exact[i])
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
