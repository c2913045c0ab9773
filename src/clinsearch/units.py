"""The units results are counted in: sentence -> report -> visit -> patient."""

from __future__ import annotations

from typing import Literal

Level = Literal["sentence", "report", "visit", "patient"]
LEVELS: tuple[Level, ...] = ("sentence", "report", "visit", "patient")
