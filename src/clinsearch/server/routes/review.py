"""Chart review of a saved cohort: draw a fixed sample of its members, judge them blind (one or
two reviewers), list disagreements for the owner to settle, and report precision with its
Wilson 95% interval, Cohen's kappa and a recall estimate; export the cohort with its review.

Only researchers and admins start or judge a review; a viewer the owner lists sees its figures
only; anyone else gets 404 for it. Every step is audited, with the report ids it shows.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Path
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from clinsearch.evaluate.chart_review import MAX_NOTE, VERDICTS
from clinsearch.server.auth import User
from clinsearch.server.deps import Audit, Caller, State, TextReader
from clinsearch.server.download_names import slug
from clinsearch.server.live import Snapshot
from clinsearch.server.query_scope import query_scope, saved_cohort
from clinsearch.server.records import csv_chunks
from clinsearch.server.review_store import Review, ReviewState
from clinsearch.server.reviews import (
    MAX_NONMEMBERS,
    MAX_SAMPLE,
    blind_view,
    changes,
    export_text,
    rejected,
    rejected_rows,
    start_review,
)
from clinsearch.server.small_counts import id_set, viewer_count
from clinsearch.server.state import ServerState
from clinsearch.units import check_level

MAX_ID = 200  # characters of a report id in a request
ReportId = Annotated[str, Path(max_length=MAX_ID)]
router = APIRouter(prefix="/api/reviews")


class StartRequest(BaseModel):
    """Which saved cohort to review and how: the sample's size (None: every member), seed and
    strata, how many non-members that mention the finding to add (for recall), whether the
    reviewers are blind, how many must judge each report, and who else may judge."""

    saved_id: int
    name: str = Field("", max_length=200)
    size: int | None = Field(10, ge=1, le=MAX_SAMPLE)
    seed: int = Field(26, ge=0, le=2**31)
    strata: Literal["none", "section", "year", "tier"] = "none"
    nonmembers: int = Field(0, ge=0, le=MAX_NONMEMBERS)
    blind: bool = True
    second_reviewer: bool = False
    reviewers: list[str] = Field(default_factory=list, max_length=20)


class JudgmentRequest(BaseModel):
    """A verdict on a sampled report and a short note (a reason class, never report text)."""

    verdict: Literal["meets", "does_not_meet", "cannot_tell"]
    note: str = Field("", max_length=MAX_NOTE)


@router.post("", summary="Start a chart review of a saved cohort: draw its sample once")
def start(body: StartRequest, user: TextReader, audit: Audit, state: State) -> dict[str, Any]:
    """Draw the sample (seeded; stratified on request) from the cohort's report-level members
    on the live generation, and keep it fixed."""
    saved = state.workbench.saved_item(user.name, body.saved_id)
    if saved is None:
        raise HTTPException(404, f"you have nothing saved as {body.saved_id}")
    if saved.kind != "cohort":
        raise HTTPException(400, "field 'saved_id': review a saved cohort, not a search")
    query = saved.state.get("query", "")
    list_id = int(saved.state["list"]) if saved.state.get("list", "").isdigit() else None

    def run(snap: Snapshot) -> Review:
        scope = query_scope(state, snap, user, query, list_id)
        return start_review(
            state.reviews, snap.index, saved_cohort(snap, saved.state), user.name, query, scope,
            saved.state,
            snap.generation, name=body.name or saved.name, size=body.size, seed=body.seed,
            strata=body.strata, nonmembers=body.nonmembers, blind=body.blind,
            required=2 if body.second_reviewer else 1, reviewers=body.reviewers)

    review = state.live.run(run)
    found = state.reviews.state(review)
    audit.record("review/start", body.model_dump(), {"sampled": len(found.items)},
                 review.generation, {"reports": [i.report_id for i in found.items]})
    return _shown(found, user, state)


@router.get("", summary="The reviews the caller owns or is listed on, with their figures")
def reviews(user: Caller, audit: Audit, state: State) -> dict[str, Any]:
    """Newest first; figures only (no report ids)."""
    found = [state.reviews.state(r) for r in state.reviews.reviews(user.name)]
    audit.record("review/list", {}, {"reviews": len(found)}, "")
    return {"reviews": [_summary(s, user, state) for s in found]}


@router.get("/{review_id}", summary="A review: its figures, and for a reviewer its sample")
def review(review_id: int, user: Caller, audit: Audit, state: State) -> dict[str, Any]:
    """The figures beside the cohort's exact counts; for a reviewer, the sampled report ids in
    their blind order with the caller's own verdicts (never another reviewer's)."""
    found = _visible(state, user, review_id)
    shown = _shown(found, user, state)
    audit.record("review", {"id": review_id}, {"sampled": len(found.items)},
                 found.review.generation,
                 {"reports": [i["report_id"] for i in shown.get("items", [])]})
    return shown


@router.get("/{review_id}/reports/{report_id}", summary="A sampled report, blind: its text"
            " with the finding marked, without the engine's reading")
def read(review_id: int, report_id: ReportId, user: TextReader, audit: Audit, state: State
         ) -> dict[str, Any]:
    """The report's text, sections and the spans of the review's finding (any polarity)."""
    found = _visible(state, user, review_id)
    _sampled(found, report_id)
    view, generation = state.live.run(lambda snap: (snap.index.report(report_id),
                                                    snap.generation))
    audit.record("review/report", {"id": review_id, "report": report_id}, {"reports": 1},
                 generation, {"reports": [report_id]})
    mine = next((j for j in found.judgments if j.reviewer == user.name
                 and j.report_id == report_id), None)
    unblind = _unblinded(found, user)
    item = next(i for i in found.items if i.report_id == report_id)
    return blind_view(view, found.review.highlight) | {
        "review_id": review_id, "verdict": mine.verdict if mine else None,
        "note": mine.note if mine else "", "generation": generation} | (
        {"kind": item.kind, "evidence_sentence_id": item.sentence_id} if unblind else {})


@router.put("/{review_id}/judgments/{report_id}", summary="Record the caller's verdict on a"
            " sampled report")
def judge(review_id: int, report_id: ReportId, body: JudgmentRequest, user: TextReader,
          audit: Audit, state: State) -> dict[str, Any]:
    """Meets, does not meet or cannot tell, and a short note (printable, at most 500
    characters); a second call changes the caller's own verdict."""
    found = _visible(state, user, review_id)
    _sampled(found, report_id)
    judgment = state.reviews.judge(found.review, report_id, user.name, body.verdict, body.note)
    audit.record("review/judge", {"id": review_id, "report": report_id,
                                  "verdict": body.verdict}, {"reports": 1},
                 found.review.generation, {"reports": [report_id]})
    return asdict(judgment) | {"figures": asdict(state.reviews.state(found.review).figures())}


