"""Cohorts over an index of several segments with deletion marks answer as a fresh build."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.search.cohort import Cohort

QUERIES = (  # the first 36 sample reports are mostly normal: negated findings are common
    '"no pleural effusion" AND NOT "no cardiomegaly"',
    '"degenerative change" OR "no cardiomegaly" section:impression',
    'text:"effusion" AND NOT "no cardiomegaly"',
    '("mild degenerative change" OR "no pneumothorax") SAME SENTENCE',  # a modifier
    "degenerative change of the thoracic spine",  # a site
    '"no cardiomegaly" date:2000-01-01..2030-12-31 type:"cxr pa/lateral"',
    '"no pneumothorax" type:xray',  # a warning: no such type
)


@pytest.fixture(scope="module")
def sample() -> list[Report]:
    return list(read_reports(sample_reports_path(), SAMPLE_FORMAT))[:36]


def answers(index: Index) -> list[object]:
    """Counts, warnings and members with their evidence at every level, per query."""
    cohort = Cohort(index)
    return [(query, cohort.counts(query), cohort.warnings(query),
             {level: [astuple(m) for m in cohort.members(query, level)]
              for level in ("patient", "visit", "report", "sentence")})
            for query in QUERIES]


def test_segments_and_deletion_marks_give_the_cohorts_of_a_fresh_build(
    tmp_path: Path, sample: list[Report]
) -> None:
    index = Index.build(sample[:12], tmp_path / "idx", progress=False)
    index.add(sample[12:24], progress=False)
    index.add(sample[24:], progress=False)
    gone = {sample[2].id, sample[13].id, sample[30].id}
    index.delete(sorted(gone))
    assert len(index.generation.segments) > 1 and len(index.generation.deleted_keys()) == 3
    kept = [r for r in sample if r.id not in gone]
    seen = answers(index)
    assert seen == answers(Index.build(kept, tmp_path / "fresh", progress=False))
    assert all(counts["report"] for _, counts, _, _ in seen[:-1]) and seen[-1][2]
    shown = {m[1] for *_, members in seen for m in members["report"]}  # evidence reports
    assert shown and not gone & shown
