"""Uploaded id lists (patients or reports, from a CSV) that restrict a cohort, and the
comparison of two lists (both, only A, only B). Ids name patients: roles that see ids only,
each list its owner's only (404 for anyone else), every answer naming ids audited."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from fastapi import APIRouter, HTTPException
from pydantic import Field

from clinsearch.server.bodies import RequestBody
from clinsearch.server.deps import Audit, State, TextReader
from clinsearch.server.query_scope import listed
from clinsearch.server.workbench_store import IdList, read_id_csv

SHOWN_MISSING = 20  # ids not in the index shown back after an upload
router = APIRouter(prefix="/api/lists")


class ListUpload(RequestBody):
    """A CSV whose first column holds the ids (a header row is skipped)."""

    name: str = Field(min_length=1, max_length=200)
    kind: Literal["patient", "report"] = "patient"
    csv: str = Field(max_length=10_000_000)


@router.post("", summary="Upload a patient or report id list (CSV)")
def upload(body: ListUpload, user: TextReader, audit: Audit, state: State) -> dict[str, Any]:
    """Store the list; answer how many of its ids the index holds."""
    ids = read_id_csv(body.csv, f"list {body.name!r}")
    saved = state.workbench.add_list(user.name, body.name, body.kind, ids)
    missing, generation = state.live.run(
        lambda snap: (snap.cohort().id_mask(body.kind, ids)[1], snap.generation))
    audit.record("lists/upload", {"name": body.name, "kind": body.kind},
                 {"ids": len(ids), "missing": len(missing)}, generation,
                 {f"{body.kind}s": ids})  # the answer counts which the index holds
    return _summary(saved) | {"found": len(ids) - len(missing), "missing": len(missing),
                              "missing_examples": missing[:SHOWN_MISSING]}


@router.get("", summary="The caller's id lists")
def my_lists(user: TextReader, state: State) -> dict[str, Any]:
    """Name, kind and size of each list, newest first."""
    return {"lists": [_summary(x) for x in state.workbench.lists(user.name)]}


@router.get("/compare", summary="Two lists compared: ids in both, only in A, only in B")
def compare(a: int, b: int, user: TextReader, audit: Audit, state: State) -> dict[str, Any]:
    """The ids of each part, in the order of the list they come from."""
    first, second = listed(state, user, a), listed(state, user, b)
    if first.kind != second.kind:
        raise HTTPException(400, f"list {a} holds {first.kind} ids and list {b} {second.kind}"
                            " ids; compare lists of one kind")
    in_b, in_a = set(second.ids), set(first.ids)
    parts = {"both": [i for i in first.ids if i in in_b],
             "only_a": [i for i in first.ids if i not in in_b],
             "only_b": [i for i in second.ids if i not in in_a]}
    audit.record("lists/compare", {"a": a, "b": b}, {k: len(v) for k, v in parts.items()},
                 state.live.snapshot.generation, {f"{first.kind}s": [*first.ids, *second.ids]})
    return {"a": _summary(first), "b": _summary(second), "kind": first.kind,
            "counts": {k: len(v) for k, v in parts.items()}} | parts


@router.get("/{list_id}", summary="One list with its ids")
def one_list(list_id: int, user: TextReader, audit: Audit, state: State) -> dict[str, Any]:
    """The caller's list a URL names."""
    found = listed(state, user, list_id)
    audit.record("lists/read", {"id": list_id}, {"ids": len(found.ids)},
                 state.live.snapshot.generation, {f"{found.kind}s": found.ids})
    return asdict(found)


@router.delete("/{list_id}", summary="Remove one of the caller's lists")
def delete_list(list_id: int, user: TextReader, state: State) -> dict[str, Any]:
    """Only the owner removes a list."""
    try:
        state.workbench.delete_list(user.name, list_id)
    except LookupError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"removed": list_id}


def _summary(found: IdList) -> dict[str, Any]:
    return {"id": found.id, "name": found.name, "kind": found.kind, "size": len(found.ids),
            "owner": found.owner, "created": found.created}
