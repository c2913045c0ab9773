"""Chart reviews, kept in the workbench's private SQLite file: each review's fixed sample (report
ids, never text), its reviewers, their judgments and notes, and the owner's adjudications.

The sample is drawn once (``chart_review.draw``) and never redrawn; a rerun of the cohort on a
newer generation is compared against the member ids kept at the draw. Every statement binds its
values as parameters; one connection serves the threads in turn. The CLI and the server both
read and write reviews through this class, and take their figures from ``review_figures``.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clinsearch.errors import InputError
from clinsearch.evaluate.chart_review import (
    MAX_NOTE,
    STRATA,
    VERDICTS,
    Drawn,
    Figures,
    Item,
    Judgment,
    disagreements,
    review_figures,
    seeded_rank,
)
from clinsearch.server.audit import utc_now
from clinsearch.server.sqlite_store import SqliteStore

MAX_REVIEWERS = 20
SCHEMA = """
CREATE TABLE IF NOT EXISTS reviews (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, query TEXT NOT NULL,
    state TEXT NOT NULL, seed INTEGER NOT NULL, size INTEGER, strata TEXT NOT NULL,
    blind INTEGER NOT NULL, required INTEGER NOT NULL, reviewers TEXT NOT NULL,
    generation TEXT NOT NULL, created TEXT NOT NULL, members INTEGER NOT NULL,
    nonmember_pool INTEGER NOT NULL, counts TEXT NOT NULL, member_ids TEXT NOT NULL,
    highlight TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS review_items (
    review_id INTEGER NOT NULL, position INTEGER NOT NULL, report_id TEXT NOT NULL,
    kind TEXT NOT NULL, stratum TEXT NOT NULL, sentence_id TEXT NOT NULL,
    PRIMARY KEY (review_id, report_id));
CREATE TABLE IF NOT EXISTS review_judgments (
    review_id INTEGER NOT NULL, report_id TEXT NOT NULL, reviewer TEXT NOT NULL,
    verdict TEXT NOT NULL, note TEXT NOT NULL, time TEXT NOT NULL,
    PRIMARY KEY (review_id, report_id, reviewer));
CREATE TABLE IF NOT EXISTS review_adjudications (
    review_id INTEGER NOT NULL, report_id TEXT NOT NULL, verdict TEXT NOT NULL,
    note TEXT NOT NULL, judge TEXT NOT NULL, time TEXT NOT NULL,
    PRIMARY KEY (review_id, report_id));
CREATE INDEX IF NOT EXISTS reviews_owner ON reviews (owner, id);
"""


@dataclass(frozen=True)
class Review:
    """A review of one cohort: what was sampled, from which generation, for whom."""

    id: int
    owner: str
    name: str
    query: str
    state: dict[str, str]  # the saved cohort's page state (query, level, list)
    seed: int
    size: int | None  # None: every member
    strata: str
    blind: bool
    required: int  # reviewers each item needs before it counts (1 or 2)
    reviewers: list[str]  # besides the owner: who may judge (viewers: read the figures)
    generation: str
    created: str
    members: int  # the cohort's reports at the draw
    nonmember_pool: int
    counts: dict[str, int]
    member_ids: list[str]  # every member report id at the draw (for the rerun's changes)
    highlight: list[str]  # the finding names the blind view marks, in any polarity

    def may_see(self, user: str) -> bool:
        """Whether ``user`` may see this review at all (its owner and its listed users)."""
        return user == self.owner or user in self.reviewers


@dataclass(frozen=True)
class ReviewState:
    """A review with its items, judgments and adjudications as stored."""

    review: Review
    items: list[Item]
    judgments: list[Judgment]
    adjudicated: dict[str, str]
    adjudication_notes: dict[str, str]

    def figures(self) -> Figures:
        """Precision, its interval, kappa and the recall estimate (``review_figures``)."""
        r = self.review
        return review_figures(self.items, self.judgments, self.adjudicated, r.members,
                              r.nonmember_pool, r.required)

    def disagreements(self) -> list[tuple[Item, dict[str, str]]]:
        """The items judged differently and not adjudicated yet."""
        return disagreements(self.items, self.judgments, self.adjudicated)

    def notes(self, report_id: str) -> list[str]:
        """Every reviewer's note on a report (and the adjudication's), in reviewer order."""
        found = [f"{j.reviewer}: {j.note}" for j in sorted(self.judgments,
                                                             key=lambda j: j.reviewer)
                 if j.report_id == report_id and j.note]
        if self.adjudication_notes.get(report_id):
            found.append(f"adjudication: {self.adjudication_notes[report_id]}")
        return found


class ReviewStore(SqliteStore):
    """The reviews in the workbench database at ``path`` (its own connection to the file)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, SCHEMA)

    def create(self, owner: str, name: str, query: str, state: dict[str, str], drawn: Drawn,
               member_ids: list[str], highlight: list[str], *, seed: int, size: int | None,
               strata: str, blind: bool = True, required: int = 1,
               reviewers: list[str] | None = None, generation: str = "") -> Review:
        """Store a drawn sample as a new review (fixed from now on)."""
        name = check_text(name, "name", 200) or f"review of {query}"[:200]
        listed = check_reviewers(reviewers or [], owner)
        if strata not in STRATA:
            raise InputError(f"field 'strata': one of {', '.join(STRATA)}")
        if required not in (1, 2):
            raise InputError("field 'required': 1 or 2 reviewers per item")
        if required == 2 and not listed:
            raise InputError("field 'reviewers': a second reviewer is required, so name one")
        with self._transaction() as db:
            row = db.execute(
                "INSERT INTO reviews (owner, name, query, state, seed, size, strata, blind,"
                " required, reviewers, generation, created, members, nonmember_pool, counts,"
                " member_ids, highlight) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " ?, ?) RETURNING id",
                (owner, name, query, json.dumps(state), seed, size, strata, int(blind),
                 required, json.dumps(listed), generation, utc_now(), drawn.members,
                 drawn.nonmember_pool, json.dumps(drawn.counts), json.dumps(member_ids),
                 json.dumps(highlight))).fetchone()
            review_id = int(row[0])
            db.executemany("INSERT INTO review_items (review_id, position, report_id, kind,"
                           " stratum, sentence_id) VALUES (?, ?, ?, ?, ?, ?)",
                           [(review_id, n, i.report_id, i.kind, i.stratum, i.sentence_id)
                            for n, i in enumerate(blind_order(drawn.items, seed))])
        found = self.review(review_id)
        assert found is not None
        return found

    def review(self, review_id: int) -> Review | None:
        """The review ``review_id`` (callers check ``may_see``)."""
        rows = self._rows(f"SELECT {REVIEW_COLUMNS} FROM reviews WHERE id = ?", (review_id,))
        return _review(rows[0]) if rows else None

    def reviews(self, user: str | None = None) -> list[Review]:
        """The reviews ``user`` may see (None: all of them), newest first."""
        rows = self._rows(f"SELECT {REVIEW_COLUMNS} FROM reviews ORDER BY id DESC", ())
        found = [_review(row) for row in rows]
        return [r for r in found if user is None or r.may_see(user)]

    def state(self, review: Review) -> ReviewState:
        """The review's items (in their blind order), judgments and adjudications."""
        items = [Item(r[0], r[1], r[2], r[3]) for r in self._rows(
            "SELECT report_id, kind, stratum, sentence_id FROM review_items WHERE review_id = ?"
            " ORDER BY position", (review.id,))]
        judgments = [Judgment(*r) for r in self._rows(
            "SELECT report_id, reviewer, verdict, note FROM review_judgments WHERE"
            " review_id = ? ORDER BY reviewer, report_id", (review.id,))]
        adjudications = self._rows("SELECT report_id, verdict, note FROM review_adjudications"
                                   " WHERE review_id = ?", (review.id,))
        return ReviewState(review, items, judgments, {r[0]: r[1] for r in adjudications},
                           {r[0]: r[2] for r in adjudications})

    def judge(self, review: Review, report_id: str, reviewer: str, verdict: str,
              note: str = "") -> Judgment:
        """Record (or change) ``reviewer``'s verdict on a sampled report."""
        judgment = Judgment(report_id, reviewer, check_verdict(verdict),
                            check_text(note, "note", MAX_NOTE))
        self._check_item(review, report_id)
        with self._transaction() as db:
            db.execute("INSERT INTO review_judgments (review_id, report_id, reviewer, verdict,"
                       " note, time) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (review_id,"
                       " report_id, reviewer) DO UPDATE SET verdict = excluded.verdict,"
                       " note = excluded.note, time = excluded.time",
                       (review.id, report_id, reviewer, judgment.verdict, judgment.note,
                        utc_now()))
        return judgment

    def adjudicate(self, review: Review, report_id: str, judge: str, verdict: str,
                   note: str = "") -> None:
        """Settle a sampled report's verdict (the owner does, after a disagreement)."""
        verdict, note = check_verdict(verdict), check_text(note, "note", MAX_NOTE)
        self._check_item(review, report_id)
        with self._transaction() as db:
            db.execute("INSERT INTO review_adjudications (review_id, report_id, verdict, note,"
                       " judge, time) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (review_id,"
                       " report_id) DO UPDATE SET verdict = excluded.verdict,"
                       " note = excluded.note, judge = excluded.judge, time = excluded.time",
                       (review.id, report_id, verdict, note, judge, utc_now()))

    def _check_item(self, review: Review, report_id: str) -> None:
        if not self._rows("SELECT 1 FROM review_items WHERE review_id = ? AND report_id = ?",
                          (review.id, report_id)):
            raise LookupError(f"report {report_id!r} is not in review {review.id}'s sample")


