"""Cohorts on Spark SQL equal the DuckDB engine's on real reports (IU X-ray, when present)."""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from clinsearch import Index
from clinsearch.corpus.readers import read_reports
from clinsearch.search.cohort import Cohort
from clinsearch.spark.cohort import index_cohort

QUERIES = [
    "cardiomegaly", "no pneumothorax", 'atelectasis AND NOT "pleural effusion"',
    "(opacity AND atelectasis) same sentence", "NOT (cardiomegaly OR opacity)",
    "granuloma OR nodule", "degenerative disease section:findings",
    "(no pneumothorax AND no pleural effusion) same sentence",
]


@pytest.mark.slow
def test_iu_cohorts_on_spark_equal_duckdb(spark: Any, iu_csv: Path, tmp_path: Path) -> None:
    reports = islice(read_reports(iu_csv, "iu-xray", skip_bad=True), 400)
    Index.build(reports, tmp_path / "iu", progress=False)
    duck, engine = Cohort(tmp_path / "iu"), index_cohort(spark, tmp_path / "iu")
    assert engine.counts_many(QUERIES) == [duck.counts(query) for query in QUERIES]
    for level, query in (("patient", QUERIES[2]), ("report", QUERIES[4])):
        assert engine.answer(query, level=level).members == duck.engine.ids(query, level), query
    assert duck.counts("cardiomegaly")["report"] > 10
