"""Turn ranked sentence rows into :class:`Hit` records at any level."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from clinsearch.hit import Hit
from clinsearch.index.row_lookup import RowLookup
from clinsearch.units import Level

Spans = tuple[tuple[int, int], ...]


def make_hits(
    lookup: RowLookup,
    level: Level,
    scores: np.ndarray,
    sentence_rows: np.ndarray,
    highlights: Sequence[Spans],
    explanations: Sequence[dict[str, Any]],
) -> list[Hit]:
    """Hits ranked 1..n, each with its best sentence, highlight spans and explanation."""
    hits = []
    reports = lookup.sentence_reports(sentence_rows)
    columns = {"sentence": lookup.sentence_ids.take(sentence_rows),
               "report": lookup.report_ids.take(reports),
               "visit": lookup.visit_ids.take(reports),
               "patient": lookup.patient_ids.take(reports)}
    texts = lookup.sentence_texts.take(sentence_rows)
    rows = zip(scores.tolist(), texts, highlights, explanations, strict=True)
    for rank, (score, text, spans, explanation) in enumerate(rows, start=1):
        ids = {level: values[rank - 1] for level, values in columns.items()}
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
