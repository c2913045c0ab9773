"""Hybrid retrieval: run several methods at the requested level and fuse their rankings.

Each method ranks its ``depth`` best units (sentences, reports, visits or patients); the lists
are fused (``search.fusion``) by reciprocal rank fusion, by weighted normalised scores, or, the
default when concept search takes part, tiered: units ranked first by the completeness tier
concept search gives them, by weighted scores within a tier, and the units concept search does
not return after them. The defaults were chosen on the development half of the IU X-ray MeSH
queries (benchmarks/quality/bench_dense.py; figures: benchmarks/README.md), never on the evaluation
half.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from clinsearch.errors import ClinsearchError
from clinsearch.hit import Hit
from clinsearch.search.concept.ranking import TIE_WEIGHT, WORDING_WEIGHT
from clinsearch.search.fusion import Fusion, Normalisation, Unit
from clinsearch.search.method_params import DEFAULT_NORMALISATION, FUSION_DEPTH, FUSIONS, RRF_K
from clinsearch.search.retriever import RankedUnits, rank_many
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore
    from clinsearch.search.retriever import Retriever

TIER_ANCHOR = "concept"
TIER_FIELDS = ("tier", "tier_label", "trigger")  # a concept hit's search tier, kept when fused
# Concept scores are completeness plus tie-breaks (similarity in [-1, 1], wording in [0, 1]):
# scores closer than this may be equally complete, so they share a tier.
CONCEPT_TIE_SPAN = 2 * TIE_WEIGHT + WORDING_WEIGHT
# Chosen on the development queries (benchmarks/quality/bench_dense.py): tiered when concept search
# takes part, else weighted; per fusion, the best weights on that half (unnamed methods weigh 1).
DEFAULT_WEIGHTS: dict[str, dict[str, float]] = {
    "tiered": {"bm25": 0.5, "dense": 0.05, "concept": 1.0},
    "weighted": {"bm25": 0.25, "dense": 0.05, "concept": 8.0},
    "rrf": {"bm25": 0.25, "dense": 0.05, "concept": 8.0},
}
# component each optional method needs in the index, beyond the bm25 one
_NEEDS = {"dense": "dense", "concept": "concepts"}



class HybridRetriever:
    """Fuses the rankings of ``methods`` (default: bm25, dense and concept where available)."""

    def __init__(
        self,
        index: IndexStore,
        *,
        make: Callable[..., Retriever],
        registered: Collection[str] = ("bm25", "dense", "concept"),
        methods: str | None = None,
        fusion: str | None = None,
        weights: str | None = None,
        normalisation: Normalisation = DEFAULT_NORMALISATION,
        rrf_k: int = RRF_K,
        depth: int = FUSION_DEPTH,
        model: str | Path | None = None,
        term_model: str | Path | None = None,
        context: str | None = None,
    ) -> None:
        """``methods`` and ``weights`` are comma-separated, e.g. "bm25,dense", "bm25=1,dense=2";
        ``model`` goes to the dense method, ``term_model`` and ``context`` to the concept
        method; ``fusion`` defaults to ``default_fusion(methods)``; ``make(index, name,
        **options)`` makes the fused methods' retrievers, of those ``registered`` (both passed
        in by the registry, which this module does not import)."""
        names = _split(methods) if methods else default_methods(index, registered)
        if "hybrid" in names or len(names) < 2:
            raise ClinsearchError(f"hybrid needs two or more other methods (got {names})")
        self.index = index
        self.names = names
        self.fusion = fusion_of(names, fusion, weights, normalisation, rrf_k)
        self.depth = depth
        if term_model is not None and "concept" not in names:
            raise ClinsearchError(f"hybrid: `term_model` needs concept among the fused methods"
                                  f" (got {', '.join(names)})")
        given: dict[str, dict[str, str | Path]] = {
            "dense": {"model": model} if model else {},
            "concept": ({"term_model": term_model} if term_model is not None else {})
            | ({"context": context} if context else {}),
        }
        self.retrievers = [make(index, name, **given.get(name, {})) for name in names]

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best fused hits at ``level`` for ``query``."""
        return self.search_many([query], level, top)[0]

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """Each method ranks all queries (batched), then each query's lists are fused."""
        return [ranked.hits() for ranked in self.rank_many(queries, level, top)]

    def rank_many(self, queries: Sequence[str], level: Level, top: int) -> list[RankedUnits]:
        """``search_many``'s fused rankings; each fused hit is built when its position is
        asked for."""
        depth = min(max(top, self.depth), self.index.level_size(level))  # no more than exist
        per_method = [rank_many(r, list(queries), level, depth) for r in self.retrievers]
        return [self._fuse([runs[q] for runs in per_method], top) for q in range(len(queries))]

    def _fuse(self, runs: list[RankedUnits], top: int) -> RankedUnits:
        """Fuse one query's rankings (the best ``top``), matching units by their keys when
        every run has them (the ids of the shown units alone are read), else by id."""
        keyed = all(run.keys is not None for run in runs)
        units: list[list[Unit]] = [run.keys.tolist() if keyed and run.keys is not None
                                   else run.ids for run in runs]
        fused = self.fusion.apply([list(zip(u, run.scores, strict=True))
                                   for u, run in zip(units, runs, strict=True)])
        if keyed:
            fused, ids = _top_by_id(fused, top, runs, units)
        else:
            fused = fused[:top]
            ids = [str(unit) for unit, _ in fused]  # units are ids here
        return RankedUnits([score for _, score in fused],
                           lambda positions: [ids[p] for p in positions],
                           partial(self._hits, runs, units, fused),
                           np.array([unit for unit, _ in fused], np.int64) if keyed else None)

    def _hits(self, runs: list[RankedUnits], units: list[list[Unit]],
              fused: list[tuple[Unit, float]], positions: Sequence[int]) -> list[Hit]:
        """The fused hits at ``positions``, each keeping the sentence of its best-ranked run;
        each run builds only the hits of those units."""
        wanted = {fused[p][0] for p in positions}
        shown: dict[Unit, Hit] = {}
        ranks: dict[Unit, dict[str, int]] = {}
        why: dict[Unit, dict[str, str]] = {}
        matched: dict[Unit, str] = {}  # how concept search matched each unit (concept, text)
        tiers: dict[Unit, dict[str, Any]] = {}  # ... and the unit's search tier
        for name, run, run_units in zip(self.names, runs, units, strict=True):
            found = [(p, unit) for p, unit in enumerate(run_units) if unit in wanted]
            for (_, unit), hit in zip(found, run.hits([p for p, _ in found]), strict=True):
                ranks.setdefault(unit, {})[name] = hit.rank
                why.setdefault(unit, {})[name] = method_reason(hit)
                if "match" in hit.explanation:
                    matched[unit] = hit.explanation["match"]
                if "tier" in hit.explanation:
                    tiers[unit] = {k: hit.explanation[k] for k in TIER_FIELDS
                                   if k in hit.explanation}
                if unit not in shown or hit.rank < shown[unit].rank:
                    shown[unit] = hit
        hits = []
        for position in positions:
            unit, score = fused[position]
            explanation = {
                "method": "hybrid",
                "fusion": self.fusion.kind,
                "ranks": ranks[unit],
                "found_by": why[unit],
                "shown_from": shown[unit].explanation.get("method"),
                "summary": " · ".join(f"{name} #{ranks[unit][name]}: {reason}"
                                      for name, reason in why[unit].items()),
            } | ({"match": matched[unit]} if unit in matched else {}) | tiers.get(unit, {})
            hits.append(replace(shown[unit], rank=position + 1, score=score,
                                explanation=explanation))
        return hits


