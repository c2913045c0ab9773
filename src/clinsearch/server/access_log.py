"""The server's access log without query strings: searches, cohort queries and report ids stay
in the audit trail (which records who asked), never in the plain server log."""

from __future__ import annotations

import copy
import logging
from typing import Any

from uvicorn.config import LOGGING_CONFIG


class DropQueryString(logging.Filter):
    """Cut ``?...`` from the path of uvicorn's access records (client, method, path, ...)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], args[2].split("?", 1)[0], *args[3:])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with query strings dropped from access lines."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"drop_query": {"()": DropQueryString}}
    config["handlers"]["access"]["filters"] = ["drop_query"]
    return config
