"""Concept summaries of reports for re-ranking: positive findings only ([Soni2020] section 3).

A report's summary is its type (when known) followed by the distinct concepts it states as
present, in order of first mention, joined by "; ". Negated and uncertain findings are left
out, as the paper does, so "no pneumothorax" never reads as pneumothorax to a cross-encoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow.compute as pc

from clinsearch.errors import ClinsearchError

if TYPE_CHECKING:
    from clinsearch.index import IndexStore


def concept_summaries(index: IndexStore, report_ids: Sequence[str]) -> list[str]:
    """The concept summary of each report, in the order of ``report_ids``."""
    if "findings" not in index.config.components:
        raise ClinsearchError(
            f"{index.path}: this index has no findings table, needed by `rerank_input` summary"
        )
    wanted = list(set(report_ids))
    findings = index.component("findings").table(
        ["report_id", "sentence_id", "start", "concept", "polarity"],
        filters=[("report_id", "in", wanted)],
    )
    findings = findings.filter(pc.equal(findings.column("polarity"), "present"))
    reports = index.generation.table("reports", ["id", "type"], filters=[("id", "in", wanted)])
    types = dict(
        zip(reports.column("id").to_pylist(), reports.column("type").to_pylist(), strict=True)
    )
    concepts: dict[str, dict[str, None]] = {rid: {} for rid in wanted}
    rows = sorted(
        zip(
            *(
                findings.column(c).to_pylist()
                for c in ("report_id", "sentence_id", "start", "concept")
            ),
            strict=True,
        ),
        key=lambda r: (r[0], _sentence_index(r[1]), r[2]),
    )
    for report_id, _, _, concept in rows:
        concepts[report_id].setdefault(concept.replace("_", " "), None)
    return [
        "; ".join([*([types[rid]] if types.get(rid) else []), *concepts[rid]]) for rid in report_ids
    ]


def _sentence_index(sentence_id: str) -> int:
    """The sentence's position in its report, from its id ``report#index``."""
    return int(sentence_id.rpartition("#")[2])
