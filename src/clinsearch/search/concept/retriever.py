"""Concept search (``--method concept``): finding patterns matched against the concept index.

The query is parsed into finding patterns, candidates come from the concept postings, sentences
are ranked by pattern completeness (ties by pattern similarity) and lifted to report, visit and
patient by their best sentence. Each hit explains which query parts its sentence matched.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from clinsearch.annotate.phrase import check_phrase_words, read_phrase_query
from clinsearch.hit import Hit
from clinsearch.index.component import sentence_codes, sentence_parts
from clinsearch.index.concept_postings import ConceptIndex
from clinsearch.search.aggregate import Scored, top_groups
from clinsearch.search.concept.modifier_relations import modifier_categories
from clinsearch.search.concept.ranking import (
    ConceptRanker,
    PartMatch,
    PolarityOptions,
    Ranking,
    parse_context,
)
from clinsearch.search.concept.tools import (
    index_concept_tools,
    index_section_contexts,
    index_tier_order,
)
from clinsearch.search.hit_builder import make_hits
from clinsearch.search.phrase import CONCEPT_MATCH, PhraseSearch, text_reason
from clinsearch.search.query_parser import ParsedQuery
from clinsearch.search.retriever import RankedUnits
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore

WORDING_DEPTH = 500  # BM25 sentences fetched for the wording tie-break
KEPT_RANKINGS = 8  # the rankings of the last queries, kept for their tier counts



class ConceptRetriever:
    """Ranks sentences by how completely their findings match the query's finding patterns."""

    def __init__(self, index: IndexStore, *, include_uncertain: bool = False,
                 polarity: str = "query", term_model: str | Path | None = None,
                 context: str | None = None) -> None:
        """``term_model``: the term encoder folder (default: the index's, else MiniLM);
        ``context``: context flags also admitted, e.g. "historical,family" or "any"."""
        self.lookup = index.lookup
        tools = index_concept_tools(index, term_model)
        self.parser = tools.parser
        concepts: ConceptIndex = index.component("concepts")
        self.ranker = ConceptRanker(concepts, tools.hierarchy, tools.pattern_vectors(),
                                    modifier_categories(tools.lexicon), index_tier_order(index))
        self.options = PolarityOptions(include_uncertain, polarity, parse_context(context))
        self.phrases = PhraseSearch(index, self.parser.annotator, self.options,
                                    index_section_contexts(index), self.ranker.tiers)
        self.bm25 = index.component("bm25")
        self._rankings: OrderedDict[str, Ranking] = OrderedDict()  # see ``_ranking``
        self._lock = threading.Lock()

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` for ``query`` (at most MAX_PHRASE_WORDS words:
        refused before it is parsed, as it may be searched as a phrase)."""
        return self.rank(query, level, top).hits()

    def rank(self, query: str, level: Level, top: int) -> RankedUnits:
        """The ``top`` best units at ``level`` for ``query``; their hits (matched parts, marked
        sentence, tier) are built when asked."""
        check_phrase_words(query)
        parsed = self.parser.parse(query)
        why = text_reason(parsed)
        if why:
            phrase = read_phrase_query(self.parser.annotator, query)
            return (self.phrases.rank(phrase, level, top, why) if phrase.phrase
                    else RankedUnits.of_hits([]))
        ranking = self._ranking(query, parsed)

        def fetch(n: int) -> Scored:
            codes, scores = ranking.top(n)
            return Scored(scores, self.lookup.sentence_rows(*sentence_parts(codes)),
                          n >= len(ranking))

        best = top_groups(
            fetch,
            partial(self.lookup.groups, level, "sentence"),
            top,
        )

        def build(positions: Sequence[int]) -> list[Hit]:
            at = np.asarray(positions, dtype=np.int64)
            rows = best.rows[at]
            codes = sentence_codes(*self.lookup.sentence_keys(rows))
            parts = [ranking.parts(code) for code in codes.tolist()]
            texts = self.lookup.sentence_texts.take(rows)  # one read for every hit
            starts = self.lookup.sentence_starts.take(rows)
            marks = [self._marks(text, int(start), p)
                     for text, start, p in zip(texts, starts, parts, strict=True)]
            tiers = ranking.tier(codes)
            return make_hits(
                self.lookup, level, best.scores[at], rows,
                [tuple((s, e) for s, e, _ in m) for m in marks],
                [self._explain(parsed, text, p, m) | self._tier(t)
                 for text, p, m, t in zip(texts, parts, marks, tiers, strict=True)],
                (at + 1).tolist(),
            )

        return RankedUnits.of_rows(self.lookup, level, best.scores, best.rows, build)

    def tier_units(self, query: str, level: Level) -> list[tuple[str, np.ndarray]]:
        """The units at ``level`` (group numbers, sorted) the query finds in each tier (by
        their best sentence), strongest tier first, tiers without any left out; [] for a query
        searched as text."""
        parsed = self.parser.parse(query)
        if text_reason(parsed):
            return []
        ranking = self._ranking(query, parsed)

        def unit_of(codes: np.ndarray) -> np.ndarray:
            keys, indexes = sentence_parts(codes)
            if level == "sentence":
                return self.lookup.sentence_rows(keys, indexes)
            return self.lookup.groups(level, "report", self.lookup.report_rows(keys))

        units, positions = ranking.unit_tiers(unit_of)
        return [(name, units[positions == i]) for i, name in enumerate(ranking.tiers)
                if bool((positions == i).any())]

    def _ranking(self, query: str, parsed: ParsedQuery) -> Ranking:
        """The ranking of ``query`` (parsed as ``parsed``), kept for the next few asks: a
        served search and its tier counts rank the same query once."""
        with self._lock:
            if query in self._rankings:
                self._rankings.move_to_end(query)
                return self._rankings[query]
        ranking = self.ranker.rank(parsed, self.options, self._wording(query))
        with self._lock:
            self._rankings[query] = ranking
            while len(self._rankings) > KEPT_RANKINGS:
                self._rankings.popitem(last=False)
        return ranking

    def _tier(self, name: str) -> dict[str, str]:
        """A hit's tier as explanation fields: its name and label."""
        return {"tier": name, "tier_label": self.ranker.tiers.label(name)}

    def _wording(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """BM25 of the query per sentence code, scaled to 0..1 (sentence codes, scores): a
        tie-break beside pattern similarity, so that of equally complete matches the one worded
        like the query comes first ("hydroureter" before "dilated distal ureter")."""
        ranked = self.bm25.search("sentences", self.bm25.terms(query), WORDING_DEPTH)
        if not len(ranked.scores):
            return np.zeros(0, np.int64), np.zeros(0)
        codes = sentence_codes(ranked.report_keys, ranked.sentence_indexes)
        return codes, (ranked.scores / float(ranked.scores.max())).astype(float)

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """``search`` for each query in turn (their finding patterns parsed in one batch)."""
        return [ranked.hits() for ranked in self.rank_many(queries, level, top)]

    def rank_many(self, queries: Sequence[str], level: Level, top: int) -> list[RankedUnits]:
        """``rank`` for each query in turn (their finding patterns parsed in one batch)."""
        for query in queries:
            check_phrase_words(query)
        self.parser.parse_many(queries)
        return [self.rank(query, level, top) for query in queries]

    def _marks(self, text: str, base: int, parts: tuple[PartMatch, ...]
               ) -> list[tuple[int, int, str]]:
        """Spans in the sentence ``text`` (at offset ``base`` of its report) of the matched
        findings and their modifiers: (start, end, what)."""
        idx = self.ranker.index
        out = []
        for part in parts:
            out += [(s - base, e - base, what or part.query.name)
                    for s, e, what in idx.spans(part.row)
                    if 0 <= s - base < e - base <= len(text)]
        return sorted(set(out))

    def _explain(self, parsed: ParsedQuery, text: str, parts: tuple[PartMatch, ...],
                 marks: list[tuple[int, int, str]]) -> dict[str, Any]:
        """Which query parts the sentence ``text`` matched, and the sentence with them marked."""
        idx = self.ranker.index
        matched, names = [], []
        mapped = {c: m.phrase for m in parsed.mappings if m.used
                  for c in parsed.approximate}
        for part in parts:
            code = idx.pattern_of(part.row)
            names.append(idx.patterns[code].name)
            entry = {
                "query_pattern": part.query.pattern,
                "finding_start": idx.spans(part.row)[0][0],  # in the report: finds its trigger
                "pattern": idx.patterns[code].text,
                **part.match.explain(),
                "similarity": round(part.similarity, 4),
            }
            if part.query.concept in parsed.approximate:  # never "exact": a guess from words
                entry["concept"] = "approximate"
                entry["mapped_from"] = mapped.get(part.query.concept, "")
            matched.append(entry)
        return {
            "method": "concept",
            "match": CONCEPT_MATCH,
            "query_patterns": parsed.patterns,
            "mapped_words": [
                {"phrase": m.phrase, "to": m.nearest[0][0].text,
                 "similarity": round(m.nearest[0][1], 4)}
                for m in parsed.mappings if m.used
            ],
            "matched": matched,
            "summary": "; ".join(_summary(n, m) for n, m in zip(names, matched, strict=True)),
            "marked": _marked(text, marks),
        }


def _summary(name: str, m: dict[str, Any]) -> str:
    """One line per matched part (``name``: the finding's concept name), e.g.
    ``pneumonia exact, present, right ✓, lower lobe ✗``."""
    parts = [f"{name} {m['concept']}",
             "polarity ✓" if m["polarity"] else "polarity ✗"]
    scored = {**m["modifiers"], **m.get("anatomy", {})}
    parts += [f"{v} {'✓' if s == 1 else '½' if s > 0 else '✗'}" for v, s in scored.items()]
    return ", ".join(parts)


def _marked(text: str, marks: list[tuple[int, int, str]]) -> str:
    """``text`` with each matched span wrapped in square brackets."""
    out, pos = [], 0
    for start, end, _ in sorted(marks):
        if start < pos:
            continue
        out += [text[pos:start], "[", text[start:end], "]"]
        pos = end
    out.append(text[pos:])
    return "".join(out)
