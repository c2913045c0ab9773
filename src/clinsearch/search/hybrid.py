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

from clinsearch.errors import ClinsearchError
from clinsearch.hit import Hit
from clinsearch.search.concept.ranking import TIE_WEIGHT, WORDING_WEIGHT
from clinsearch.search.fusion import Fusion, Normalisation
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
        """Fuse one query's rankings (the best ``top``)."""
        fused = self.fusion.apply([list(zip(run.ids, run.scores, strict=True))
                                   for run in runs])[:top]
        return RankedUnits([score for _, score in fused], lambda: [unit for unit, _ in fused],
                           partial(self._hits, runs, fused))

    def _hits(self, runs: list[RankedUnits], fused: list[tuple[str, float]],
              positions: Sequence[int]) -> list[Hit]:
        """The fused hits at ``positions``, each keeping the sentence of its best-ranked run;
        each run builds only the hits of those units."""
        wanted = {fused[p][0] for p in positions}
        shown: dict[str, Hit] = {}
        ranks: dict[str, dict[str, int]] = {}
        why: dict[str, dict[str, str]] = {}
        matched: dict[str, str] = {}  # how concept search matched each unit (concept, text)
        tiers: dict[str, dict[str, Any]] = {}  # ... and the unit's search tier
        for name, run in zip(self.names, runs, strict=True):
            for hit in run.hits([p for p, unit in enumerate(run.ids) if unit in wanted]):
                ranks.setdefault(hit.id, {})[name] = hit.rank
                why.setdefault(hit.id, {})[name] = method_reason(hit)
                if "match" in hit.explanation:
                    matched[hit.id] = hit.explanation["match"]
                if "tier" in hit.explanation:
                    tiers[hit.id] = {k: hit.explanation[k] for k in TIER_FIELDS
                                     if k in hit.explanation}
                if hit.id not in shown or hit.rank < shown[hit.id].rank:
                    shown[hit.id] = hit
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
