"""The units results are counted in: sentence -> report -> visit -> patient."""

from __future__ import annotations

from typing import Literal

Level = Literal["sentence", "report", "visit", "patient"]
LEVELS: tuple[Level, ...] = ("sentence", "report", "visit", "patient")
# The id columns that name one unit of each level (a visit is a visit of one patient).
UNIT_KEYS: dict[Level, tuple[str, ...]] = {
    "sentence": ("sentence_id",),
    "report": ("report_id",),
    "visit": ("patient_id", "visit_id"),
    "patient": ("patient_id",),
}
