"""Term bundles: named lists of words, phrases and lexicon concepts, the caller's own or
shared, each term shown with how cohorts read it (a finding, or text); exported and imported
as a JSON file."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse

from clinsearch.errors import InputError
from clinsearch.server.bodies import RequestBody
from clinsearch.server.deps import Caller, State
from clinsearch.server.download_names import bundle_export_name
from clinsearch.server.live import Snapshot
from clinsearch.server.workbench_store import Bundle, bundle_name, bundle_terms

BUNDLE_FORMAT = "clinsearch-bundle/1"  # the "format" field of an exported bundle file
router = APIRouter(prefix="/api/bundles")


class BundleBody(RequestBody):
    """A bundle's terms and whether other users may use it."""

    terms: list[str]
    shared: bool = False


class BundleFile(RequestBody):
    """An exported bundle file (``BUNDLE_FORMAT``)."""

    format: str
    name: str
    terms: list[str]
    shared: bool = False


@router.get("", summary="The bundles the caller may use, each term with how it is read")
def list_bundles(user: Caller, state: State) -> dict[str, Any]:
    """The caller's bundles, then those other users share."""
    bundles = state.workbench.bundles(user.name)
    return {"bundles": state.live.run(lambda snap: [_shown(b, snap) for b in bundles])}


@router.put("/{name}", summary="Create or replace one of the caller's bundles")
def put_bundle(name: str, body: BundleBody, user: Caller, state: State) -> dict[str, Any]:
    """Store the bundle; its terms must be words or phrases (no double quotes)."""
    saved = state.workbench.save_bundle(user.name, name, body.terms, body.shared)
    return state.live.run(lambda snap: _shown(saved, snap))


@router.delete("/{name}", summary="Remove one of the caller's bundles")
def delete_bundle(name: str, user: Caller, state: State) -> dict[str, Any]:
    """Only the owner removes a bundle."""
    try:
        state.workbench.delete_bundle(user.name, name)
    except LookupError as exc:
        raise HTTPException(404, str(exc)) from None
    return {"removed": name}


@router.get("/{name}/export", summary="A bundle as a JSON file")
def export_bundle(name: str, user: Caller, state: State) -> JSONResponse:
    """The bundle in the file format ``POST /api/bundles/import`` reads."""
    found = state.workbench.bundle(user.name, name)
    if found is None:
        raise HTTPException(404, f"no bundle named {name!r}")
    body = {"format": BUNDLE_FORMAT, "name": found.name, "terms": found.terms,
            "shared": found.shared}
    return JSONResponse(body, headers={
        "Content-Disposition": f'attachment; filename="{bundle_export_name(found.name)}"'})


@router.post("/import", summary="Import a bundle file as one of the caller's bundles")
def import_bundle(body: BundleFile, user: Caller, state: State) -> dict[str, Any]:
    """A file of another format or with bad fields is refused, naming the field."""
    if body.format != BUNDLE_FORMAT:
        raise InputError(f"field 'format': expected {BUNDLE_FORMAT!r} (got {body.format!r})")
    saved = state.workbench.save_bundle(user.name, bundle_name(body.name),
                                        bundle_terms(body.terms), body.shared)
    return state.live.run(lambda snap: _shown(saved, snap))


def _shown(bundle: Bundle, snap: Snapshot) -> dict[str, Any]:
    """A bundle with each term's reading: ``finding`` (polarity as any finding) or ``text``."""
    readings = snap.cohort().bundle_terms(bundle.terms)
    return asdict(bundle) | {"readings": [
        {"term": r.text, "read_as": "finding" if r.in_lexicon else "text"} for r in readings]}
