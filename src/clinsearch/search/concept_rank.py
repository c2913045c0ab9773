"""Rank sentences by how completely their finding patterns match the query's patterns.

Candidates come from the concept postings (the query concept, its descendants, and its near
ancestors), filtered by polarity; each distinct candidate pattern is scored once by
``patterns.match`` and, to break ties, by the cosine between the query pattern's and the
candidate pattern's mean term vectors (paper 001, 3.5-3.6).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from clinsearch.annotate.finding import POLARITIES, Finding
from clinsearch.index.concepts import ConceptIndex
from clinsearch.search.patterns import Hierarchy, PatternMatch, match
from clinsearch.search.query import ParsedQuery
from clinsearch.search.vocabulary import TermVectors

TIE_WEIGHT = 0.001  # similarity can reorder equally complete candidates, never others
BROADER_DEPTH = 2  # ancestors up to this distance are candidates (partial concept match)
POLARITY_MODES = ("query", "any")


@dataclass(frozen=True, slots=True)
class PolarityOptions:
    """Which polarities a query pattern accepts: its own (default), plus uncertain, or any."""

    include_uncertain: bool = False
    polarity: str = "query"  # "query": the polarity the query states; "any": all three

    def allowed(self, query_polarity: str) -> tuple[str, ...]:
        """The candidate polarities accepted for a query pattern of ``query_polarity``."""
        if self.polarity == "any":
            return POLARITIES
        if self.include_uncertain and query_polarity != "uncertain":
            return (query_polarity, "uncertain")
        return (query_polarity,)


DEFAULT_POLARITY = PolarityOptions()


@dataclass(frozen=True, slots=True)
class PartMatch:
    """The best finding of a sentence for one query pattern."""

    query: Finding
    row: int  # row in the findings table
    match: PatternMatch
    similarity: float


@dataclass(frozen=True, slots=True)
class SentenceScore:
    """A ranked sentence: completeness (plus tie-break) and the parts of its best group."""

    sentence_id: str
    score: float
    parts: tuple[PartMatch, ...]


class ConceptRanker:
    """Scores candidate findings against parsed queries over one loaded concept index."""

    def __init__(self, index: ConceptIndex, hierarchy: Hierarchy,
                 vectors: TermVectors | None) -> None:
        self.index = index
        self.hierarchy = hierarchy
        self.vectors = vectors
        self._pattern_vectors: dict[int, np.ndarray] = {}

    def rank(self, query: ParsedQuery, options: PolarityOptions = DEFAULT_POLARITY
             ) -> list[SentenceScore]:
        """Sentences with at least one candidate finding, best first (ties by sentence id)."""
        best: dict[int, tuple[float, tuple[PartMatch, ...]]] = {}
        for group in query.groups:
            per_pattern = [self._best_per_sentence(q, options) for q in group]
            sentences = set().union(*per_pattern)
            for s in sentences:
                parts = tuple(p[s] for p in per_pattern if s in p)
                score = sum(_value(p) for p in parts) / len(group)
                if s not in best or score > best[s][0]:
                    best[s] = (score, parts)
        ids = self.index.sentence_ids
        ranked = [SentenceScore(ids[s], score, parts) for s, (score, parts) in best.items()]
        ranked.sort(key=lambda r: (-r.score, r.sentence_id))
        return ranked

    def candidates(self, concept: str) -> np.ndarray:
        """Finding rows of the concept, its descendants and its ancestors up to BROADER_DEPTH."""
        rows = [self.index.lookup(concept).rows]
        for ancestor, depth in self.hierarchy.ancestors(concept).items():
            if 0 < depth <= BROADER_DEPTH:
                rows.append(self.index.lookup(ancestor, exact=True).rows)
        return np.concatenate(rows)

    def _best_per_sentence(self, q: Finding, options: PolarityOptions) -> dict[int, PartMatch]:
        """For each candidate sentence, the best-scoring finding for query pattern ``q``."""
        rows = self.candidates(q.concept)
        codes = self.index.pattern_code[rows]
        keep = np.isin(self.index.pattern_polarity[codes], options.allowed(q.polarity))
        rows, codes = rows[keep], codes[keep]
        if not len(rows):
            return {}
        unique, inverse = np.unique(codes, return_inverse=True)
        qvec = self._query_vector(q)
        scored = [self._score(q, int(code), qvec) for code in unique]
        values = np.array([_value(p) for p in scored])[inverse]
        sentences = self.index.sentence_code[rows]
        order = np.lexsort((rows, -values, sentences))  # per sentence: best value, then first row
        first = np.ones(len(order), dtype=bool)
        first[1:] = sentences[order][1:] != sentences[order][:-1]
        out: dict[int, PartMatch] = {}
        for i in order[first]:
            proto = scored[inverse[i]]
            out[int(sentences[i])] = PartMatch(q, int(rows[i]), proto.match, proto.similarity)
        return out

    def _score(self, q: Finding, code: int, qvec: np.ndarray | None) -> PartMatch:
        idx = self.index
        m = match(q, idx.pattern_concept[code], idx.pattern_polarity[code],
                  idx.pattern_modifiers[code], self.hierarchy)
        sim = 0.0 if qvec is None else float(qvec @ self._pattern_vector(code))
        return PartMatch(q, -1, m, sim)

    def _query_vector(self, q: Finding) -> np.ndarray | None:
        return None if self.vectors is None else self.vectors.mean(_parts(q.pattern))

    def _pattern_vector(self, code: int) -> np.ndarray:
        if code not in self._pattern_vectors:
            assert self.vectors is not None
            self._pattern_vectors[code] = self.vectors.mean(_parts(self.index.patterns[code]))
        return self._pattern_vectors[code]


def _parts(pattern: str) -> Sequence[str]:
    return pattern.split("|")


def _value(part: PartMatch) -> float:
    return part.match.score + TIE_WEIGHT * part.similarity
