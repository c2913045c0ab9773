"""Modifier mentions (laterality, location, severity, temporal) and their attachment to findings.

Mentions come from the lexicon's modifier vocabularies and compounds ("RLL" = right + lower lobe),
longest match first. Each mention attaches to the nearest finding in the same clause, preferring
the same comma-separated segment, a finding it precedes ("mild cardiomegaly"), and non-anatomy
findings over anatomy ones.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from spacy.tokens import Doc

from clinsearch.annotate.finding import MODIFIER_ORDER
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.surface import TextKeys, key_of
from clinsearch.annotate.surface_cache import cached_index

CLAUSE_BREAKS = frozenset(
    {";", ":", "but", "however", "although", "though", "whereas", "while", "which", "otherwise"}
)
SEGMENT_BREAKS = frozenset({",", "and", "or", "with", "without", "in", "of"})
# Findings joined only by these words share a modifier: alternatives ("atelectasis or scarring",
# "atelectasis/infiltrate") take one written before or after them, a list ("atelectasis and
# effusion at the left base") one written after it.
ALTERNATIVES = frozenset({"or", "/", "versus", "vs", "vs.", "and/or"})
LIST_JOINERS = ALTERNATIVES | {"and", ","}
FILLERS = frozenset({"xxxx"})  # de-identification tokens may stand between coordinated findings
# Words a lexicon term may be written across, as a first and a wider second choice: side,
# severity and time, then location ("flattened posterior diaphragm", "irregularity of the 7th
# right rib"), and always ordinals and sizes ("calcified 5 mm granuloma").
INNER_CATEGORIES = (frozenset({"laterality", "severity", "temporal"}), frozenset({"location"}))
ORDINAL_OR_SIZE = re.compile(
    r"\d+(st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth"
    r"|eleventh|twelfth|\d+(\.\d+)?|mm|cm"
)


@dataclass(frozen=True, slots=True)
class ModifierMention:
    """A modifier value found in the text, with token and character offsets."""

    category: str
    value: str
    start: int  # token offsets
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class Anchor:
    """A finding's token span, for attachment, and the words of its concept's preferred name."""

    start: int
    end: int
    anatomy: bool
    name_words: frozenset[str] = frozenset()


class ModifierMatcher:
    """Finds modifier values of the pattern categories (``MODIFIER_ORDER``) in a Doc."""

    def __init__(self, lexicon: Lexicon) -> None:
        meanings: dict[str, set[tuple[str, str]]] = {}
        for category in MODIFIER_ORDER:
            for value, surface in lexicon.modifiers.get(category, {}).items():
                for form in surface:
                    meanings.setdefault(form.lower(), set()).add((category, value))
        for form, parts in lexicon.compounds.items():
            meaning = {(c, v) for c, v in parts.items() if c in MODIFIER_ORDER}
            meanings.setdefault(form.lower(), set()).update(meaning)
        self._meanings: dict[str, tuple[tuple[str, str], ...]] = {}
        terms: list[tuple[str, str]] = []
        for form, meaning in meanings.items():
            label = "|".join(f"{c}={v}" for c, v in sorted(meaning))
            self._meanings[label] = tuple(sorted(meaning))
            terms.append((form, label))
        self._index = cached_index(terms)

    def lookup(self, term: str) -> tuple[tuple[str, str], ...]:
        """The ``(category, value)`` pairs ``term`` stands for as a whole."""
        return tuple(pair for label in self._index.lookup(term) for pair in self._meanings[label])

    def __call__(self, doc: Doc, keys: TextKeys | None = None) -> list[ModifierMention]:
        """Modifier mentions in ``doc``, longest match winning among overlaps."""
        return [
            ModifierMention(category, value, start, end, doc[start:end].text)
            for label, start, end in self._index.find(doc, keys)
            for category, value in self._meanings[label]
        ]


def single_word_categories(lexicon: Lexicon) -> dict[str, frozenset[str]]:
    """The pattern categories of every one-word modifier form and compound, by lowercase word."""
    out: dict[str, set[str]] = {}
    for category in MODIFIER_ORDER:
        for surface in lexicon.modifiers.get(category, {}).values():
            for form in surface:
                if len(words := key_of(form)) == 1:
                    out.setdefault(words[0], set()).add(category)
    for form, parts in lexicon.compounds.items():
        if len(words := key_of(form)) == 1:
            out.setdefault(words[0], set()).update(c for c in parts if c in MODIFIER_ORDER)
    return {word: frozenset(cats) for word, cats in out.items()}


def inner_word_gaps(
    keys: TextKeys, categories: dict[str, frozenset[str]]
) -> tuple[frozenset[int], ...]:
    """Token positions a concept term may be matched across: ordinals, sizes and one-word
    modifiers of the first ``INNER_CATEGORIES`` group, then those plus the second group's."""
    none: frozenset[str] = frozenset()
    skippable = [  # (position, always skippable, modifier categories) of the candidate words
        (p, ORDINAL_OR_SIZE.fullmatch(w) is not None, categories.get(w, none))
        for p, w in zip(keys.positions, keys.lower, strict=True)
    ]
    skippable = [(p, always, cats) for p, always, cats in skippable if always or cats]
    out: list[frozenset[int]] = []
    allowed: frozenset[str] = frozenset()
    for group in INNER_CATEGORIES:
        allowed |= group
        gap = frozenset(p for p, always, cats in skippable if always or cats & allowed)
        if gap and gap not in out:
            out.append(gap)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Clauses:
    """Part numbers of a Doc's tokens: ``clause`` increases at each clause break and sentence
    start, ``segment`` also at each segment break (``SEGMENT_BREAKS``)."""

    clause: list[int]
    segment: list[int]

    @classmethod
    def of(cls, doc: Doc) -> Clauses:
        """The clauses and segments of ``doc``, in one pass over its tokens."""
        clause: list[int] = []
        segment: list[int] = []
        c = g = 0
        for tok in doc:
            lower = tok.lower_
            if tok.is_sent_start or lower in CLAUSE_BREAKS:
                c += 1
                g += 1
            elif lower in SEGMENT_BREAKS:
                g += 1
            clause.append(c)
            segment.append(g)
        return cls(clause, segment)


