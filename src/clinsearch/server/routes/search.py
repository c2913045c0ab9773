"""Search: a page of hits with their best sentence, highlights and findings (counts only for
viewers), computed once per query and kept for paging."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query

from clinsearch.errors import ClinsearchError
from clinsearch.search.filters import ReportFilters
from clinsearch.search.polarity import polarity_options
from clinsearch.search.registry import parse_method
from clinsearch.server.deps import Audit, Caller, State
from clinsearch.server.live import Snapshot
from clinsearch.server.model_names import with_allowed_models
from clinsearch.server.records import hit_record
from clinsearch.server.small_counts import check_filters_wide, viewer_count
from clinsearch.server.state import MAX_QUERY_TEXT

MAX_TOP = 100
RESULT_CAP = 200  # hits one query pages through at most: ``total`` is exact below it
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
) -> dict[str, Any]:
    """``Index.search`` with the CLI's method spec, level, polarity and filters."""
    if not 1 <= top <= MAX_TOP:
        raise ClinsearchError(f"top must be between 1 and {MAX_TOP} (got {top})")
    if not 0 <= offset <= RESULT_CAP - top:
        raise ClinsearchError(f"offset must be between 0 and {RESULT_CAP - top} (got {offset})")
    filters = ReportFilters(date_from or None, date_to or None, section or None,
                            report_type or None, context or None)
    spec = parse_method(method)  # NAME[:key=value,...], as the CLI's --method
    spec = with_allowed_models(spec, state.config.models).with_options(
        **polarity_options(spec.method, polarity), filters=filters if filters.active else None)
    params = {"q": q, "method": method, "level": level, "top": top, "offset": offset,
              "polarity": polarity} | {k: v for k, v in asdict(filters).items() if v}

    threshold = state.config.viewer_min_count

    def run(snap: Snapshot) -> tuple[bool, list[dict[str, Any]], dict[str, Any], str]:
        if not user.sees_text:
            check_filters_wide(snap.index, filters, threshold)
        # the first pages come from a shallow search, later ones from the deepest
        depth = FIRST_DEPTH if offset + top <= FIRST_DEPTH else RESULT_CAP
        key = (snap.generation, q, spec.method, level, tuple(sorted(spec.options.items())))
        computed, hits = RESULT_CAP, state.cached_hits((*key, RESULT_CAP))
        if hits is None:
            computed, hits = depth, state.cached_hits((*key, depth))
        if hits is None:
            hits = snap.index.search(q, level, depth, spec)  # type: ignore[arg-type]
            state.cache_hits((*key, depth), hits)
        capped = len(hits) == computed  # the depth these hits were computed to
        page_hits = hits[offset : offset + top]
        if not user.sees_text:
            return capped, [], {"total": viewer_count(len(hits), threshold)}, snap.generation
        counts: dict[str, Any] = {"total": len(hits)}
        counts |= {"returned": len(page_hits),
                   "reports": len({h.report_id for h in page_hits}),
                   "patients": len({h.patient_id for h in page_hits})}
        shown = [hit_record(h, snap) for h in page_hits]
        return capped, shown, counts, snap.generation

    capped, shown, counts, generation = state.live.run(run)
    audit.record("search", params, counts, generation,
                 {"reports": [h["report_id"] for h in shown]} if shown else None)
    answer = {"hits": shown, "total": counts["total"], "total_capped": capped,
              "offset": offset, "top": top, "generation": generation}
    return answer if user.sees_text else answer | {"count_threshold": threshold}