REVIEW_COLUMNS = ("id, owner, name, query, state, seed, size, strata, blind, required,"
                  " reviewers, generation, created, members, nonmember_pool, counts,"
                  " member_ids, highlight")


def _review(row: tuple[Any, ...]) -> Review:
    return Review(int(row[0]), row[1], row[2], row[3], json.loads(row[4]), int(row[5]),
                  None if row[6] is None else int(row[6]), row[7], bool(row[8]), int(row[9]),
                  json.loads(row[10]), row[11], row[12], int(row[13]), int(row[14]),
                  json.loads(row[15]), json.loads(row[16]), json.loads(row[17]))


def blind_order(items: tuple[Item, ...], seed: int) -> list[Item]:
    """The items in a seeded order that mixes members and non-members, so that a reviewer
    cannot tell from the place of a report what the engine made of it."""
    return sorted(items, key=lambda i: seeded_rank(seed, "order", i.report_id))


def check_verdict(verdict: object) -> str:
    """A verdict as given, checked against ``VERDICTS``."""
    if verdict not in VERDICTS:
        raise InputError(f"field 'verdict': one of {', '.join(VERDICTS)}")
    return str(verdict)


def check_text(text: object, field: str, limit: int) -> str:
    """A short free text (a note, a name) as given, stripped: at most ``limit`` characters,
    printable (no NUL, line breaks or bidirectional controls)."""
    if not isinstance(text, str):
        raise InputError(f"field {field!r}: a string")
    text = text.strip()
    if len(text) > limit:
        raise InputError(f"field {field!r}: at most {limit} characters (got {len(text)})")
    if not text.isprintable() or any(unicodedata.category(c) == "Cf" for c in text):
        raise InputError(f"field {field!r}: control or formatting characters are refused")
    return text


