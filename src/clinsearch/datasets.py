"""Locate the public data sets clinsearch is evaluated on (never shipped in the package)."""

from __future__ import annotations

import os
from pathlib import Path

IU_XRAY = "iu_xray/indiana_reports.csv"
NEGEX = "negex/rsAnnotations-1-120-random.txt"
CMC2007 = "cmc2007/reports_dev.xml"
BIOSCOPE_DEV = "cmc2007/bioscope_dev.jsonl"


def shared_data(relpath: str) -> Path | None:
    """The path of ``relpath`` under the shared data folder, or None when it is absent.

    Looks in ``$CLINSEARCH_DATA``, then ``../shared/data`` beside the working directory and
    beside the source checkout.
    """
    roots = []
    if env := os.environ.get("CLINSEARCH_DATA"):
        roots.append(Path(env))
    roots.append(Path.cwd().parent / "shared" / "data")
    roots.append(Path(__file__).resolve().parents[3] / "shared" / "data")
    for root in roots:
        candidate = root / relpath
        if candidate.exists():
            return candidate
    return None