@router.get("/{review_id}/disagreements", summary="Reports the reviewers judged differently"
            " (the owner settles them)")
def review_disagreements(review_id: int, user: TextReader, audit: Audit, state: State
                         ) -> dict[str, Any]:
    """Each disputed report with every reviewer's verdict and note (owner only)."""
    found = _owned(state, user, review_id)
    listed = found.disagreements()
    audit.record("review/disagreements", {"id": review_id}, {"disputed": len(listed)},
                 found.review.generation, {"reports": [i.report_id for i, _ in listed]})
    return {"disagreements": [{"report_id": item.report_id, "verdicts": verdicts,
                               "notes": found.notes(item.report_id)}
                              for item, verdicts in listed]}


@router.put("/{review_id}/adjudications/{report_id}", summary="Settle a sampled report's"
            " verdict (owner)")
def adjudicate(review_id: int, report_id: ReportId, body: JudgmentRequest, user: TextReader,
               audit: Audit, state: State) -> dict[str, Any]:
    """The owner's final verdict on a report, whatever the reviewers said."""
    found = _owned(state, user, review_id)
    _sampled(found, report_id)
    state.reviews.adjudicate(found.review, report_id, user.name, body.verdict, body.note)
    audit.record("review/adjudicate", {"id": review_id, "report": report_id,
                                       "verdict": body.verdict}, {"reports": 1},
                 found.review.generation, {"reports": [report_id]})
    return {"figures": asdict(state.reviews.state(found.review).figures())}


@router.get("/{review_id}/rejected", summary="Members judged not to meet, with their"
            " evidence sentence, trigger and reason")
def review_rejected(review_id: int, user: TextReader, audit: Audit, state: State,
                    format: Literal["json", "csv"] = "json") -> Any:
    """JSON for the page (the evidence sentence included), or CSV of the rejected ids with the
    matched finding, the cue and the reason (no report text)."""
    found = _owned(state, user, review_id)
    listed, generation = state.live.run(lambda snap: (rejected(found, snap.index),
                                                      snap.generation))
    audit.record("review/rejected", {"id": review_id, "format": format},
                 {"rejected": len(listed)}, generation,
                 {"reports": [r.report_id for r in listed]})
    if format == "csv":
        return StreamingResponse(csv_chunks(rejected_rows(listed)),
                                 media_type="text/csv; charset=utf-8", headers={
                                     "Content-Disposition": "attachment; filename="
                                     f'"review-{review_id}-rejected.csv"'})
    return {"rejected": [asdict(r) for r in listed]}


@router.post("/{review_id}/rerun", summary="Rerun the reviewed cohort on the live generation:"
             " which members changed since the draw")
