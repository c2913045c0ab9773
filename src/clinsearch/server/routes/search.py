"""Search: a page of hits with their best sentence, highlights and findings (counts only for
viewers); a query's ranking is computed once and kept for paging, each page's hits built from
it."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query

from clinsearch.errors import ClinsearchError, LimitError
from clinsearch.limits import MAX_QUERY_TEXT, MAX_TOP
from clinsearch.search.cohort import COUNT_LEVELS
from clinsearch.search.concept.ranking import parse_context
from clinsearch.search.filters import ReportFilters
from clinsearch.search.polarity import polarity_options
from clinsearch.search.registry import checked_options, parse_method
from clinsearch.search.tiers import TierCount, tier_counts, with_triggers
from clinsearch.server.deps import Audit, Caller, State
from clinsearch.server.live import Snapshot
from clinsearch.server.model_names import with_allowed_models
from clinsearch.server.query_scope import (
    against_query,
    cohort_reading,
    expand_bundles,
    stated_polarities,
)
from clinsearch.server.records import hit_records
from clinsearch.server.small_counts import check_filters_wide, id_set, viewer_count, viewer_counts

RESULT_CAP = 200  # hits a query pages through, or as many as assert it: ``total`` exact below
FIRST_DEPTH = 50  # hits computed for the first pages (deeper pages compute RESULT_CAP)
router = APIRouter(prefix="/api")


@router.get("/search", summary="Search: hits with best sentence, highlights, findings")
def search(
    user: Caller, audit: Audit, state: State,
    q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_TEXT)],
    method: Annotated[str, Query(max_length=MAX_QUERY_TEXT)] = "concept", level: str = "report",
    top: Annotated[int, Query()] = 10, offset: Annotated[int, Query()] = 0,
    polarity: str = "query", context: str | None = None,
    date_from: str | None = None, date_to: str | None = None,
    section: str | None = None,
    report_type: Annotated[str | None, Query(alias="type")] = None,
    exact: bool = False,
) -> dict[str, Any]:
    """``Index.search`` with the CLI's method spec, level, polarity and filters; ``bundle:NAME``
    stands for the bundle's terms. Each hit says its search tier and trigger; ``tiers`` holds
    the units per tier of the concept ranking (unfiltered searches). With ``exact`` (and on
    pages beyond RESULT_CAP), ``asserting`` holds the exact numbers of patients, visits,
    reports and sentences that assert the query, as the cohort counts them (None when the query
    is not findings of the lexicon), and the hits page through at least all of them."""
    if not 1 <= top <= MAX_TOP:
        raise LimitError(f"top must be between 1 and {MAX_TOP} (got {top})")
    searched = expand_bundles(state, user, q)
    filters = ReportFilters(date_from or None, date_to or None, section or None,
                            report_type or None)
    spec = parse_method(method)  # NAME[:key=value,...], as the CLI's --method
    spec = with_allowed_models(spec, state.config.models).with_options(
        **polarity_options(spec.method, polarity), **context_option(spec.method, context),
        filters=filters if filters.active else None)
    checked_options(spec.method, spec.options)  # every option within its bounds, before work
    params = {"q": q, "method": method, "level": level, "top": top, "offset": offset,
              "polarity": polarity} | {k: v for k, v in asdict(filters).items() if v} | (
                  {"context": context} if context else {})

    threshold = state.config.viewer_min_count

    def run(snap: Snapshot) -> tuple[bool, list[dict[str, Any]], dict[str, Any], str]:
        if not user.sees_text:
            check_filters_wide(snap.index, filters, threshold)
        if not filters.active:  # units per tier of the concept ranking (unfiltered only)
            tiers.extend(tier_counts(snap.index.session, searched, level, spec))
        # findings in other contexts also count: not the cohort's reading
        if (exact or offset + top > RESULT_CAP) and not context:
            sets.update(_asserting(snap, searched, polarity, filters))
            asserting.update({unit: int(mask.sum()) for unit, mask in sets.items()})
        # pages reach every asserting unit; the first come from a shallow search
        cap = max(RESULT_CAP, asserting.get(level, -top) + top)
        if not 0 <= offset <= cap - top:
            raise LimitError(f"offset must be between 0 and {cap - top} (got {offset})")
        depth = FIRST_DEPTH if offset + top <= FIRST_DEPTH else cap
        key = (snap.generation, searched, spec.method, level,
               tuple(sorted(spec.options.items())))
        computed, ranked = cap, state.cached_ranking((*key, cap))
        if ranked is None:
            computed, ranked = depth, state.cached_ranking((*key, depth))
        if ranked is None:
            ranked = snap.index.rank(searched, level, depth, spec)  # type: ignore[arg-type]
            state.cache_ranking((*key, depth), ranked)
        found = len(ranked.scores)
        capped = found == computed  # the depth this ranking was computed to
        if not user.sees_text:
            total = viewer_count(found, threshold, id_set("hits", ranked.ids), state.count_key)
            return capped, [], {"total": total}, snap.generation
        page_hits = ranked.hits(range(offset, min(offset + top, found)))  # this page's alone
        counts: dict[str, Any] = {"total": found}
        counts |= {"returned": len(page_hits),
                   "reports": len({h.report_id for h in page_hits}),
                   "patients": len({h.patient_id for h in page_hits})}
        stated = stated_polarities(snap, searched)
        page_hits = with_triggers(snap.index, page_hits)
        shown = hit_records(page_hits, snap)
        for record in shown:  # hits stating the query's finding the other way are marked
            record["against_query"] = against_query(record["findings"], stated)
        return capped, shown, counts, snap.generation

    asserting: dict[str, Any] = {}
    sets: dict[str, Any] = {}
    tiers: list[TierCount] = []
    capped, shown, counts, generation = state.live.run(run)
    audit.record("search", params, counts, generation, {
        kind: [h[f"{kind[:-1]}_id"] for h in shown if h[f"{kind[:-1]}_id"]]
        for kind in ("reports", "patients", "visits")} if shown else None)
    if not user.sees_text:  # small counts withheld, larger ones rounded, as every count
        asserting = viewer_counts(sets, threshold, state.count_key)
    if offset == 0:  # a new search, not a further page
        state.workbench.remember(user.name, "search", {k: str(v) for k, v in params.items()},
                                 asserting or counts)
    answer = {"hits": shown, "total": counts["total"], "total_capped": capped,
              "asserting": asserting or None, "searched": searched,
              "offset": offset, "top": top, "generation": generation,
              "tiers": [t.to_dict() | ({} if user.sees_text else {"count": viewer_count(
                  t.count, threshold, f"tier {t.tier} {level}".encode() + b"\0" + t.units,
                  state.count_key)}) for t in tiers]}
    return answer if user.sees_text else answer | {"count_threshold": threshold}


def context_option(method: str, context: str | None) -> dict[str, str]:
    """``context`` as the CLI's ``--context`` takes it: findings in these contexts (family,
    historical, hypothetical, indication, any) also count, for concept search and hybrid."""
    if not context:
        return {}
    if method not in ("concept", "hybrid"):
        raise ClinsearchError("--context applies to --method concept or hybrid")
    return {"context": ",".join(parse_context(context))}


def _asserting(snap: Snapshot, query: str, polarity: str, filters: ReportFilters
               ) -> dict[str, Any]:
    """The units asserting ``query`` (its cohort reading) at each level, as masks, or none."""
    reading = cohort_reading(snap, query, polarity, filters)
    if reading is None:
        return {}
    return dict(snap.cohort().engine.sets(reading, levels=(*COUNT_LEVELS, "sentence")))
