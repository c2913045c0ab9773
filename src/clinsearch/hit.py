"""Search hits: one ranked sentence, report, visit or patient with the sentence that shows why."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from clinsearch.units import Level


@dataclass(frozen=True, slots=True)
class Hit:
    """A ranked result at one level; ``sentence`` is its best sentence, ``highlights`` are the
    character spans of matched terms in it, ``explanation`` holds method-specific details."""

    rank: int
    level: Level
    id: str  # the id at this level: sentence, report, visit or patient id
    score: float
    report_id: str
    visit_id: str
    patient_id: str
    sentence_id: str
    sentence: str
    highlights: tuple[tuple[int, int], ...] = ()
    explanation: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (highlights as lists). Explanations hold plain values, so their
        nested parts are shared rather than copied (a page of hits is answered per request)."""
        data = {name: getattr(self, name) for name in _FIELDS}
        data["highlights"] = [list(span) for span in self.highlights]
        data["explanation"] = dict(self.explanation)
        return data


_FIELDS = tuple(f.name for f in fields(Hit))
