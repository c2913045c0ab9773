"""Where a query looks for one caller: the term bundles it may name and the uploaded id list a
cohort is restricted to (``Scope``, built on the live snapshot); a search's bundles expanded,
the cohort query that counts exactly the units asserting a search, and the tiers a saved
cohort counts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fastapi import HTTPException

from clinsearch.errors import ClinsearchError
from clinsearch.search.cohort import Cohort, Scope
from clinsearch.search.cohort.syntax import fold
from clinsearch.search.filters import ReportFilters
from clinsearch.search.tiers import saved_options
from clinsearch.server.auth import User
from clinsearch.server.live import Snapshot
from clinsearch.server.state import ServerState
from clinsearch.server.workbench_store import IdList


def listed(state: ServerState, user: User, list_id: int) -> IdList:
    """The caller's own id list ``list_id``: another user's list is answered as one that does
    not exist (404), so list numbers reveal nothing."""
    if not user.sees_text:
        raise HTTPException(403, f"role {user.role!r} sees counts only: id lists name patients")
    found = state.workbench.id_list(list_id)
    if found is None or found.owner != user.name:
        raise HTTPException(404, f"you have no id list {list_id}")
    return found


def query_scope(state: ServerState, snap: Snapshot, user: User, query: str,
                list_id: int | None) -> Scope:
    """The bundles ``query`` names (the caller's own, else shared ones) and the reports of the
    list ``list_id`` (None: every report); for the counts-only role, every filter expression
    must select at least the viewer threshold of reports (``search.cohort.width``)."""
    folded = fold(query)
    bundles = {name: terms for name, terms in state.workbench.bundle_terms_for(user.name).items()
               if name in folded}
    within = None
    if list_id is not None:
        chosen = listed(state, user, list_id)
        within = snap.cohort().id_mask(chosen.kind, chosen.ids)[0]
    width = 0 if user.sees_text else state.config.viewer_min_count
    return snap.cohort().scope(bundles, within, width)


def saved_cohort(snap: Snapshot, page: Mapping[str, str]) -> Cohort:
    """The cohort engine a saved cohort's page state counts with: the snapshot's, widened by
    the tiers the state names (``context``, ``include_uncertain``, as ``POST /api/cohort``)."""
    return snap.cohort().with_options(saved_options(page))


_BUNDLE_REF = re.compile(r'bundle:(?:"([^"]+)"|(\S+))', re.IGNORECASE)
_OR = re.compile(r"\s+or\s+", re.IGNORECASE)


def expand_bundles(state: ServerState, user: User, query: str) -> str:
    """A search query with each ``bundle:NAME`` replaced by its terms joined by "or" (the
    query parser's alternatives); an unknown bundle is a user error."""
    if not _BUNDLE_REF.search(query):
        return query
    bundles = state.workbench.bundle_terms_for(user.name)

    def terms(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        found = bundles.get(fold(name))
        if found is None:
            raise ClinsearchError(f"unknown bundle {name!r}; bundles: "
                                  f"{', '.join(sorted(bundles)) or 'none'}")
        return " or ".join(found)

    return _BUNDLE_REF.sub(terms, query)


def cohort_reading(snap: Snapshot, query: str, polarity: str, filters: ReportFilters
                   ) -> str | None:
    """The cohort query counting the units that assert a search query: its alternatives
    ("or") each one finding of the lexicon, read with the polarity the query states, under
    the same date, type and section filters; None when the search has no such reading (a
    word outside the lexicon, several findings in one alternative, another polarity)."""
    if polarity != "query":
        return None
    parts = [p.strip() for p in _OR.split(query) if p.strip()]
    if not parts or any('"' in p for p in parts):
        return None
    if not all(t.in_lexicon for t in snap.cohort().bundle_terms(parts)):
        return None
    reading = " OR ".join(f'"{p}"' for p in parts)
    limits = []
    if filters.date_from or filters.date_to:
        limits.append(f"date:{filters.date_from or ''}..{filters.date_to or ''}")
    for key, value in (("type", filters.report_type), ("section", filters.section)):
        if value:
            limits.append(f'{key}:"{value}"')
    return f"({reading}) {' '.join(limits)}" if limits else reading


def stated_polarities(snap: Snapshot, query: str) -> dict[str, str]:
    """Each lexicon concept the search query names (with its descendants), mapped to the
    polarity the query states for it."""
    tools = snap.cohort().tools
    parsed = tools.parser.parse(query, map_unknown=False)
    return {concept: finding.polarity for group in parsed.groups for finding in group
            for concept in tools.hierarchy.descendants(finding.concept)}


def against_query(findings: list[dict[str, Any]], stated: dict[str, str]) -> list[str]:
    """The polarities a hit's sentence states for the query's concepts other than the query
    does ("absent" for "No pneumothorax." under the query "pneumothorax"), when it never
    states them as the query does; empty when the hit agrees."""
    said = {(f["concept"], f["polarity"]) for f in findings if f["concept"] in stated}
    if not said or any(stated[c] == p for c, p in said):
        return []
    return sorted({p for _, p in said})
