"""What a cohort is made of, counted for charts: its reports by year, month and report type,
its evidence by section, and the polarity mix of one finding (reports per reading)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

import numpy as np

from clinsearch.index.finding_match import FindingSpec
from clinsearch.search.cohort.engine import EVERYWHERE, CohortEngine, Scope

POLARITY_MIX = ("present", "absent", "uncertain", "historical", "indication")
UNDATED = "undated"


@dataclass(frozen=True)
class Breakdown:
    """Matching reports per year, per month (``YYYY-MM``) and per report type, and per section
    the reports with an evidence sentence there; keys sorted, undated/untyped named."""

    year: dict[str, int]
    month: dict[str, int]
    type: dict[str, int]
    section: dict[str, int]


def cohort_breakdown(engine: CohortEngine, query: str, scope: Scope = EVERYWHERE) -> Breakdown:
    """Counts of the reports matching ``query`` by date, type and evidence section."""
    arrays = engine.arrays
    reports = np.flatnonzero(engine.report_mask(query, scope))
    labels = arrays.report_labels(reports)
    years = Counter(d[:4] or UNDATED for d in labels["date"])
    months = Counter(d[:7] or UNDATED for d in labels["date"])
    types = Counter(t or "(none)" for t in labels["type"])
    evidence = engine.evidence_sentences(query, scope)
    pairs = set(zip(arrays.sentence_report[evidence].tolist(),
                    arrays.sentence_sections(evidence), strict=True))
    sections = Counter(section or "(none)" for _, section in pairs)
    return Breakdown(*(dict(sorted(c.items())) for c in (years, months, types, sections)))


def polarity_mix(engine: CohortEngine, spec: FindingSpec, scope: Scope = EVERYWHERE
                 ) -> dict[str, int]:
    """How many reports state the finding of ``spec`` as present, absent or uncertain (as a
    current finding), and how many as historical and as the reason for the exam (indication),
    any polarity."""
    readings = {p: replace(spec, polarities=(p,), contexts=(), required_context=())
                for p in POLARITY_MIX[:3]}
    for flag in POLARITY_MIX[3:]:
        readings[flag] = replace(spec, polarities=("present", "absent", "uncertain"),
                                 required_context=(flag,))
    arrays = engine.arrays
    within = scope.reports
    out = {}
    for name, reading in readings.items():
        reports = arrays.sentence_report[arrays.finding_sentences(reading)]
        if within is not None:
            reports = reports[within[reports]]
        out[name] = len(np.unique(reports))
    return out