def check_reviewers(names: list[str], owner: str) -> list[str]:
    """The users listed on a review besides its owner: distinct, at most MAX_REVIEWERS."""
    kept = list(dict.fromkeys(check_text(n, "reviewers", 64) for n in names))
    kept = [n for n in kept if n and n != owner]
    if len(kept) > MAX_REVIEWERS:
        raise InputError(f"field 'reviewers': at most {MAX_REVIEWERS} users")
    return kept


def export_header(state: ReviewState, generation_now: str, date: str) -> list[str]:
    """The lines a cohort export carries about its review: the cohort definition, the index
    generations (drawn, exported), the date and the figures (``#`` comments before the CSV)."""
    r = state.review
    lines = [f"review: {r.id} {r.name} (owner {r.owner}, drawn {r.created}, seed {r.seed},"
             f" {'all members' if r.size is None else f'sample of {r.size}'}, strata {r.strata})",
             f"cohort definition: {r.query}" + "".join(
                 f"; {k} {v}" for k, v in sorted(r.state.items()) if k != "query"),
             f"index generation: drawn on {r.generation}, exported from {generation_now}",
             f"date: {date}",
             "exact counts at the draw: " + ", ".join(f"{k} {v}" for k, v in r.counts.items()),
             *state.figures().lines()]
    return ["# " + line for line in lines]
