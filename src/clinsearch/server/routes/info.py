"""What the server serves: whether it needs a token, and the live generation."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter

import clinsearch
from clinsearch.server.deps import Caller, State
from clinsearch.units import LEVELS

router = APIRouter(prefix="/api")


@router.get("/session", summary="Whether this server needs a token (no data)")
def session(state: State) -> dict[str, Any]:
    """Asked by the page before it has a token."""
    return {"auth_required": state.users is not None, "version": clinsearch.__version__}


@router.get("/info", summary="The live generation: counts, methods and configuration")
def info(user: Caller, state: State) -> dict[str, Any]:
    """Counts, methods, levels, sections and configuration of the generation serving now."""
    snap = state.live.snapshot
    manifest = snap.index.manifest
    return {"generation": snap.generation, "counts": asdict(manifest.counts),
            "methods": list(snap.methods), "warming": not state.live.warm.is_set(),
            "levels": list(LEVELS),
            "sections": list(snap.sections), "user": {"name": user.name, "role": user.role},
            "config": manifest.to_dict().get("config")}
