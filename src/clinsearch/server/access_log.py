"""The server's access log without query strings or ids in paths: searches, cohort queries,
report ids and user names stay in the audit trail (which records who asked), never in the
plain server log (``/api/reports/374`` is logged as ``/api/reports/{id}``)."""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

from uvicorn.config import LOGGING_CONFIG

_ID_IN_PATH = re.compile(r"^(/api/(?:reports|users))/[^/?]+")


class DropQueryString(logging.Filter):
    """Cut ``?...`` and ids from the path of uvicorn's access records (client, method, path)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path = _ID_IN_PATH.sub(r"\1/{id}", args[2].split("?", 1)[0])
            record.args = (*args[:2], path, *args[3:])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with query strings dropped from access lines."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"drop_query": {"()": DropQueryString}}
    config["handlers"]["access"]["filters"] = ["drop_query"]
    return config
