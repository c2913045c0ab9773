"""A search's tier counts agree with the tiers its hits show (IU X-ray, when present)."""

from __future__ import annotations

from collections import Counter
from itertools import islice
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.corpus.readers import read_reports
from clinsearch.search.registry import parse_method
from clinsearch.search.tiers import tier_counts

QUERIES = ("calcified granuloma", "infiltrate", "apex calcified granuloma", "opacity",
           "base bronchovascular crowding", "atelectasis", "no pneumothorax")


@pytest.mark.slow
def test_tier_counts_are_the_tiers_of_the_hits(iu_csv: Path, tmp_path: Path) -> None:
    """Each unit counts in the tier of its best sentence as the ranking shows it, tie-breaks
    included: a report whose best sentence is shown hedged is never counted partial."""
    reports = islice(read_reports(iu_csv, "iu-xray", skip_bad=True), 800)
    index = Index.build(reports, tmp_path / "iu", progress=False)
    spec = parse_method("concept")
    for query in QUERIES:
        for level in ("report", "patient"):
            hits = index.search(query, level, index.level_size(level), spec)
            shown = Counter(hit.explanation["tier"] for hit in hits)
            counted = {t.tier: t.count for t in tier_counts(index.session, query, level, spec)}
            assert counted == dict(shown), (query, level)
