"""A patient's timeline: the patient's reports by date, each with its findings (anatomy left
out) and their polarity, the reports matching a cohort query first (roles that see text;
audited)."""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi import APIRouter, HTTPException

from clinsearch.server.deps import Audit, State, TextReader
from clinsearch.server.live import Snapshot
from clinsearch.server.query_scope import query_scope

MAX_TIMELINE = 500  # reports shown for one patient
router = APIRouter(prefix="/api/patients")


@router.get("/{patient_id}/timeline", summary="A patient's reports by date with their findings")
def timeline(patient_id: str, audit: Audit, user: TextReader, state: State,
             query: str = "") -> dict[str, Any]:
    """Reports (date, type, findings with polarity and context); with ``query``, those the
    cohort query matches are marked and listed first, each group by date."""

    def run(snap: Snapshot) -> tuple[list[dict[str, Any]], str]:
        cohort = snap.cohort()
        mine, missing = cohort.id_mask("patient", [patient_id])
        if missing:
            raise HTTPException(404, f"patient {patient_id!r} is not in the index")
        matched = np.zeros_like(mine)
        if query.strip():
            scope = query_scope(state, snap, user, query, None)
            matched = cohort.engine.report_mask(query, scope) & mine
        rows = np.flatnonzero(mine)[:MAX_TIMELINE]
        arrays = cohort.engine.arrays
        ids = arrays.values.reports("id", rows)
        labels = arrays.report_labels(rows)
        out = []
        for row, report_id, date, kind in zip(rows.tolist(), ids, labels["date"],
                                              labels["type"], strict=True):
            view = snap.index.report(str(report_id))
            out.append({"report_id": report_id, "date": date, "type": kind,
                        "matched": bool(matched[row]),
                        "findings": [_finding(f.to_dict()) for f in view.findings
                                     if f.finding.type != "anatomy"]})
        out.sort(key=lambda r: (not r["matched"], r["date"] or "9999", r["report_id"]))
        return out, snap.generation

    reports, generation = state.live.run(run)
    audit.record("patients/timeline", {"patient_id": patient_id, "query": query},
                 {"reports": len(reports), "patients": 1,
                  "matched": sum(r["matched"] for r in reports)}, generation,
                 {"patients": [patient_id], "reports": [r["report_id"] for r in reports]})
    return {"patient_id": patient_id, "query": query, "reports": reports,
            "generation": generation}


def _finding(record: dict[str, Any]) -> dict[str, Any]:
    """A finding as the timeline shows it: what, how it is read, and the words written."""
    return {k: record[k] for k in ("concept", "name", "polarity", "context", "text",
                                   "sentence_id", "pattern")}