def _top_by_id(fused: list[tuple[Unit, float]], top: int, runs: list[RankedUnits],
               units: list[list[Unit]]) -> tuple[list[tuple[Unit, float]], list[str]]:
    """The ``top`` best of a fusion by keys and their ids, ties in id order as a fusion by ids
    orders them: only the ids of the units that score at least the ``top``-th are read, each
    from the first run that ranks it."""
    if len(fused) > top:
        cut = fused[top - 1][1]
        fused = fused[:next((i for i in range(top, len(fused)) if fused[i][1] < cut),
                            len(fused))]
    where: dict[Unit, tuple[int, int]] = {}
    for r, run_units in enumerate(units):
        for p, unit in enumerate(run_units):
            where.setdefault(unit, (r, p))
    read: dict[Unit, str] = {}
    for r, run in enumerate(runs):
        asked = [unit for unit, _ in fused if where[unit][0] == r]
        read.update(zip(asked, run.ids_at([where[u][1] for u in asked]), strict=True))
    order = sorted(range(len(fused)), key=lambda i: (-fused[i][1], read[fused[i][0]]))[:top]
    return [fused[i] for i in order], [read[fused[i][0]] for i in order]


def method_reason(hit: Hit) -> str:
    """Why one method found a hit, in a few words: concept search's pattern match, BM25's
    matched terms, dense retrieval's similarity."""
    why = hit.explanation
    if why.get("summary"):
        return str(why["summary"])
    if why.get("matched_terms"):
        return "terms " + ", ".join(map(str, why["matched_terms"]))
    return f"similarity {hit.score:.2f}"


