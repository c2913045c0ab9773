"""A report: its sections, sentences and every finding (roles that see text; audited)."""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Path

from clinsearch.server.deps import Audit, State, TextReader
from clinsearch.server.live import Snapshot

MAX_ID = 200  # characters of a report id in a request
router = APIRouter(prefix="/api/reports")


@router.get("/{report_id}", summary="A report: sections, sentences, every finding")
def report(report_id: Annotated[str, Path(max_length=MAX_ID)], audit: Audit, user: TextReader,
           state: State) -> dict[str, Any]:
    """``Index.report`` of the live generation (404 for an id it does not hold)."""

    def run(snap: Snapshot) -> tuple[Any, str]:
        if snap.index.lookup.report_ids.rows_of([report_id])[0] < 0:
            raise HTTPException(404, f"report {report_id!r} is not in the index")
        return snap.index.report(report_id), snap.generation

    view, generation = state.live.run(run)
    audit.record("report", {"id": report_id},
                 {"reports": 1, "patients": 1, "findings": len(view.findings)}, generation,
                 {"reports": [report_id], "patients": [view.report.patient_id],
                  "visits": [view.report.visit_id] if view.report.visit_id else []})
    shown = view.to_dict()
    # where the report was read from, without the server's folders: "notes.jsonl:6"
    shown["report"]["source"] = PurePath(view.report.source).name
    return shown | {"generation": generation}
