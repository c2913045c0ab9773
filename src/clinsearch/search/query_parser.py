"""Query understanding: a free-text query becomes finding patterns through the same annotator.

"right lower lobe pneumonia" -> ``disease|present|pneumonia|right|lower lobe``; "no pneumothorax"
-> absent; "enlarged heart" -> cardiomegaly through the lexicon's synonyms. Alternatives joined
by "or" form separate pattern groups. Query words the lexicon does not know are mapped to the
nearest lexicon terms by embedding similarity; a close enough term replaces them before the
query is annotated again, and every mapping is reported for ``clinsearch explain-query``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from clinsearch.annotate.context_cues import WORD
from clinsearch.annotate.finding import Finding
from clinsearch.search.vocabulary import Encoder, LexTerm, TermVectors, lexicon_terms

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator

ANATOMY = "anatomy"
# Cosine above which an unknown phrase is replaced by its nearest term: the lowest threshold at
# which at most 10% of words the lexicon does not know get mapped
# (benchmarks/experiments/bench_map_threshold.py; 0.62 before mapped "dextrocardia" to
# scoliosis). Such mappings are approximate.
MAP_THRESHOLD = 0.80
NEAREST = 3
PARSE_MEMO = 4096  # parsed queries remembered (hybrid, concept and filters parse the same text)
_OR = re.compile(r"\s+(?:or|/)\s+|\s*;\s*", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")


@dataclass(frozen=True, slots=True)
class TermMapping:
    """An unknown query phrase and its nearest lexicon terms (cosine similarity)."""

    phrase: str
    start: int
    end: int
    nearest: tuple[tuple[LexTerm, float], ...]
    used: bool  # the best term replaced the phrase (similarity >= MAP_THRESHOLD)


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """Finding-pattern groups of a query: a candidate must match one group (OR) as a whole.

    ``sites`` holds, per group, the anatomy the query names beside its findings ("spine
    osteopenia"): a candidate matches such a part when its sentence mentions that anatomy.
    """

    text: str
    groups: tuple[tuple[Finding, ...], ...]
    mappings: tuple[TermMapping, ...]
    sites: tuple[tuple[Finding, ...], ...] = ()
    approximate: frozenset[str] = frozenset()  # concepts that only an embedding mapping gave

    @property
    def patterns(self) -> list[str]:
        """Every query pattern, group by group."""
        return [f.pattern for group in self.groups for f in group]


class QueryParser:
    """Parses queries with an annotator; term vectors are loaded on first need."""

    def __init__(self, annotator: Annotator, encoder: Encoder,
                 cache_dir: Path | None = None) -> None:
        self.annotator = annotator
        self.encoder = encoder
        self._cache_dir = cache_dir
        self._parsed: dict[tuple[str, bool], ParsedQuery] = {}
        self._states: dict[str, _PartState] = {}  # per alternative: as either reading needs

    @cached_property
    def vectors(self) -> TermVectors:
        """The lexicon's term vectors under the parser's encoder (cached on disk)."""
        return TermVectors.for_lexicon(self.annotator.lexicon, self.encoder, self._cache_dir)

    @cached_property
    def known_words(self) -> frozenset[str]:
        """Words never treated as unknown: function words, ConText cues, one-word lexicon terms."""
        from spacy.lang.en.stop_words import STOP_WORDS

        terms = {t.text.lower() for t in lexicon_terms(self.annotator.lexicon)}
        return frozenset({*STOP_WORDS, *self.annotator.context.cue_words, *terms})

    def parse(self, text: str, *, map_unknown: bool = True) -> ParsedQuery:
        """The query's pattern groups and the mappings of its unknown words.

        With ``map_unknown=False`` unknown words are reported with their nearest terms but
        never replaced (cohort queries stay exactly as written).
        """
        return self.parse_many([text], map_unknown=map_unknown)[0]

    def parse_many(self, texts: Sequence[str], *, map_unknown: bool = True
                   ) -> list[ParsedQuery]:
        """``parse`` for each text; the parts of the texts not parsed before (either way) are
        annotated in one batch, their unknown words embedded in another (and remembered, up to
        PARSE_MEMO: a served search parses its query for the ranking and, without mapping, for
        the polarities it states)."""
        memo = self._parsed
        done = {t: memo[(t, map_unknown)] for t in texts if (t, map_unknown) in memo}
        todo = [t for t in dict.fromkeys(texts) if t not in done]
        fixed = [self.abbreviation_case(t) for t in todo]
        split = [_parts(t) for t in fixed]
        states = self._part_states([p for parts in split for p, _ in parts])
        for text, cased, parts in zip(todo, fixed, split, strict=True):
            done[text] = self._parse(cased, parts, [states[p] for p, _ in parts], map_unknown)
        if len(self._parsed) + len(todo) > PARSE_MEMO:
            self._parsed.clear()
        self._parsed.update(((t, map_unknown), done[t]) for t in todo)
        return [done[t] for t in texts]

    def _part_states(self, parts: list[str]) -> dict[str, _PartState]:
        """Each query alternative's findings, spans to map, whether it only describes anatomy,
        and the spans' vectors: those not seen before annotated and embedded in one batch each."""
        known = self._states
        seen = {p: known.get(p) for p in dict.fromkeys(parts)}  # .get: another thread may clear
        out = {p: state for p, state in seen.items() if state is not None}
        new = [p for p in seen if p not in out]
        annotated = list(self.annotator.annotate_many(new))
        unknown = [self._unknown(p, found) for p, found in zip(new, annotated, strict=True)]
        phrases = [p[s:e] for p, (runs, _) in zip(new, unknown, strict=True) for s, e in runs]
        vectors = iter(self.encoder.encode_queries(phrases) if phrases else ())
        if len(known) + len(new) > PARSE_MEMO:
            known.clear()
        for part, found, (runs, described) in zip(new, annotated, unknown, strict=True):
            out[part] = known[part] = (found, runs, described, [next(vectors) for _ in runs])
        return out

    def _parse(self, text: str, parts: list[tuple[str, int]], states: list[_PartState],
               map_unknown: bool) -> ParsedQuery:
        groups: list[tuple[Finding, ...]] = []
        sites: list[tuple[Finding, ...]] = []
        mappings: list[TermMapping] = []
        approximate: set[str] = set()
        for (part, start), state in zip(parts, states, strict=True):
            exact = state[0]
            findings, mapped = self._parse_part(part, start, state, map_unknown)
            mappings += mapped
            if any(m.used for m in mapped):
                approximate |= {f.concept for f in findings} - {f.concept for f in exact}
            main = [f for f in findings if f.type != ANATOMY] or findings
            if main:
                groups.append(tuple(main))
                sites.append(_sites(findings, main))
        return ParsedQuery(text, tuple(groups), tuple(mappings), tuple(sites),
                           frozenset(approximate))

    @cached_property
    def _abbreviations(self) -> dict[str, str]:
        """Lexicon abbreviations by lower-case form, except ordinary words (``plain_words``)."""
        lexicon = self.annotator.lexicon
        out: dict[str, str] = {}
        for concept in lexicon.concepts.values():
            for abbreviation in concept.abbreviations:
                lower = abbreviation.lower()
                if lower not in lexicon.plain_words:
                    out.setdefault(lower, abbreviation)
        return out

    def abbreviation_case(self, text: str) -> str:
        """``text`` with query words that are lexicon abbreviations in another case written in
        the lexicon's case ("copd" -> "COPD"); offsets are unchanged."""
        def fix(m: re.Match[str]) -> str:
            word = m.group()
            for stem, tail in ((word, ""), (word[:-1], word[-1:])):  # plural "ptxs"
                known = self._abbreviations.get(stem.lower())
                if known is not None and (tail == "" or tail.lower() == "s"):
                    return known + tail
            return word

        return _WORD.sub(fix, text)

    def _unknown(self, part: str, findings: list[Finding]
                 ) -> tuple[list[tuple[int, int]], bool]:
        """The spans of a query part to map by embedding, and whether the part only describes
        anatomy ("heart is big", "water on the lung": then the whole phrase is mapped)."""
        runs = self._unknown_runs(part, findings)
        if _anatomy_described(findings, runs):
            return [(len(part) - len(part.lstrip()), len(part.rstrip()))], True
        return runs, False

    def _parse_part(self, part: str, base: int, state: _PartState, map_unknown: bool
                    ) -> tuple[list[Finding], list[TermMapping]]:
        """The findings of one alternative of a query after mapping its unknown words, and the
        mappings; ``state``: its findings, the spans to map, whether it only describes
        anatomy, and the spans' vectors."""
        findings, runs, described, embedded = state
        if not runs:
            return findings, []
        mappings: list[TermMapping] = []
        rewritten = part
        for (s, e), vec in sorted(zip(runs, embedded, strict=True), key=lambda r: -r[0][0]):
            nearest = tuple(self.vectors.nearest(vec, NEAREST))
            used = map_unknown and nearest[0][1] >= MAP_THRESHOLD
            if used:
                rewritten = rewritten[:s] + nearest[0][0].text + rewritten[e:]
            mappings.append(TermMapping(part[s:e], base + s, base + e, nearest, used))
        mappings.reverse()
        if rewritten != part:
            findings = self.annotator.annotate(rewritten)
        elif described:
            findings = []  # no finding close enough: the anatomy alone is not what was asked
        return findings, mappings

    def _unknown_runs(self, part: str, findings: list[Finding]) -> list[tuple[int, int]]:
        """Character spans of consecutive content words covered by no finding or modifier."""
        covered = [(f.start, f.end) for f in findings]
        covered += [(m.start, m.end) for f in findings for m in f.modifiers]
        runs: list[tuple[int, int]] = []
        last_end = -1
        for m in WORD.finditer(part):
            word = m.group().lower()
            inside = any(s <= m.start() < e for s, e in covered)
            if inside or word in self.known_words or len(word) < 3:
                last_end = -1
                continue
            if runs and last_end >= 0 and part[last_end : m.start()].strip() == "":
                runs[-1] = (runs[-1][0], m.end())
            else:
                runs.append((m.start(), m.end()))
            last_end = m.end()
        return runs


_PartState = tuple[list[Finding], list[tuple[int, int]], bool, list[np.ndarray]]


def _parts(text: str) -> list[tuple[str, int]]:
    """The alternatives of a query ("X or Y", "X; Y") with their offsets."""
    out = []
    offset = 0
    for part in _OR.split(text):
        start = text.index(part, offset) if part else offset
        offset = start + len(part)
        out.append((part, start))
    return out


def _anatomy_described(findings: list[Finding], unknown: list[tuple[int, int]]) -> bool:
    """Whether a query part names only anatomy, with a severity word or a word the lexicon
    does not know ("heart is big", "water on the lung"): a finding described in words the
    lexicon lacks, not the anatomy itself."""
    return bool(findings) and all(f.type == ANATOMY for f in findings) and (
        bool(unknown) or any(m.category == "severity" for f in findings for m in f.modifiers))


def _sites(findings: list[Finding], main: list[Finding]) -> tuple[Finding, ...]:
    """Anatomy findings beside the main ones, except those inside a modifier ("lower lobe")."""
    spans = [(m.start, m.end) for f in main for m in f.modifiers]
    return tuple(
        f for f in findings
        if f not in main and not any(s < f.end and f.start < e for s, e in spans)
    )
