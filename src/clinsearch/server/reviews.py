"""A chart review's steps over an index, shared by the server's routes and ``clinsearch review``:
start one (draw the sample and keep it), the blind view of a sampled report, the rejected
members with their evidence, the changes a newer generation brings, and the export rows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from clinsearch import Index
from clinsearch.annotate.explain_findings import trigger_words
from clinsearch.evaluate.chart_review import Strata, draw, mention_reader
from clinsearch.exports import csv_cell
from clinsearch.index.report_view import ReportView
from clinsearch.search.cohort import Cohort, Member, Scope, members_csv_rows
from clinsearch.search.tiers import report_tiers
from clinsearch.server.records import csv_chunks
from clinsearch.server.review_store import Review, ReviewState, ReviewStore, export_header

MAX_SAMPLE = 1000  # members drawn for one review
MAX_NONMEMBERS = 500


@dataclass(frozen=True)
class Rejected:
    """A sampled member judged not to meet the cohort: where the engine read it (the evidence
    sentence, the finding as matched and the cue that decided its reading) and why not."""

    report_id: str
    sentence_id: str
    sentence: str
    matched: str
    trigger: str
    reason: str


def finding_names(members: list[Member]) -> list[str]:
    """The finding names the members matched (from their patterns ``type|polarity|name...``)."""
    return sorted({m.term.split("|")[2] if m.term.count("|") >= 2 else m.term
                   for m in members if m.term})


def start_review(store: ReviewStore, index: Index, cohort: Cohort, owner: str, query: str,
                 scope: Scope, state: dict[str, str], generation: str, *, name: str = "",
                 size: int | None = 10, seed: int = 26, strata: Strata = "none",
                 nonmembers: int = 0, blind: bool = True, required: int = 1,
                 reviewers: list[str] | None = None) -> Review:
    """Draw a review's sample from ``query``'s report-level members and store it."""
    from clinsearch.errors import InputError

    if size is not None and not 1 <= size <= MAX_SAMPLE:
        raise InputError(f"field 'size': 1 to {MAX_SAMPLE} members (or all of them)")
    if not 0 <= nonmembers <= MAX_NONMEMBERS:
        raise InputError(f"field 'nonmembers': 0 to {MAX_NONMEMBERS}")
    members = cohort.members(query, "report", scope)
    if not members:
        raise InputError(f"field 'query': the cohort {query!r} has no members to review")
    mentioning = mention_reader(index) if nonmembers else None
    tiers = report_tiers(index.session, query) if strata == "tier" else None
    drawn = draw(cohort, query, scope, size, seed, strata, nonmembers, mentioning, tiers)
    return store.create(owner, name, query, state, drawn,
                        sorted({m.report_id for m in members}), finding_names(members),
                        seed=seed, size=size, strata=strata, blind=blind, required=required,
                        reviewers=reviewers, generation=generation)


def blind_view(view: ReportView, highlight: list[str]) -> dict[str, Any]:
    """A sampled report as a reviewer reads it: its text and sections, with the spans of the
    review's finding marked in whatever polarity, and nothing of the engine's reading (no
    polarity, context or trigger)."""
    names = set(highlight)
    spans = sorted({(f.finding.start, f.finding.end) for f in view.findings
                    if f.finding.name in names})
    r = view.report
    return {"report_id": r.id, "date": r.date, "type": r.type, "text": r.text,
            "sections": [{"name": s.name, "start": s.start, "end": s.end}
                         for s in view.sections],
            "highlights": [{"start": a, "end": b} for a, b in spans]}


def rejected(state: ReviewState, index: Index) -> list[Rejected]:
    """The sampled members whose final verdict is does not meet, each with its evidence
    sentence, the finding as matched, the cue that decided it and the reviewers' reasons."""
    from clinsearch.evaluate.chart_review import final_verdicts

    final = final_verdicts(state.items, state.judgments, state.adjudicated,
                           state.review.required)
    names = set(state.review.highlight)
    out = []
    for item in state.items:
        if item.kind != "member" or final[item.report_id] != "does_not_meet":
            continue
        view = index.report(item.report_id)
        sentence = next((s for s in view.sentences if s.id == item.sentence_id), None)
        found = [f.finding for f in view.findings
                 if f.sentence_id == item.sentence_id and f.finding.name in names]
        triggers = sorted({trigger_words(t, offsets=False) for f in found
                           if (t := f.trigger) is not None})
        out.append(Rejected(item.report_id, item.sentence_id,
                            sentence.text if sentence else "",
                            "; ".join(sorted({f.pattern for f in found})),
                            "; ".join(triggers) or "none (read as present, asserted)",
                            " | ".join(state.notes(item.report_id))))
    return out


def rejected_rows(found: list[Rejected]) -> Iterator[list[str]]:
    """The rejected members as CSV rows: ids, the matched finding, the cue and the reason
    (no report text)."""
    yield ["report_id", "evidence_sentence_id", "matched", "trigger", "reason"]
    for r in found:
        yield [csv_cell(c) for c in (r.report_id, r.sentence_id, r.matched, r.trigger,
                                     r.reason)]


def changes(review: Review, sample: list[str], members_now: list[str]) -> dict[str, Any]:
    """What a rerun of the cohort changes: members that left or entered since the draw, and
    the sampled members that are no longer members (their judgments stay as made)."""
    then, now = set(review.member_ids), set(members_now)
    return {"members_then": len(then), "members_now": len(now),
            "entered": sorted(now - then), "left": sorted(then - now),
            "sampled_left": sorted(set(sample) & (then - now))}


def export_text(state: ReviewState, members: list[Member], level: str, generation_now: str,
                date: str) -> Iterator[str]:
    """The cohort export with its review: the review's ``#`` header lines (comments to a CSV
    reader), then the members as ``cohort --export`` writes them."""
    yield "".join(" ".join(line.split()) + "\r\n"
                  for line in export_header(state, generation_now, date))
    yield from csv_chunks(members_csv_rows(members, level))  # type: ignore[arg-type]
