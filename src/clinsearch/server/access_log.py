"""The server's access log without query strings or ids in paths: searches, cohort queries,
patient, report, list and saved-item ids and user names stay in the audit trail (which records
who asked), never in the plain server log. Every path segment that is not a literal word of
one of the API's routes is logged as ``{id}`` (``/api/patients/P029/timeline`` as
``/api/patients/{id}/timeline``), so a route added later cannot leak its ids."""

from __future__ import annotations

import copy
import logging
from functools import cache
from typing import Any

from uvicorn.config import LOGGING_CONFIG

STATIC_PREFIX = "/static/"  # the page's own files, named by the package


@cache
def route_words() -> frozenset[str]:
    """Every literal segment of the API's route paths (``api``, ``patients``, ``timeline``)."""
    from clinsearch.server.routes import ROUTERS

    return frozenset(segment for router in ROUTERS for route in router.routes
                     for segment in getattr(route, "path", "").split("/")
                     if segment and "{" not in segment)


def logged_path(path: str) -> str:
    """``path`` without its query string, each segment not a route word replaced by ``{id}``."""
    path = path.split("?", 1)[0]
    if path.startswith(STATIC_PREFIX):
        return path
    words = route_words()
    return "/".join(s if not s or s in words else "{id}" for s in path.split("/"))


class DropQueryString(logging.Filter):
    """Cut ``?...`` and ids from the path of uvicorn's access records (client, method, path)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], logged_path(args[2]), *args[3:])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with query strings dropped from access lines."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"drop_query": {"()": DropQueryString}}
    config["handlers"]["access"]["filters"] = ["drop_query"]
    return config
