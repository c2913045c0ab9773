"""Where a cohort query looks for one caller: the term bundles it may name and the uploaded
id list it is restricted to (``Scope``, built on the live snapshot)."""

from __future__ import annotations

from fastapi import HTTPException

from clinsearch.search.cohort import Scope
from clinsearch.search.cohort.syntax import fold
from clinsearch.server.auth import User
from clinsearch.server.live import Snapshot
from clinsearch.server.state import ServerState
from clinsearch.server.workbench_store import IdList


def listed(state: ServerState, user: User, list_id: int) -> IdList:
    """The id list ``list_id`` (any user who sees ids may use a list a shared URL names)."""
    if not user.sees_text:
        raise HTTPException(403, f"role {user.role!r} sees counts only: id lists name patients")
    found = state.workbench.id_list(list_id)
    if found is None:
        raise HTTPException(404, f"there is no id list {list_id}")
    return found


def query_scope(state: ServerState, snap: Snapshot, user: User, query: str,
                list_id: int | None) -> Scope:
    """The bundles ``query`` names (the caller's own, else shared ones) and the reports of the
    list ``list_id`` (None: every report)."""
    folded = fold(query)
    bundles = {name: terms for name, terms in state.workbench.bundle_terms_for(user.name).items()
               if name in folded}
    within = None
    if list_id is not None:
        chosen = listed(state, user, list_id)
        within = snap.cohort.id_mask(chosen.kind, chosen.ids)[0]
    return snap.cohort.scope(bundles, within)
