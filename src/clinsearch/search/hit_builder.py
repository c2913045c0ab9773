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
    ranks: Sequence[int] | None = None,
) -> list[Hit]:
    """Hits ranked ``ranks`` (default 1..n), each with its best sentence, highlight spans and
    explanation."""
    hits = []
    reports = lookup.sentence_reports(sentence_rows)
    columns = {"sentence": lookup.sentence_ids.take(sentence_rows),
               "report": lookup.report_ids.take(reports),
               "visit": lookup.visit_ids.take(reports),
               "patient": lookup.patient_ids.take(reports)}
    texts = lookup.sentence_texts.take(sentence_rows)
    ranks = range(1, len(texts) + 1) if ranks is None else ranks
    rows = zip(ranks, scores.tolist(), texts, highlights, explanations, strict=True)
    for i, (rank, score, text, spans, explanation) in enumerate(rows):
        ids = {level: values[i] for level, values in columns.items()}
        hits.append(
            Hit(
                rank=int(rank),
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


def unit_ids(lookup: RowLookup, level: Level, sentence_rows: np.ndarray) -> list[str]:
    """The id at ``level`` of the unit each of the sentence rows belongs to."""
    if level == "sentence":
        return lookup.sentence_ids.take(sentence_rows)
    column = {"report": lookup.report_ids, "visit": lookup.visit_ids,
              "patient": lookup.patient_ids}[level]
    return column.take(lookup.sentence_reports(sentence_rows))