def location_words(
    clauses: Clauses, mentions: list[ModifierMention], anchors: list[Anchor]
) -> set[int]:
    """Anchors that are only a location word of another finding in their clause.

    An anatomy mention lying wholly inside a location mention ("lobe", "lingula", "lung apices")
    is where a non-anatomy finding of the same clause is ("scarring at the lung apices"), not a
    finding of its own; with no such finding in the clause it stays ("lung bases are clear").
    """
    clause = clauses.clause
    with_finding = {clause[a.start] for a in anchors if not a.anatomy}
    return {
        i
        for i, a in enumerate(anchors)
        if a.anatomy
        and clause[a.start] in with_finding
        and any(
            m.category == "location" and m.start <= a.start and a.end <= m.end for m in mentions
        )
    }


def attach(
    doc: Doc, clauses: Clauses, mentions: list[ModifierMention], anchors: list[Anchor]
) -> list[list[ModifierMention]]:
    """For each anchor, the mentions attached to it (each mention goes to at most one anchor).

    A mention inside a finding's own words belongs to it ("Heart is mildly enlarged"), unless
    it is part of the concept's name ("pleural" in "pleural effusion"): then it attaches nowhere.
    A mention also goes to the findings coordinated with its anchor (see ``_coordinated``),
    except those that state their own value of its category: in "left lower lobe pneumonia and
    atelectasis in the right lung base" the right base is the atelectasis's only.
    """
    clause, segments = clauses.clause, clauses.segment
    attached: list[list[ModifierMention]] = [[] for _ in anchors]
    shared: list[tuple[ModifierMention, list[int]]] = []
    for m in mentions:
        inside = [i for i, a in enumerate(anchors) if a.start < m.end and m.start < a.end]
        if inside:
            anchor = anchors[inside[0]]
            if not set(m.text.lower().split()) <= anchor.name_words:
                attached[inside[0]].append(m)
            continue
        best: tuple[tuple[int, int, int, int], int] | None = None
        for i, a in enumerate(anchors):
            if clause[a.start] != clause[m.start]:
                continue
            after = m.start >= a.end
            gap = m.start - a.end if after else a.start - m.end
            key = (int(a.anatomy), int(segments[a.start] != segments[m.start]), gap, int(after))
            if best is None or key < best[0]:
                best = (key, i)
        if best is not None:
            after = bool(best[0][3])
            joiners = LIST_JOINERS if after else ALTERNATIVES
            attached[best[1]].append(m)
            shared.append((m, _coordinated(doc, mentions, anchors, best[1], after, joiners)))
    own = [{m.category for m in mods} for mods in attached]
    for m, others in shared:
        for i in others:
            if m.category not in own[i]:
                attached[i].append(m)
    return attached


def _coordinated(doc: Doc, mentions: list[ModifierMention], anchors: list[Anchor], first: int,
                 backward: bool, joiners: frozenset[str]) -> list[int]:
    """The non-anatomy anchors chained to ``anchors[first]`` (before it when ``backward``, else
    after it) with only ``joiners``, fillers and other modifier mentions between each pair:
    in "scarring or atelectasis in the left base" the location reaches scarring too."""
    covered = {t for m in mentions for t in range(m.start, m.end)}
    out: list[int] = []
    step = -1 if backward else 1
    near, i = first, first + step
    while 0 <= i < len(anchors) and not anchors[i].anatomy:
        lo, hi = (anchors[i].end, anchors[near].start) if backward else (
            anchors[near].end, anchors[i].start)
        between = [t for t in range(lo, hi) if t not in covered]
        words = [doc[t].lower_ for t in between if doc[t].lower_ not in FILLERS]
        if not words or any(w not in joiners for w in words):
            break
        out.append(i)
        near, i = i, i + step
    return out
