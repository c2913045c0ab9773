"""Negation-aware search for a phrase that names no lexicon concept ("no free air").

Candidates are the sentences holding every word of the phrase (BM25, best first); each is read
by the annotator's ConText rules with the phrase as the target, and kept when the phrase is
mentioned there with the polarity (and context) the query asks for. Hits say they were matched
as text (``explanation["match"] == "text"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from clinsearch.annotate.finding import Finding, section_flags
from clinsearch.annotate.phrase import (
    PhraseQuery,
    Span,
    phrase_mentions,
    read_phrase_query,
    substring_spans,
)
from clinsearch.hit import Hit
from clinsearch.index.bm25 import BM25Searcher
from clinsearch.search.aggregate import Scored, top_groups
from clinsearch.search.concept.ranking import PolarityOptions
from clinsearch.search.hit_builder import make_hits
from clinsearch.search.query_parser import ParsedQuery
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.index import IndexStore

TEXT_MATCH = "text"  # ``explanation["match"]`` of a hit matched as text
CONCEPT_MATCH = "concept"
MAX_GAP_WORDS = 3  # other words allowed between two words of the phrase in a sentence
_MIN_FIRST_FETCH = 64
_WORD = re.compile(r"\w+")


def accepts(finding: Finding, query: PhraseQuery, options: PolarityOptions,
            section: str | None = None, required: tuple[str, ...] = ()) -> bool:
    """Whether a mention answers the query: an accepted polarity, and the context flags the
    query itself states ("history of ..." asks for a historical mention, as the cohort filter
    ``context:historical`` does) and ``required`` names ("any": none), or, when neither names
    one, no flag beyond those the options admit. ``section``: the flag the mention's section
    gives (the reason for the exam: ``indication``), as the index gives it to the findings
    there."""
    flags = {*finding.context, *([section] if section else [])}
    needed = {*query.context, *(c for c in required if c != "any")}
    narrowed = bool(query.context or required)
    return (finding.polarity in options.allowed(query.polarity)
            and (needed <= flags if narrowed else flags <= set(options.context)))


def term_spans(bm25: BM25Searcher, text: str, terms: Sequence[str]) -> list[Span]:
    """Where the phrase's analysed ``terms`` occur together in ``text``: runs of matching words,
    at most ``MAX_GAP_WORDS`` other words apart, that hold every term."""
    wanted = set(terms)
    found = bm25.matches(text, wanted)
    out: list[Span] = []
    i = 0
    while i < len(found):
        seen = {found[i][2]}
        j = i
        while seen != wanted and j + 1 < len(found) and _gap(text, found[j][1],
                                                               found[j + 1][0]) <= MAX_GAP_WORDS:
            j += 1
            seen.add(found[j][2])
        if seen == wanted:
            out.append((found[i][0], found[j][1]))
            i = j + 1
        else:
            i += 1
    return out


def text_reason(parsed: ParsedQuery) -> str:
    """Why a query is searched as a phrase rather than by concept ("" when it is not): it
    names no lexicon finding, or some of its words are neither in the lexicon nor mapped to
    it (reading only the rest would answer another question: "urinary tract infection" is
    not an "infection" of the lungs)."""
    if not parsed.groups:
        return "no lexicon finding in the query: searched as text, negation read by ConText"
    unread = [m.phrase for m in parsed.mappings if not m.used]
    if unread:
        words = ", ".join(f"'{w}'" for w in unread)
        return f"{words} not in the lexicon: the query searched as text, negation read by ConText"
    return ""


def _gap(text: str, end: int, start: int) -> int:
    """How many words lie between two matched words."""
    return len(_WORD.findall(text[end:start]))


class PhraseSearch:
    """Phrase queries over an index's sentences, polarity read by ConText."""

    def __init__(self, index: IndexStore, annotator: Annotator, options: PolarityOptions,
                 sections: Mapping[str, str]) -> None:
        """``sections``: the index's section meanings (lower-case name -> context flag)."""
        self.lookup = index.lookup
        self.bm25: BM25Searcher = index.component("bm25")
        self.annotator = annotator
        self.options = options
        self.sections = sections

    def search(self, query: PhraseQuery, level: Level, top: int,
               note: str = "") -> list[Hit]:
        """The ``top`` best hits at ``level``: sentences mentioning the phrase as asked, ranked
        by BM25; ``note`` says why the query was searched as text."""
        terms = self.bm25.terms(query.phrase)
        if not terms:
            return []
        read: dict[str, list[Finding]] = {}  # sentence text -> the phrase's mentions
        mentions: dict[tuple[str, str | None], list[Span]] = {}  # ... accepted, per section

        def keys(rows: np.ndarray) -> list[tuple[str, str | None]]:
            """Each row's text and the flag its section gives."""
            return list(zip(self.lookup.sentence_texts.take(rows), section_flags(
                self.sections, self.lookup.sentence_sections.take(rows)), strict=True))

        def fetch(n: int) -> Scored:
            ranked = self.bm25.search("sentences", terms, n, require_all=True)
            rows = self.lookup.sentence_rows(ranked.report_keys, ranked.sentence_indexes)
            found = keys(rows)
            new = [t for t in dict.fromkeys(t for t, _ in found) if t not in read]
            spans = [term_spans(self.bm25, t, terms) for t in new]
            read.update(zip(new, phrase_mentions(self.annotator, new, spans), strict=True))
            for text, section in found:
                if (text, section) not in mentions:
                    mentions[text, section] = [(f.start, f.end) for f in read[text]
                                               if accepts(f, query, self.options, section)]
            keep = np.array([bool(mentions[k]) for k in found], dtype=bool)
            return Scored(ranked.scores[keep], rows[keep], ranked.exhausted)

        first = top if level == "sentence" else max(4 * top, _MIN_FIRST_FETCH)
        best = top_groups(fetch, partial(self.lookup.groups, level, "sentence"), top, first)
        shown = keys(best.rows)
        explanation = text_explanation(query, note)
        return make_hits(self.lookup, level, best.scores, best.rows,
                         [tuple(mentions[k]) for k in shown], [explanation] * len(shown))