def default_methods(index: IndexStore, registered: Collection[str]) -> list[str]:
    """bm25, then dense and concept when registered and the index has what they need."""
    components = set(index.config.components)
    return ["bm25"] + [
        name for name, needs in _NEEDS.items() if name in registered and needs in components
    ]


def default_fusion(names: Sequence[str]) -> str:
    """Tiered fusion when concept search takes part, else weighted (chosen on dev queries)."""
    return "tiered" if TIER_ANCHOR in names else "weighted"


def fusion_of(
    names: Sequence[str],
    fusion: str | None = None,
    weights: str | None = None,
    normalisation: Normalisation = DEFAULT_NORMALISATION,
    rrf_k: int = RRF_K,
) -> Fusion:
    """The fusion of the rankings of ``names`` (in that order) from the user's options."""
    kind = fusion or default_fusion(names)
    if kind not in FUSIONS:
        raise ClinsearchError(f"unknown fusion {kind!r}; choose one of {', '.join(FUSIONS)}")
    if kind == "tiered" and TIER_ANCHOR not in names:
        raise ClinsearchError(
            f"tiered fusion ranks by {TIER_ANCHOR} tiers: add {TIER_ANCHOR} to the methods"
        )
    anchor = list(names).index(TIER_ANCHOR) if kind == "tiered" else None
    return Fusion(
        kind,
        tuple(parse_weights(weights, names, DEFAULT_WEIGHTS[kind])),
        normalisation,
        rrf_k,
        anchor,
        CONCEPT_TIE_SPAN if kind == "tiered" else 0.0,
    )


def parse_weights(
    text: str | None, names: Sequence[str], defaults: dict[str, float] | None = None
) -> list[float]:
    """Weights in method order from "name=w,..." (unnamed methods weigh 1).

    Without ``text`` the ``defaults`` (tuned weights) apply to the methods they name.
    """
    weights = dict.fromkeys(names, 1.0)
    if not text:
        return [(defaults or {}).get(name, 1.0) for name in names]
    for part in _split(text):
        name, sep, value = part.partition("=")
        if not sep or name not in weights:
            raise ClinsearchError(
                f"bad weight {part!r}: write METHOD=NUMBER for one of {', '.join(names)}"
            )
        try:
            weights[name] = float(value)
        except ValueError:
            raise ClinsearchError(f"bad weight {part!r}: {value!r} is not a number") from None
        if not math.isfinite(weights[name]):
            raise ClinsearchError(f"bad weight {part!r}: a weight must be a finite number")
    return [weights[name] for name in names]


def _split(text: str) -> list[str]:
    """Comma-separated items, stripped, empties dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]
