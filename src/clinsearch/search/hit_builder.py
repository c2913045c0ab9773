"""Turn ranked sentence rows into :class:`Hit` records at any level."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from clinsearch.hit import Hit, Level
from clinsearch.index.store import Store

Spans = tuple[tuple[int, int], ...]


def make_hits(
    store: Store,
    level: Level,
    scores: np.ndarray,
    sentence_rows: np.ndarray,
    highlights: Sequence[Spans],
    explanations: Sequence[dict[str, Any]],
) -> list[Hit]:
    """Hits ranked 1..n, each with its best sentence, highlight spans and explanation."""
    hits = []
    rows = zip(scores.tolist(), sentence_rows.tolist(), highlights, explanations, strict=True)
    for rank, (score, row, spans, explanation) in enumerate(rows, start=1):
        report = int(store.sentence_report_row[row])
        ids = {
            "sentence": store.sentence_ids[row],
            "report": store.report_ids[report],
            "visit": store.visit_ids[report],
            "patient": store.patient_ids[report],
        }
        text = store.sentence_texts[row]
        hits.append(
            Hit(
                rank=rank,
                level=level,
                id=ids[level],
                score=float(score),
                report_id=ids["report"],
                visit_id=ids["visit"],
                patient_id=ids["patient"],
                sentence_id=ids["sentence"],
                sentence=text,
                highlights=spans,
                explanation=explanation,
            )
        )
    return hits