def text_explanation(query: PhraseQuery, note: str = "") -> dict[str, Any]:
    """How a hit matched as text: the phrase, the polarity asked, and why (``note``)."""
    context = f" ({', '.join(query.context)})" if query.context else ""
    summary = f'matched as text: "{query.phrase}" {query.polarity}{context}'
    out: dict[str, Any] = {"method": "concept", "match": TEXT_MATCH, "phrase": query.phrase,
                           "polarity": query.polarity, "context": list(query.context),
                           "summary": summary}
    if note:
        out["fallback"] = note
    return out


def phrase_sentences(annotator: Annotator, options: PolarityOptions,
                     containing: Callable[[str], np.ndarray],
                     texts_of: Callable[[np.ndarray], list[str]],
                     sections_of: Callable[[np.ndarray], list[str | None]],
                     text: str, required: tuple[str, ...] = ()) -> np.ndarray:
    """The sentences (ids of ``containing``'s numbering) that mention the phrase query ``text``
    as asked: candidates hold the phrase (``containing``, case-insensitive), each read by
    ConText with its occurrences as targets, with the flag its section gives (``sections_of``,
    per row). ``required`` context flags ("historical"; "any": whatever context) replace the
    default: mentions must carry them and those the query states."""
    query = read_phrase_query(annotator, text)
    if not query.phrase:
        return np.zeros(0, np.int64)
    rows = containing(query.phrase)
    texts = texts_of(rows)
    unique = list(dict.fromkeys(texts))
    spans = [substring_spans(t, query.phrase) for t in unique]
    read = dict(zip(unique, phrase_mentions(annotator, unique, spans), strict=True))
    found = list(zip(texts, sections_of(rows), strict=True))
    verdict = {(t, section): any(accepts(f, query, options, section, required) for f in read[t])
               for t, section in dict.fromkeys(found)}
    return rows[np.array([verdict[k] for k in found], dtype=bool)] if texts else rows

