"""Cohorts: exact counts at three levels (asserted now, plus the wider tiers asked for) with
what each wider tier would add, a page of members (ids in natural order: "245" before "2422"),
and the members as CSV (in the order ``clinsearch cohort --export`` writes)."""

from __future__ import annotations

from dataclasses import asdict
from itertools import chain
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse
from pydantic import Field

from clinsearch.limits import MAX_MEMBERS_PAGE, MAX_OFFSET, MAX_QUERY_CHARS
from clinsearch.search.cohort import ID_COLUMNS, export_header, members_csv_rows
from clinsearch.search.tiers import WiderTier, cohort_options, counted_tiers, wider_tiers
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
    """A cohort query, the level its members are listed at, which page of members, and the
    wider search tiers counted too (as ``clinsearch cohort --context/--include-uncertain``)."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    level: str = Field("patient", max_length=20)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)
    limit: int = Field(20, ge=0, le=MAX_MEMBERS_PAGE)
    list_id: int | None = None  # an uploaded id list the cohort is restricted to
    context: str | None = Field(None, max_length=200)  # e.g. "indication,historical"
    include_uncertain: bool = False  # count hedged mentions too


@router.post("", summary="Cohort: exact counts at three levels, what wider tiers would add, "
             "and a page of members")
def cohort(body: CohortRequest, user: Caller, audit: Audit, state: State) -> dict[str, Any]:
    """``Cohort.counts`` (with the tiers asked for), what each wider tier would add
    (``search.tiers.wider_tiers``, as the CLI prints it) and, for roles that see ids, a page
    of ``Cohort.members``."""
    check_level(body.level)
    options = cohort_options(body.context, body.include_uncertain)

    def run(snap: Snapshot) -> tuple[dict[str, Any], int, list[Any], list[WiderTier], str]:
        scope = query_scope(state, snap, user, body.query, body.list_id)
        counted = snap.cohort().with_options(options)
        sets = counted.sets(body.query, scope)
        total, page = (counted.member_page(  # natural order here; the CSV keeps the CLI's
            body.query, body.level, scope, body.offset, body.limit,  # type: ignore[arg-type]
            natural_ids) if user.sees_text else (0, []))
        return dict(sets), total, page, wider_tiers(counted, body.query, scope, sets), \
            snap.generation

    sets, total, page_members, wider, generation = state.live.run(run)
    counts = {unit: int(mask.sum()) for unit, mask in sets.items()}
    shown: dict[str, Any] = dict(counts)
    wider_shown = [w.to_dict() for w in wider]
    answer: dict[str, Any] = {"total": total}
    if not user.sees_text:
        threshold = state.config.viewer_min_count
        shown = viewer_counts(sets, threshold, state.count_key)
        keyed = [w.to_dict() | {"adds": viewer_counts(w.added, threshold, state.count_key)}
                 for w in wider]  # each keyed by the units it adds, as every count
        # a tier all of whose numbers are withheld is left out: its mere presence says "> 0"
        wider_shown = [w for w in keyed if any(n is not None for n in w["adds"].values())]
        answer = {"total": shown.get(body.level), "count_threshold": threshold}
    tiers = counted_tiers(options)
    audit.record("cohort", body.model_dump() | {"counted_tiers": tiers},
                 shown | {"returned": len(page_members)}, generation,
                 _disclosed(page_members, body.level))
    remembered = {"query": body.query, "level": body.level} | (
        {"list": str(body.list_id)} if body.list_id is not None else {}) | (
        {"context": ",".join(options.context)} if options.context else {}) | (
        {"include_uncertain": "true"} if body.include_uncertain else {})
    state.workbench.remember(user.name, "cohort", remembered, shown)
    return answer | {
        "query": body.query, "level": body.level, "counts": shown, "offset": body.offset,
        "counted_tiers": tiers, "wider_tiers": wider_shown,
        "columns": list(ID_COLUMNS[body.level]),  # type: ignore[index]
        "members": [asdict(m) for m in page_members], "generation": generation}


@router.get("/export", summary="The cohort's members as CSV (as cohort --export)")
def cohort_export(audit: Audit, user: TextReader, state: State,
                  query: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS)],
                  level: Annotated[str, Query(max_length=20)] = "patient",
                  list_id: int | None = None,
                  context: Annotated[str | None, Query(max_length=200)] = None,
                  include_uncertain: bool = False) -> StreamingResponse:
    """Every member at ``level``, streamed as the CLI's ``cohort --export`` writes them: ``#``
    lines with the definition and the tiers counted, then the members."""
    check_level(level)
    options = cohort_options(context, include_uncertain)
    members, generation = state.live.run(lambda snap: (
        snap.cohort().with_options(options).members(  # type: ignore[arg-type]
            query, level, query_scope(state, snap, user, query, list_id)),
        snap.generation))
    exported = {"exported": len(members),
                "patients": len({m.ids[0] for m in members}),
                "reports": len({m.report_id for m in members if m.report_id})}
    tiers = counted_tiers(options)
    audit.record("cohort/export", {"query": query, "level": level, "list_id": list_id,
                                   "context": context, "include_uncertain": include_uncertain,
                                   "counted_tiers": tiers},
                 exported, generation, _disclosed(members, level))
    header = export_header(query, level, tiers,  # type: ignore[arg-type]
                           "" if list_id is None else f"id list {list_id}")
    return StreamingResponse(
        chain([header], csv_chunks(members_csv_rows(members, level))),  # type: ignore[arg-type]
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