def rerun(review_id: int, user: TextReader, audit: Audit, state: State) -> dict[str, Any]:
    """Members that left or entered; sampled members that left keep their judgments."""
    found = _owned(state, user, review_id)
    r = found.review

    def run(snap: Snapshot) -> tuple[list[str], str]:
        scope = query_scope(state, snap, user, r.query, _list_id(r))
        members = saved_cohort(snap, r.state).members(r.query, "report", scope)
        return [m.report_id for m in members], snap.generation

    now, generation = state.live.run(run)
    shown = changes(r, [i.report_id for i in found.items if i.kind == "member"], now)
    audit.record("review/rerun", {"id": review_id},
                 {k: len(v) if isinstance(v, list) else v for k, v in shown.items()},
                 generation, {"reports": shown["entered"] + shown["left"]})
    return shown | {"generation_then": r.generation, "generation_now": generation}


@router.get("/{review_id}/export", summary="The reviewed cohort as CSV, its review in the header")
def export(review_id: int, user: TextReader, audit: Audit, state: State) -> StreamingResponse:
    """``#`` lines: the review, cohort definition, index generations, date and figures; then
    every member at the saved cohort's level as ``cohort --export`` writes them."""
    found = _owned(state, user, review_id)
    r = found.review
    level = r.state.get("level", "patient")
    check_level(level)

    def run(snap: Snapshot) -> tuple[list[Any], str]:
        scope = query_scope(state, snap, user, r.query, _list_id(r))
        cohort = saved_cohort(snap, r.state)
        return cohort.members(r.query, level, scope), snap.generation  # type: ignore[arg-type]

    members, generation = state.live.run(run)
    audit.record("review/export", {"id": review_id, "level": level},
                 {"exported": len(members)}, generation,
                 {"reports": [m.report_id for m in members if m.report_id]})
    today = datetime.now(UTC)
    name = f"review-{review_id}-{slug(r.query) or 'cohort'}-{today:%Y%m%d}.csv"
    return StreamingResponse(
        export_text(found, members, level, generation, today.isoformat(timespec="seconds")),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'})


def _list_id(review: Review) -> int | None:
    listed = review.state.get("list", "")
    return int(listed) if listed.isdigit() else None


def _visible(state: ServerState, user: User, review_id: int) -> ReviewState:
    """The review if the caller owns it or is listed on it (404 otherwise, as for none)."""
    found = state.reviews.review(review_id)
    if found is None or not found.may_see(user.name):
        raise HTTPException(404, f"there is no review {review_id} of yours")
    return state.reviews.state(found)


def _owned(state: ServerState, user: User, review_id: int) -> ReviewState:
    """The review if the caller owns it (404 for another user's; 403 for a listed one)."""
    found = _visible(state, user, review_id)
    if found.review.owner != user.name:
        raise HTTPException(403, "only the review's owner does this")
    return found


def _sampled(found: ReviewState, report_id: str) -> None:
    if all(i.report_id != report_id for i in found.items):
        raise HTTPException(404, f"report {report_id!r} is not in this review's sample")


def _unblinded(found: ReviewState, user: User) -> bool:
    """Whether the caller may see the engine's reading: a review started open (not blind)."""
    return not found.review.blind and user.sees_text


def _summary(found: ReviewState, user: User, state: ServerState) -> dict[str, Any]:
    """A review's name, cohort and figures; for a viewer the cohort's counts (and the
    members and non-members they rest on) offset, withheld or rounded as every count it sees,
    keyed by the cohort query and its generation (a viewer cannot start a review, so cannot
    ask the same count again under other keys)."""
    r = found.review
    counts: dict[str, Any] = dict(r.counts)
    figures = asdict(found.figures())
    if not user.sees_text:
        threshold, key = state.config.viewer_min_count, state.count_key

        def shown(what: str, n: int) -> int | None:
            return viewer_count(n, threshold, id_set(f"review {what}", [r.query, r.generation]),
                                key)

        counts = {unit: shown(unit, n) for unit, n in counts.items()}
        for name in ("members", "nonmember_pool"):
            figures[name] = shown(name, figures[name])
    return {"id": r.id, "name": r.name, "owner": r.owner, "query": r.query,
            "created": r.created, "generation": r.generation, "counts": counts,
            "figures": figures}


def _shown(found: ReviewState, user: User, state: ServerState) -> dict[str, Any]:
    """A review as the caller may see it: figures for all; the sample, in its blind order,
    with the caller's own verdicts, for a reviewer."""
    r = found.review
    shown = _summary(found, user, state) | {
        "state": r.state, "seed": r.seed, "size": r.size, "strata": r.strata,
        "blind": r.blind, "required": r.required, "reviewers": r.reviewers,
        "verdicts": list(VERDICTS), "is_owner": r.owner == user.name,
        "may_judge": user.sees_text}
    if not user.sees_text:
        return shown
    mine = {j.report_id: j for j in found.judgments if j.reviewer == user.name}
    unblind = _unblinded(found, user)
    shown["items"] = [
        {"report_id": i.report_id, "verdict": mine[i.report_id].verdict
         if i.report_id in mine else None,
         "note": mine[i.report_id].note if i.report_id in mine else ""}
        | ({"kind": i.kind, "stratum": i.stratum} if unblind else {})
        for i in found.items]
    return shown
