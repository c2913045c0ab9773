"""Counts for charts, no text, so for every role (the counts-only role sees them as it sees
every count): a cohort's reports by year, month, report type and evidence section, and the
polarity mix of a finding."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import Field

from clinsearch.limits import MAX_QUERY_CHARS, MAX_QUERY_TEXT
from clinsearch.search.cohort.syntax import fold
from clinsearch.search.tiers import cohort_options
from clinsearch.server.bodies import RequestBody
from clinsearch.server.deps import Audit, Caller, State
from clinsearch.server.live import Snapshot
from clinsearch.server.query_scope import query_scope
from clinsearch.server.small_counts import id_set, mask_set, viewer_count, viewer_counts
from clinsearch.server.state import ServerState

router = APIRouter(prefix="/api/charts")


class ChartRequest(RequestBody):
    """A cohort query, the id list it is restricted to (None: every report) and the wider
    tiers it counts (as ``POST /api/cohort``)."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    list_id: int | None = None
    context: str | None = Field(None, max_length=200)
    include_uncertain: bool = False


@router.post("/cohort", summary="A cohort's reports by year, month, type and section")
def cohort_chart(body: ChartRequest, user: Caller, audit: Audit, state: State
                 ) -> dict[str, Any]:
    """``Cohort.breakdown`` and the cohort's exact counts."""

    options = cohort_options(body.context, body.include_uncertain)

    def run(snap: Snapshot) -> tuple[dict[str, Any], dict[str, Any], str]:
        scope = query_scope(state, snap, user, body.query, body.list_id)
        cohort = snap.cohort().with_options(options)
        sets = dict(cohort.sets(body.query, scope))
        return sets, asdict(cohort.breakdown(body.query, scope)), snap.generation

    sets, breakdown, generation = state.live.run(run)
    counts: dict[str, Any] = {unit: int(mask.sum()) for unit, mask in sets.items()}
    if not user.sees_text:  # each bar is part of the cohort's reports: drawn within them
        within = mask_set("report", sets["report"])
        counts = viewer_counts(sets, state.config.viewer_min_count, state.count_key)
        breakdown = {name: for_viewer(by, state, within + name.encode())
                     for name, by in breakdown.items()}
    audit.record("charts/cohort", body.model_dump(), counts, generation)
    return {"query": body.query, "counts": counts, "generation": generation} | breakdown


@router.get("/polarity", summary="Reports stating a finding as present, absent, uncertain,"
            " historical, indication")
def polarity_chart(term: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_TEXT)],
                   user: Caller, audit: Audit, state: State,
                   list_id: int | None = None) -> dict[str, Any]:
    """``Cohort.polarity_mix`` of one finding (a cohort term: one finding of the lexicon)."""

    def run(snap: Snapshot) -> tuple[dict[str, int], str]:
        scope = query_scope(state, snap, user, "", list_id)
        return snap.cohort().polarity_mix(term, scope), snap.generation

    mix, generation = state.live.run(run)
    if not user.sees_text:
        mix = for_viewer(mix, state, id_set("polarity", [fold(term)]))
    audit.record("charts/polarity", {"term": term, "list_id": list_id}, mix, generation)
    return {"term": term, "reports": mix, "generation": generation}


def for_viewer(counts: dict[str, int], state: ServerState, within: bytes
               ) -> dict[str, int | None]:
    """Counts as the counts-only role sees every count (``small_counts``), each drawn by what
    it is part of (``within``) and its name."""
    return {key: viewer_count(n, state.config.viewer_min_count, within + b"\0" + key.encode(),
                              state.count_key) for key, n in counts.items()}
