"""The web page (static HTML/CSS/JS from the package)."""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import FileResponse

STATIC = resources.files("clinsearch.server") / "static"
router = APIRouter()


@router.get("/", include_in_schema=False)
def page() -> FileResponse:
    """The single page."""
    return FileResponse(str(STATIC / "index.html"))
