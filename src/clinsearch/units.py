"""The levels results are counted in: sentence -> report -> visit -> patient."""

from __future__ import annotations

from typing import Literal, cast

from clinsearch.errors import ClinsearchError

Level = Literal["sentence", "report", "visit", "patient"]
LEVELS: tuple[Level, ...] = ("sentence", "report", "visit", "patient")


def check_level(level: str) -> Level:
    """``level`` when it is one of ``LEVELS``, else a ClinsearchError naming the choices."""
    if level not in LEVELS:
        raise ClinsearchError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    return cast(Level, level)
