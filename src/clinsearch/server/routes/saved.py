"""Saved searches and cohorts (named, with their query, time, counts and patients; a rerun
shows what changed since) and each user's history of queries. Only queries, counts and ids are
stored. A search counts (and follows the patients of) what asserts it, as the cohort does."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import Field

from clinsearch.errors import InputError
from clinsearch.search.filters import ReportFilters
from clinsearch.server.auth import User
from clinsearch.server.bodies import RequestBody
from clinsearch.server.deps import Audit, Caller, State
from clinsearch.server.live import Snapshot
from clinsearch.server.query_scope import (
    cohort_reading,
    expand_bundles,
    query_scope,
    saved_cohort,
)
from clinsearch.server.small_counts import viewer_counts
from clinsearch.server.state import ServerState
from clinsearch.server.workbench_store import Saved

SHOWN_CHANGES = 50  # patients added or removed shown by a rerun
router = APIRouter(prefix="/api")


class SaveRequest(RequestBody):
    """What to save: its name, kind and page state (a cohort's ``query``, ``level``, ``list``,
    and the wider tiers it counts, ``context`` and ``include_uncertain``; a search's ``q``,
    ``polarity`` and filters, as in its URL)."""

    name: str = Field(min_length=1, max_length=200)
    kind: Literal["search", "cohort"] = "cohort"
    state: dict[str, str]


@router.post("/saved", summary="Save a search or cohort under a name, with its counts now")
def save(body: SaveRequest, user: Caller, audit: Audit, state: State) -> dict[str, Any]:
    """Run what the state describes and store it with its counts and patients."""
    counts, patients, generation = _run(state, user, body.kind, body.state)
    audit.record("saved/save", {"name": body.name, "kind": body.kind} | body.state, counts,
                 generation)
    saved = state.workbench.save(user.name, body.name, body.kind, body.state, counts, patients)
    return _shown(saved)


@router.get("/saved", summary="The caller's saved searches and cohorts")
def saved_list(user: Caller, state: State) -> dict[str, Any]:
    """Newest first, with their counts when saved."""
    return {"saved": [_shown(s) for s in state.workbench.saved(user.name)]}


@router.post("/saved/{saved_id}/rerun", summary="Rerun a saved search or cohort: counts and"
             " patients now against when it was saved")
def rerun(saved_id: int, user: Caller, audit: Audit, state: State) -> dict[str, Any]:
    """Counts then and now, and (roles that see ids) the patients added and removed."""
    found = _mine(state, user, saved_id)
    counts, patients, generation = _run(state, user, found.kind, found.state)
    then, now = set(found.members), set(patients)
    added, removed = sorted(now - then), sorted(then - now)
    shown = added[:SHOWN_CHANGES] + removed[:SHOWN_CHANGES]
    audit.record("saved/rerun", {"id": saved_id} | found.state,
                 counts | {"added": len(added), "removed": len(removed)}, generation,
                 {"patients": shown} if shown else None)
    return {"saved": _shown(found), "counts_then": found.counts, "counts_now": counts,
            "added": len(added), "removed": len(removed),
            "added_ids": added[:SHOWN_CHANGES], "removed_ids": removed[:SHOWN_CHANGES]}


@router.delete("/saved/{saved_id}", summary="Remove a saved search or cohort")
def delete_saved(saved_id: int, user: Caller, state: State) -> dict[str, Any]:
    """Only the owner removes it."""
    _mine(state, user, saved_id)
    state.workbench.delete_saved(user.name, saved_id)
    return {"removed": saved_id}


@router.get("/history", summary="The caller's latest queries, newest first")
def history(user: Caller, state: State) -> dict[str, Any]:
    """Each entry's kind (search or cohort), page state, counts and time."""
    return {"history": [asdict(h) for h in state.workbench.history(user.name)]}


def _mine(state: ServerState, user: User, saved_id: int) -> Saved:
    found = state.workbench.saved_item(user.name, saved_id)
    if found is None:
        raise HTTPException(404, f"you have nothing saved as {saved_id}")
    return found


def _run(state: ServerState, user: User, kind: str, page: dict[str, str]
         ) -> tuple[dict[str, int], list[str], str]:
    """The counts of the search or cohort a page state describes and its patients (none for
    roles that see counts only)."""
    field = "q" if kind == "search" else "query"
    query = page.get(field, "").strip()
    if not query:
        raise InputError(f"field 'state.{field}': a saved {kind} needs its query")
    list_id = int(page["list"]) if page.get("list", "").isdigit() else None

    def run(snap: Snapshot) -> tuple[dict[str, Any], list[str], str]:
        nonlocal query
        if kind == "search":
            filters = ReportFilters(page.get("date_from") or None, page.get("date_to") or None,
                                    page.get("section") or None, page.get("type") or None,
                                    page.get("context") or None)
            searched = expand_bundles(state, user, query)
            reading = cohort_reading(snap, searched, page.get("polarity", "query"), filters)
            if reading is None:
                raise InputError(f"field 'state.q': {query!r} is not findings of the lexicon,"
                                 " so it has no exact count to follow; save it as a cohort")
            query = reading
        scope = query_scope(state, snap, user, query, list_id)
        cohort = snap.cohort() if kind == "search" else saved_cohort(snap, page)
        sets = dict(cohort.sets(query, scope))
        patients = ([m.ids[0] for m in cohort.members(query, "patient", scope)]
                    if user.sees_text else [])
        return sets, patients, snap.generation

    sets, patients, generation = state.live.run(run)
    counts: dict[str, Any] = {unit: int(mask.sum()) for unit, mask in sets.items()}
    if not user.sees_text:  # small counts withheld, larger ones rounded, as every count
        counts = viewer_counts(sets, state.config.viewer_min_count, state.count_key)
    return counts, patients, generation


def _shown(saved: Saved) -> dict[str, Any]:
    """A saved item without its member ids (a rerun compares them)."""
    return {k: v for k, v in asdict(saved).items() if k != "members"} | {
        "patients": len(saved.members)}
