"""Rank sentences by how completely their finding patterns match the query's patterns.

Candidates come from the concept postings (the query concept, its descendants, and its near
ancestors): every mention the query's polarity does not contradict. Each falls in a search tier
(``annotate.tiers``: stated now, hedged, the reason for the exam, historical, ...), and tiers
rank first: a sentence scores ``TIER_STEP`` per tier below its own plus its completeness, save
that stated now with some modifiers and hedged, when they follow stated now, share its step
(``score_levels``): completeness orders them, and a hedge earns half the polarity part. Each
distinct candidate pattern is scored once by ``patterns.match`` and, to break ties, by the
cosine between the query pattern's and the candidate pattern's mean term vectors
([SyedaMahmood2021], 3.5-3.6) together with the query's wording in the sentence (BM25).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from clinsearch.annotate.finding import CONTEXTS, POLARITIES, Finding, modifier_values
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.annotate.tiers import HEDGED, PARTIAL, STATED, TierOrder, tier_order
from clinsearch.errors import ClinsearchError
from clinsearch.index.component import sentence_parts
from clinsearch.index.concept_postings import ConceptIndex, context_flags, flag_bits
from clinsearch.search.concept.modifier_relations import ELSEWHERE_CREDIT, UNSTATED_CREDIT
from clinsearch.search.concept.patterns import PatternMatch, matcher
from clinsearch.search.query_parser import ParsedQuery
from clinsearch.search.vocabulary import TermVectors

if TYPE_CHECKING:
    from clinsearch.annotate.phrase import PhraseQuery

TIE_WEIGHT = 0.001  # similarity can reorder equally complete candidates, never others
WORDING_WEIGHT = TIE_WEIGHT  # so can wording (BM25), as much as similarity
BROADER_DEPTH = 2  # ancestors up to this distance are candidates (partial concept match)
MEMO_LIMIT = 200_000  # memoised (query pattern, candidate pattern) scores kept at most
# A query part that only an embedding mapping gave ("cardiomegally" -> cardiomegaly) counts this
# much: its hits rank below every true match of the same completeness.
APPROXIMATE_CREDIT = 0.5
# Score distance between two tiers: more than any completeness with its tie-breaks (about 0..1),
# so a tier's worst sentence still ranks above the next tier's best. The first tier scores its
# completeness, each later one TIER_STEP less; stated now with some asked modifiers, and hedged,
# share a step with stated now when they follow it (``score_levels``: completeness orders them).
TIER_STEP = 2.0
COMPLETE = 1 - 1e-9  # completeness at which every asked part (modifiers too) matched


@dataclass(frozen=True, slots=True)
class PolarityOptions:
    """Which findings a query pattern accepts: its polarity (default), plus uncertain, or any;
    asserted findings only (default), or also those in the ``context`` named."""

    include_uncertain: bool = False
    polarity: str = "query"  # "query": the polarity the query states; "any": all three
    context: tuple[str, ...] = ()  # context flags admitted besides asserted findings

    def allowed(self, query_polarity: str) -> tuple[str, ...]:
        """The candidate polarities accepted for a query pattern of ``query_polarity``.

        A hedged query ("suspected pneumonia") asks for the finding: definite and hedged
        mentions both count.
        """
        if self.polarity == "any":
            return POLARITIES
        if query_polarity == "uncertain":
            return ("present", "uncertain")
        if self.include_uncertain:
            return (query_polarity, "uncertain")
        return (query_polarity,)

    @property
    def context_bits(self) -> int:
        """The admitted context flags as bits of ``CONTEXTS``."""
        return flag_bits(self.context)

    def ranked(self, query_polarity: str) -> tuple[str, ...]:
        """The candidate polarities ranked search returns for a query pattern: those
        ``allowed``, and for a positive query hedged mentions (a tier of their own); never the
        contradicting one, nor a hedge for "no X" (a hedge leans towards the finding)."""
        hedged = ("uncertain",) if query_polarity == "present" else ()
        return tuple(p for p in POLARITIES if p in (*self.allowed(query_polarity), *hedged))


def parse_context(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """Context flags from "historical,family", a sequence of them, or "any" (all)."""
    if not text:
        return ()
    items = [t.strip().lower() for t in (text.split(",") if isinstance(text, str) else text)]
    if "any" in items:
        return CONTEXTS
    unknown = [t for t in items if t and t not in CONTEXTS]
    if unknown:
        raise ClinsearchError(f"unknown context {unknown[0]!r}; choose from"
                              f" {', '.join(CONTEXTS)} or any (comma-separated)")
    return tuple(c for c in CONTEXTS if c in items)


DEFAULT_POLARITY = PolarityOptions()


class PatternScore(NamedTuple):
    """How a candidate pattern matches a query pattern, in the terms that depend on the pattern
    only: summed part scores, part count, pattern similarity, and per query modifier whether
    the candidate leaves it unstated."""

    total: float
    parts: int
    similarity: float
    unstated: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class PatternScores:
    """The ``PatternScore`` of each candidate pattern, as columns (one row per pattern)."""

    total: np.ndarray
    parts: np.ndarray
    similarity: np.ndarray
    unstated: np.ndarray  # bool, (patterns, query modifiers)

    @classmethod
    def of(cls, scores: Sequence[PatternScore]) -> PatternScores:
        """The columns of ``scores`` (at least one; all for the same query pattern)."""
        total, parts, similarity, unstated = zip(*scores, strict=True)
        return cls(np.array(total), np.array(parts), np.array(similarity),
                   np.array(unstated, bool).reshape(len(scores), len(unstated[0])))


@dataclass(frozen=True, slots=True)
class PartMatch:
    """The best finding of a sentence for one query pattern."""

    query: Finding
    row: int  # row in the findings table
    match: PatternMatch
    similarity: float


class Ranking:
    """Candidate sentences best first (score, then sentence code), and the parts each one
    matched (built on demand). Only the best ``n`` asked for are put in order (``top``).
    ``tiers``: the query's tier names, strongest first; ``positions``: each candidate's tier,
    as a position in them (``tier``)."""

    def __init__(self, candidates: np.ndarray, scores: np.ndarray,
                 parts: Callable[[int], tuple[PartMatch, ...]],
                 tiers: tuple[str, ...] = (), positions: np.ndarray | None = None) -> None:
        self._candidates = candidates  # sentence codes, ascending
        self._scores = scores
        self._parts = parts
        self.tiers = tiers
        self._positions = (np.zeros(len(candidates), np.int64) if positions is None
                           else positions)

    def tier(self, sentences: np.ndarray) -> list[str]:
        """The tier name of each of ``sentences`` (codes of this ranking's candidates)."""
        at = np.searchsorted(self._candidates, np.asarray(sentences, np.int64))
        return [self.tiers[p] for p in self._positions[at].tolist()]

    def __len__(self) -> int:
        return len(self._candidates)

    def unit_tiers(self, unit_of: Callable[[np.ndarray], np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The distinct units (ascending) of the candidates, ``unit_of`` mapping sentence codes
        to units, each with the tier (a position in ``tiers``) of its best candidate, best as
        ``top`` orders them (score, then code): one sort, no ranking of every candidate."""
        units = np.asarray(unit_of(self._candidates))
        order = np.lexsort((-self._scores, units))  # stable: equal scores keep code order
        ordered = units[order]
        first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(order) else order
        return ordered[first], self._positions[order[first]]

    def top(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The sentence codes and scores of the ``n`` best candidates, best first: those above
        the n-th best score, then its ties in code order (no sort of every candidate)."""
        values = self._scores
        if n <= 0:
            return self._candidates[:0], values[:0]
        if n < len(values):
            cut = np.partition(values, len(values) - n)[len(values) - n]
            above = np.flatnonzero(values > cut)
            ties = np.flatnonzero(values == cut)[: n - len(above)]
            chosen = np.concatenate([above, ties])
        else:
            chosen = np.arange(len(values))
        order = chosen[np.lexsort((chosen, -values[chosen]))]
        return self._candidates[order], values[order]

    @property
    def sentences(self) -> np.ndarray:
        """Every candidate's sentence code, best first."""
        return self.top(len(self))[0]

    @property
    def scores(self) -> np.ndarray:
        """Every candidate's score, best first."""
        return self.top(len(self))[1]

    def parts(self, sentence: int) -> tuple[PartMatch, ...]:
        """The best finding for each query pattern of the winning group, in that sentence."""
        return self._parts(sentence)


class ConceptRanker:
    """Scores candidate findings against parsed queries over one loaded concept index."""

    def __init__(self, index: ConceptIndex, hierarchy: Hierarchy,
                 vectors: TermVectors | None, categories: Mapping[str, str] | None = None,
                 tiers: TierOrder | None = None) -> None:
        """``tiers``: the search tier order (default: the shipped one)."""
        self.index = index
        self.tiers = tiers or tier_order()
        self._tier_tables: dict[tuple[str, tuple[str, ...], PolarityOptions, str | None],
                                np.ndarray] = {}
        self.hierarchy = hierarchy
        self.categories = categories  # modifier value -> category: unstated beats conflicting
        self.vectors = vectors
        self._pattern_vectors: dict[int, np.ndarray] = {}
        self._query_vectors: dict[str, np.ndarray] = {}
        self._scored: dict[tuple[str, str, tuple[str, ...], int], PartMatch] = {}
        self._pattern_scores: dict[tuple[str, str, tuple[str, ...], int], PatternScore] = {}
        pol = {p: i for i, p in enumerate(POLARITIES)}
        self._polarity = np.array([pol.get(p.polarity, -1) for p in index.patterns], np.int8)

    def rank(self, query: ParsedQuery, options: PolarityOptions = DEFAULT_POLARITY,
             wording: tuple[np.ndarray, np.ndarray] | None = None) -> Ranking:
        """Sentences with at least one candidate finding, best first (ties in corpus order).

        A sentence scores, for its best group, the mean over the group's patterns of its best
        finding's completeness, plus two tie-breaks of equal weight: pattern similarity and
        ``wording`` (sentence codes and a 0..1 score each, e.g. normalised BM25 of the query).
        Arrays span the candidate sentences only, never the corpus.
        """
        sites = query.sites or tuple(() for _ in query.groups)
        first = stated_tier(query)
        # Per group, per anatomy site: the sentences mentioning it and its words as a modifier.
        site_masks = [[(self._site_sentences(a.concept), _site_words(a)) for a in anatomy]
                      for anatomy in sites]
        found = [[self._best_per_sentence(q, options, masks, first) for q in group]
                 for group, masks in zip(query.groups, site_masks, strict=True)]
        # Candidate sentence codes, sorted; everything below is indexed by position in them.
        codes_found = [s for part in found for s, _, _, _ in part]
        sentences = (codes_found[0] if len(codes_found) == 1 else  # unique already
                     np.unique(np.concatenate([np.zeros(0, np.int64), *codes_found])))
        if len(codes_found) == 1:  # one pattern: its values are the scores (the same numbers)
            _, picked, values, positions = found[0][0]
            credit = APPROXIMATE_CREDIT if query.groups[0][0].concept in query.approximate else 1
            if credit != 1:
                offset = _tier_offset(values)
                values = offset + (values - offset) * credit
            best, winner, rows = values, np.zeros(len(values), np.int64), [[picked]]
        else:
            best, winner, rows, positions = _combine(query, found, sentences)
        n = len(sentences)
        if wording is not None:
            codes, values = wording
            at = np.searchsorted(sentences, codes)
            hit = at < n
            hit[hit] = sentences[at[hit]] == codes[hit]
            best[at[hit]] += WORDING_WEIGHT * values[hit]
        candidates = np.flatnonzero(winner >= 0)

        def parts(sentence: int) -> tuple[PartMatch, ...]:
            at = int(np.searchsorted(sentences, sentence))
            g = int(winner[at])
            out = []
            for q, best_row in zip(query.groups[g], rows[g], strict=True):
                row = int(best_row[at])
                if row >= 0:
                    out.append(self._explained(q, row, sentence, sites[g], site_masks[g]))
            return tuple(out)

        return Ranking(sentences[candidates], best[candidates], parts,
                       query_tiers(self.tiers, first), positions[candidates])

    def candidates(self, concept: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Findings of the concept, its descendants and its ancestors up to BROADER_DEPTH:
        their rows, sentence codes, pattern codes and context bits."""
        found = [self.index.lookup(concept, ordered=False)]  # _best_of_each sorts by sentence
        for ancestor, depth in self.hierarchy.ancestors(concept).items():
            if 0 < depth <= BROADER_DEPTH:
                found.append(self.index.lookup(ancestor, exact=True))
        fields = ("rows", "sentences", "patterns", "contexts")
        if len(found) == 1:
            return tuple(getattr(found[0], f) for f in fields)  # type: ignore[return-value]
        return tuple(np.concatenate([getattr(p, f) for p in found])  # type: ignore[return-value]
                     for f in fields)

    def _site_sentences(self, concept: str) -> np.ndarray:
        """Sentence codes, sorted, that mention ``concept`` or a narrower one."""
        return np.unique(self.index.lookup(concept).sentences)

    def _best_per_sentence(self, q: Finding, options: PolarityOptions,
                           sites: list[tuple[np.ndarray, set[str]]], first: str | None = None,
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For each candidate sentence of pattern ``q``: its best finding row, that value (its
        tier's offset plus its completeness; ``first``: the tier the query states) and that
        finding's tier (a position in the query's tier names)."""
        rows, sentences, codes, contexts = self.candidates(q.concept)
        accepted = np.zeros(len(POLARITIES) + 1, bool)  # the last: an unknown polarity (-1)
        accepted[[POLARITIES.index(p) for p in options.ranked(q.polarity)]] = True
        keep = accepted[self._polarity][codes]
        if not keep.all():
            rows, codes, sentences, contexts = (rows[keep], codes[keep], sentences[keep],
                                                contexts[keep])
        if not len(rows):  # the concept never occurs with an accepted polarity: no candidates
            return rows, rows, np.zeros(0), rows
        unique, inverse = _dense(codes, len(self._polarity))
        scores = self._pattern_scores_of(q, unique.tolist())
        parts = scores.parts + len(sites)
        # Terms that depend on the sentence, not only on the pattern: unstated modifiers that
        # the report states elsewhere, anatomy sites.
        terms = []
        for j, value in enumerate(modifier_values(q.modifiers)):
            unstated = np.flatnonzero(scores.unstated[:, j][inverse])
            if len(unstated):
                said = np.zeros(len(rows), bool)
                said[unstated] = self._report_mentions(value, sentences[unstated])
                terms.append((ELSEWHERE_CREDIT - UNSTATED_CREDIT) * said)
        for mentioned, words in sites:
            as_modifier = np.array([bool(words & set(self.index.patterns[c].modifiers))
                                    for c in unique])[inverse]
            terms.append(_within(sentences, mentioned) | as_modifier)
        if terms:
            total = scores.total[inverse]
            for term in terms:
                total = total + term
            complete = total / np.maximum(parts[inverse], 1)
            values = complete + TIE_WEIGHT * scores.similarity[inverse]
        else:  # the same arithmetic per pattern, then spread to its rows
            complete = (scores.total / np.maximum(parts, 1))[inverse]
            values = (scores.total / np.maximum(parts, 1)
                      + TIE_WEIGHT * scores.similarity)[inverse]
        table = self._tier_table(q, options, first)
        position = table[self._polarity[codes], contexts.astype(np.int64)]
        asserted = position < 0  # stated now: every asked part matched, or some
        names = query_tiers(self.tiers, first)
        position[asserted] = np.where(complete[asserted] >= COMPLETE, names.index(STATED),
                                      names.index(PARTIAL))
        levels = score_levels(names)
        level = np.array([next(i for i, group in enumerate(levels) if n in group)
                          for n in names])[position]
        return _best_of_each(sentences, rows, values - TIER_STEP * level, position)

    def _tier_table(self, q: Finding, options: PolarityOptions, first: str | None
                    ) -> np.ndarray:
        """Tiers, as positions in the query's tier names, by (polarity code, context bits) for
        query pattern ``q`` (``mention_tier``): -1 where the mention is stated now (its
        completeness decides between two tiers) or not returned (its polarity is never a
        candidate). Memoised: it
        depends on the query pattern's polarity and context only."""
        key = (q.polarity, q.context, options, first)
        if key not in self._tier_tables:
            self._tier_tables[key] = self._new_tier_table(q, options, first)
        return self._tier_tables[key]  # read by fancy indexing only: never changed

    def _new_tier_table(self, q: Finding, options: PolarityOptions, first: str | None
                        ) -> np.ndarray:
        names = query_tiers(self.tiers, first)
        table = np.full((len(POLARITIES) + 1, 1 << len(CONTEXTS)), -1, np.int64)
        for p, polarity in enumerate(POLARITIES):
            for bits in range(1 << len(CONTEXTS)):
                tier = mention_tier(polarity, context_flags(bits), q, options, names)
                if tier not in (None, STATED):
                    table[p, bits] = names.index(tier)
        return table

    def _report_mentions(self, value: str, sentences: np.ndarray) -> np.ndarray:
        """Per sentence code: whether a finding of its report carries modifier ``value``."""
        return _within(sentence_parts(sentences)[0], self.index.mentions(value))

    def _pattern_scores_of(self, q: Finding, codes: list[int]) -> PatternScores:
        """The ``PatternScore`` of each pattern of ``codes`` for ``q``, those not seen before
        for this query pattern scored together (memoised with ``_score``)."""
        qkey = _key(q)
        scores = {c: self._pattern_scores.get((*qkey, c)) for c in codes}
        new = [c for c, score in scores.items() if score is None]
        if new:
            scores.update((c, score) for c, (_, score) in self._score_new(q, qkey, new).items())
        return PatternScores.of([scores[c] for c in codes])  # type: ignore[misc]

    def _score(self, q: Finding, code: int) -> PartMatch:
        """The match of pattern ``code`` with ``q`` (memoised across queries)."""
        qkey = _key(q)
        found = self._scored.get((*qkey, code))
        return found if found is not None else self._score_new(q, qkey, [code])[code][0]

    def _score_new(self, q: Finding, qkey: tuple[str, str, tuple[str, ...]], codes: list[int]
                   ) -> dict[int, tuple[PartMatch, PatternScore]]:
        """The match of each pattern of ``codes`` with ``q`` and its ``PatternScore``,
        remembered; their similarities to ``q`` computed in one product."""
        similarity = [0.0] * len(codes)
        if self.vectors is not None:
            self._add_pattern_vectors(codes)
            patterns = np.stack([self._pattern_vectors[c] for c in codes])
            similarity = (patterns @ self._query_vector(q.pattern)).tolist()
        if len(self._scored) + len(codes) > MEMO_LIMIT:
            self._scored.clear()
            self._pattern_scores.clear()
            self._query_vectors.clear()
        scored = matcher(q, self.hierarchy, self.categories)
        out = {}
        for code, sim in zip(codes, similarity, strict=True):
            pattern = self.index.patterns[code]
            m = scored(pattern.concept, pattern.polarity, pattern.modifiers)
            unstated = tuple(v == UNSTATED_CREDIT for _, v in m.modifiers)
            out[code] = (PartMatch(q, -1, m, sim), PatternScore(m.total, m.parts, sim, unstated))
            self._scored[(*qkey, code)], self._pattern_scores[(*qkey, code)] = out[code]
        return out

    def _explained(self, q: Finding, row: int, sentence: int, anatomy: tuple[Finding, ...],
                   masks: list[tuple[np.ndarray, set[str]]]) -> PartMatch:
        """The match of finding ``row`` (of sentence code ``sentence``) with ``q``, anatomy
        parts included (``masks``: per site, its sentences and words, as ``rank`` found them)."""
        code = self.index.pattern_of(row)
        proto = self._score(q, code)
        mods = set(self.index.patterns[code].modifiers)
        sites = tuple((a.name, float(bool(_within(np.array([sentence]), mentioned)[0])
                                     or bool(words & mods)))
                      for a, (mentioned, words) in zip(anatomy, masks, strict=True))
        modifiers = tuple(
            (v, ELSEWHERE_CREDIT if s == UNSTATED_CREDIT
             and self._report_mentions(v, np.array([sentence]))[0] else s)
            for v, s in proto.match.modifiers)
        return PartMatch(q, row, replace(proto.match, modifiers=modifiers, sites=sites),
                         proto.similarity)

    def _query_vector(self, pattern: str) -> np.ndarray:
        """The mean term vector of a query finding's pattern, computed once for all the
        patterns it is scored against (memoised with ``_score``)."""
        vector = self._query_vectors.get(pattern)
        if vector is None:
            assert self.vectors is not None
            vector = self._query_vectors[pattern] = self.vectors.means([_parts(pattern)])[0]
        return vector

    def _add_pattern_vectors(self, codes: list[int]) -> None:
        """Remember the mean term vector of each pattern of ``codes`` not yet seen, computed
        together (at a million reports a concept has thousands of patterns)."""
        assert self.vectors is not None
        new = [c for c in codes if c not in self._pattern_vectors]
        if new:
            vectors = self.vectors.means([_parts(self.index.patterns[c].text) for c in new])
            self._pattern_vectors.update(zip(new, vectors, strict=True))


def _combine(query: ParsedQuery,
             found: list[list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]],
             sentences: np.ndarray,
             ) -> tuple[np.ndarray, np.ndarray, list[list[np.ndarray]], np.ndarray]:
    """Per candidate sentence (sorted codes): the score of its best group, that group (-1:
    none), per group and pattern the best finding row (-1: none), and the tier position of
    the best group (the weakest of its parts), from each pattern's best findings by sentence
    (``found``)."""
    n = len(sentences)
    best = np.full(n, -np.inf)
    winner = np.full(n, -1)
    positions = np.zeros(n, np.int64)
    rows: list[list[np.ndarray]] = []
    for g, (group, part) in enumerate(zip(query.groups, found, strict=True)):
        total = np.zeros(n)
        tier = np.full(n, np.inf)  # a sentence ranks in the weakest tier of its parts
        weakest = np.zeros(n, np.int64)
        seen = np.zeros(n, dtype=bool)
        rows.append([])
        for q, (codes, picked, values, position) in zip(group, part, strict=True):
            at = np.searchsorted(sentences, codes)
            offset = _tier_offset(values)
            values = values - offset
            if q.concept in query.approximate:
                values = values * APPROXIMATE_CREDIT
            total[at] += values
            tier[at] = np.minimum(tier[at], offset)
            weakest[at] = np.maximum(weakest[at], position)
            seen[at] = True
            best_row = np.full(n, -1)
            best_row[at] = picked
            rows[-1].append(best_row)
        total = total / len(group) + np.where(seen, tier, 0)
        better = seen & (total > best)
        best[better] = total[better]
        winner[better] = g
        positions[better] = weakest[better]
    return best, winner, rows, positions


def stated_tier(query: ParsedQuery) -> str | None:
    """The tier a query states ("history of X": historical), which ranks first; None."""
    return next((q.context[0] for group in query.groups for q in group if q.context), None)


def score_levels(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Tier names by concept score level: as ``tier_levels``, and ``hedged`` joins stated
    now's level when it follows it (completeness orders them: a hedge earns half the polarity
    part, so a hedged mention of the exact finding ranks above a stated broader one)."""
    levels = tier_levels(names)
    for i, group in enumerate(levels[:-1]):
        if STATED in group and levels[i + 1] == (HEDGED,):
            return [*levels[:i], (*group, HEDGED), *levels[i + 2:]]
    return levels


def tier_levels(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Tier names by score level: one each, but ``partial`` shares ``stated``'s level when it
    follows it."""
    levels: list[tuple[str, ...]] = []
    for name in names:
        if name == PARTIAL and levels and levels[-1] == (STATED,):
            levels[-1] = (STATED, PARTIAL)
        else:
            levels.append((name,))
    return levels


def mention_tier(polarity: str, flags: Sequence[str], query: Finding | PhraseQuery,
                 options: PolarityOptions, names: tuple[str, ...], complete: bool = True,
                 ) -> str | None:
    """The tier of a mention (``polarity``, context ``flags``) for a query pattern, None when
    the query's polarity contradicts it. A flag the options admit counts as stated now; the
    flags the query states give their tier (first in ``names``, the query's tier order); else
    a mention with flags takes the weakest of their tiers; a hedge the options do not count
    as stated is hedged; the rest is stated now, with every asked part (``complete``) or not."""
    if polarity not in options.ranked(query.polarity):
        return None
    if query.context and set(query.context) <= set(flags):
        return query.context[0]
    own = [c for c in flags if c in CONTEXTS and c not in options.context]
    if own:
        return max(own, key=names.index)
    if polarity == "uncertain" and "uncertain" not in options.allowed(query.polarity):
        return HEDGED
    return STATED if complete else PARTIAL


def query_tiers(order: TierOrder, first: str | None) -> tuple[str, ...]:
    """The tier names of ``order``, ``first`` (a tier the query states) moved to the front."""
    names = order.names
    return (first, *(n for n in names if n != first)) if first else names


def _tier_offset(values: np.ndarray) -> np.ndarray:
    """The tier part of scores (a multiple of ``TIER_STEP``; the rest is completeness)."""
    return TIER_STEP * np.round((values - 0.5) / TIER_STEP)


def _within(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``np.isin(values, sorted_set)`` for a sorted ``sorted_set``: a binary search per value,
    no sort of ``values``."""
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _dense(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for codes below ``size``, without a sort."""
    present = np.zeros(size, bool)
    present[codes] = True
    unique = np.flatnonzero(present)
    position = np.zeros(size, np.int64)
    position[unique] = np.arange(len(unique))
    return unique, position[codes]


def _best_of_each(groups: np.ndarray, rows: np.ndarray, values: np.ndarray, tags: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct group, ascending: the row of its highest value (the lowest row on ties),
    that value and that row's tag. One stable sort by group (none when
    already sorted) and reductions."""
    if len(groups) < 2 or bool((groups[1:] > groups[:-1]).all()):  # one row per group
        return groups, rows, values, tags
    if not bool((groups[1:] >= groups[:-1]).all()):
        order = np.argsort(groups, kind="stable")
        groups, rows, values, tags = groups[order], rows[order], values[order], tags[order]
    start = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    top = np.maximum.reduceat(values, start)
    owner = np.repeat(np.arange(len(start)), np.diff(np.r_[start, len(groups)]))
    tops = np.where(values == top[owner], rows, np.iinfo(np.int64).max)
    picked = np.minimum.reduceat(tops, start)
    first = np.where(rows == picked[owner], np.arange(len(rows)), len(rows))
    return groups[start], picked, top, tags[np.minimum.reduceat(first, start)]


def _key(q: Finding) -> tuple[str, str, tuple[str, ...]]:
    """What a query pattern's match with a candidate depends on."""
    return (q.concept, q.polarity, tuple(modifier_values(q.modifiers)))


def _site_words(site: Finding) -> set[str]:
    """How a query's anatomy may appear as a candidate's location modifier."""
    return {site.name.lower(), site.text.lower()}


def _parts(pattern: str) -> Sequence[str]:
    return pattern.split("|")
