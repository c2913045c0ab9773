"""Search hits: one ranked sentence, report, visit or patient with the sentence that shows why."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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
        """A JSON-ready form (highlights as lists)."""
        data = asdict(self)
        data["highlights"] = [list(span) for span in self.highlights]
        return data
