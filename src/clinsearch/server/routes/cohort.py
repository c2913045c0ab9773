"""Cohorts: exact counts at three levels, a page of members (ids in natural order: "245"
before "2422"), and the members as CSV (in the order ``clinsearch cohort --export`` writes)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from pydantic import Field

from clinsearch.limits import MAX_MEMBERS_PAGE, MAX_OFFSET, MAX_QUERY_CHARS
from clinsearch.search.cohort import ID_COLUMNS, members_csv_rows
from clinsearch.server.bodies import RequestBody
from clinsearch.server.deps import Audit, Caller, State, TextReader
from clinsearch.server.download_names import cohort_export_name
from clinsearch.server.live import Snapshot
from clinsearch.server.natural_order import natural_ids
from clinsearch.server.query_scope import query_scope
from clinsearch.server.records import csv_chunks
from clinsearch.server.small_counts import viewer_counts
from clinsearch.units import check_level

router = APIRouter(prefix="/api/cohort")


class CohortRequest(RequestBody):
    """A cohort query, the level its members are listed at, and which page of members."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    level: str = Field("patient", max_length=20)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    limit: int = Field(20, ge=0, le=MAX_MEMBERS_PAGE)
    list_id: int | None = None  # an uploaded id list the cohort is restricted to


@router.post("", summary="Cohort: exact counts at three levels and a page of members")
def cohort(body: CohortRequest, user: Caller, audit: Audit, state: State) -> dict[str, Any]:
    """``Cohort.counts`` and (for roles that see ids) a page of ``Cohort.members``."""
    check_level(body.level)

    def run(snap: Snapshot) -> tuple[dict[str, Any], list[Any], str]:
        scope = query_scope(state, snap, user, body.query, body.list_id)
        sets = snap.cohort.sets(body.query, scope)
        members = (snap.cohort.members(body.query, body.level, scope)  # type: ignore[arg-type]
                   if user.sees_text else [])
        return dict(sets), members, snap.generation

    sets, members, generation = state.live.run(run)
    counts = {unit: int(mask.sum()) for unit, mask in sets.items()}
    members = sorted(members, key=lambda m: natural_ids(m.ids))  # the CSV keeps the CLI's order
    page_members = members[body.offset : body.offset + body.limit]
    shown: dict[str, Any] = dict(counts)
    answer: dict[str, Any] = {"total": len(members)}
    if not user.sees_text:
        threshold = state.config.viewer_min_count
        shown = viewer_counts(sets, threshold, state.count_key)
        answer = {"total": shown.get(body.level), "count_threshold": threshold}
    audit.record("cohort", body.model_dump(), shown | {"returned": len(page_members)},
                 generation, _disclosed(page_members, body.level))
    remembered = {"query": body.query, "level": body.level} | (
        {"list": str(body.list_id)} if body.list_id is not None else {})
    state.workbench.remember(user.name, "cohort", remembered, shown)
    return answer | {
        "query": body.query, "level": body.level, "counts": shown, "offset": body.offset,
        "columns": list(ID_COLUMNS[body.level]),  # type: ignore[index]
        "members": [asdict(m) for m in page_members], "generation": generation}


@router.get("/export", summary="The cohort's members as CSV (as cohort --export)")
def cohort_export(audit: Audit, user: TextReader, state: State,
                  query: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS)],
                  level: Annotated[str, Query(max_length=20)] = "patient",
                  list_id: int | None = None) -> StreamingResponse:
    """Every member at ``level``, streamed as the CLI's ``cohort --export`` writes them."""
    check_level(level)
    members, generation = state.live.run(lambda snap: (snap.cohort.members(
        query, level, query_scope(state, snap, user, query, list_id)),  # type: ignore[arg-type]
        snap.generation))
    exported = {"exported": len(members),
                "patients": len({m.ids[0] for m in members}),
                "reports": len({m.report_id for m in members if m.report_id})}
    audit.record("cohort/export", {"query": query, "level": level, "list_id": list_id},
                 exported, generation, _disclosed(members, level))
    return StreamingResponse(
        csv_chunks(members_csv_rows(members, level)),  # type: ignore[arg-type]
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition":
                 f'attachment; filename="{cohort_export_name(query, level)}"'},
    )


def _disclosed(members: list[Any], level: str) -> dict[str, list[str]] | None:
    """The ids a list of members shows: each id column of ``level`` (patients, visits,
    reports) and the reports of their evidence sentences."""
    if not members:
        return None
    columns = ID_COLUMNS[level]  # type: ignore[index]
    shown = {column.removesuffix("_id") + "s": [m.ids[i] for m in members]
             for i, column in enumerate(columns) if column != "sentence_id"}
    evidence = [m.report_id for m in members if m.report_id]
    shown["reports"] = shown.get("reports", []) + evidence
    return shown
