"""Negation-aware search for a phrase that names no lexicon concept ("no free air").

Candidates are the sentences holding every word of the phrase (BM25, best first); each is read
by the annotator's ConText rules with the phrase as the target. Ranked search keeps those that
mention the phrase in a way the query does not contradict, by search tier as concept search
does; cohorts keep those with the polarity (and context) the query asks for (``accepts``). Hits
say they were matched as text (``explanation["match"] == "text"``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from clinsearch.annotate.finding import Finding, Trigger, section_flags
from clinsearch.annotate.phrase import (
    PhraseQuery,
    Span,
    phrase_mentions,
    read_phrase_query,
    substring_spans,
)
from clinsearch.annotate.tiers import HEDGED, PARTIAL, STATED, TierOrder
from clinsearch.hit import Hit
from clinsearch.index.bm25 import BM25Searcher
from clinsearch.index.findings import SECTION_CATEGORY, SECTION_RULE
from clinsearch.search.aggregate import Scored, top_groups
from clinsearch.search.concept.ranking import (
    TIER_STEP,
    PolarityOptions,
    mention_tier,
    query_tiers,
    tier_levels,
)
from clinsearch.search.hit_builder import make_hits
from clinsearch.search.query_parser import ParsedQuery
from clinsearch.search.retriever import RankedUnits
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.index import IndexStore

TEXT_MATCH = "text"  # ``explanation["match"]`` of a hit matched as text
CONCEPT_MATCH = "concept"
MAX_GAP_WORDS = 3  # other words allowed between two words of the phrase in a sentence
_MIN_TIER_FETCH = 256  # BM25 sentences read at first: tiers order what has been read
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
                 sections: Mapping[str, str], tiers: TierOrder) -> None:
        """``sections``: the index's section meanings (lower-case name -> context flag);
        ``tiers``: the index's search tier order."""
        self.lookup = index.lookup
        self.bm25: BM25Searcher = index.component("bm25")
        self.annotator = annotator
        self.options = options
        self.sections = sections
        self.tiers = tiers

    def rank(self, query: PhraseQuery, level: Level, top: int, note: str = "") -> RankedUnits:
        """The ``top`` best units at ``level``: sentences mentioning the phrase in a way the
        query does not contradict, by tier (as concept search ranks them), then BM25; ``note``
        says why the query was searched as text; hits built when asked. Tiers order the
        candidates read so far: the first read is ``_MIN_TIER_FETCH`` BM25 sentences or
        more."""
        terms = self.bm25.terms(query.phrase)
        if not terms:
            return RankedUnits.of_hits([])
        names = query_tiers(self.tiers, query.context[0] if query.context else None)
        levels = {n: i for i, group in enumerate(tier_levels(names)) for n in group}
        read: dict[str, list[Finding]] = {}  # sentence text -> the phrase's mentions
        mentions: dict[tuple[str, str | None], Mention] = {}  # the best, per section

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
                    mentions[text, section] = _best_mention(
                        read[text], query, self.options, section, names, levels)
            keep = np.array([mentions[k].spans != () for k in found], dtype=bool)
            scale = float(ranked.scores.max()) if len(ranked.scores) else 1.0
            scores = ranked.scores[keep] / scale - TIER_STEP * np.array(
                [mentions[k].level for k, kept in zip(found, keep, strict=True) if kept])
            order = np.argsort(-scores, kind="stable")
            return Scored(scores[order], rows[keep][order], ranked.exhausted)

        first = max(top if level == "sentence" else 4 * top, _MIN_TIER_FETCH)
        best = top_groups(fetch, partial(self.lookup.groups, level, "sentence"), top, first)
        explanation = text_explanation(query, note)

        def build(positions: Sequence[int]) -> list[Hit]:
            at = np.asarray(positions, dtype=np.int64)
            shown = [mentions[k] for k in keys(best.rows[at])]
            return make_hits(self.lookup, level, best.scores[at], best.rows[at],
                             [m.spans for m in shown],
                             [explanation | m.explanation(self.tiers) for m in shown],
                             (at + 1).tolist())

        return RankedUnits.of_rows(self.lookup, level, best.scores, best.rows, build)


@dataclass(frozen=True, slots=True)
class Mention:
    """How a sentence mentions a phrase query, at best: the spans of its mentions in its best
    tier (none: no mention the query does not contradict), that tier, its score level and
    the trigger of its first mention there."""

    spans: tuple[Span, ...]
    tier: str = ""
    level: int = 0
    trigger: dict[str, Any] | None = None

    def explanation(self, tiers: TierOrder) -> dict[str, Any]:
        """The tier fields of a hit's explanation, as concept search gives them."""
        return {"tier": self.tier, "tier_label": tiers.label(self.tier), "trigger": self.trigger}


def _best_mention(found: list[Finding], query: PhraseQuery, options: PolarityOptions,
                  section: str | None, names: tuple[str, ...], levels: Mapping[str, int]
                  ) -> Mention:
    """The best ``Mention`` among a sentence's readings of the phrase (``section``: the flag
    its section gives)."""
    tiered = []
    for f in found:
        flags = (*f.context, *([section] if section else []))
        tier = mention_tier(f.polarity, flags, query, options, names)
        if tier is not None:
            tiered.append((levels[tier], tier, f))
    if not tiered:
        return Mention(())
    level, tier, _ = min(tiered, key=lambda t: t[0])
    best = [f for lv, _, f in tiered if lv == level]
    trigger = next((f.trigger for f in best if f.trigger is not None), None)
    if trigger is None and section and tier not in (STATED, PARTIAL, HEDGED):
        trigger = Trigger(SECTION_RULE, SECTION_CATEGORY, section, None, None)
    shown = None if trigger is None else {
        "text": trigger.text, "rule": trigger.rule, "category": trigger.category}
    return Mention(tuple((f.start, f.end) for f in best), tier, level, shown)


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

