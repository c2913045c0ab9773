"""The Spark engine builds the index a local build makes, and answers cohorts as DuckDB does.

On the bundled sample: identical report, sentence and findings rows; identical BM25 top 10;
identical cohort counts (and members) for the queries below; ``add`` on Spark equals a local add.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from clinsearch import Index
from clinsearch.corpus.readers import read_reports
from clinsearch.errors import ClinsearchError
from clinsearch.search.cohort import Cohort
from clinsearch.spark import add_to_index, build_index
from clinsearch.spark.cohort import index_cohort

SAMPLE = Path(__file__).parents[2] / "src" / "clinsearch" / "data" / "sample_reports.jsonl"
QUERIES = [
    "pneumonia", '"pleural effusion"', "no pneumothorax", "cardiomegaly", "atelectasis",
    'pneumonia AND NOT "pleural effusion"', "pneumonia OR atelectasis", "NOT pneumonia",
    "NOT (pneumonia OR cardiomegaly OR edema)", "possible pneumonia", "edema AND cardiomegaly",
    "(cardiomegaly AND edema) same sentence", "(pneumonia AND NOT atelectasis) same report",
    "(pneumothorax AND no pneumothorax) same patient", "(pneumonia AND cardiomegaly) same visit",
    "right lower lobe pneumonia", "small pleural effusion",
    "no pleural effusion AND no pneumothorax", "pneumonia section:impression",
    "date:2021-01-01..2021-12-31", "pneumonia date:2021-01-01..",
    'type:"CXR PA/lateral" AND NOT cardiomegaly', 'text:"portable"',
    'text:"clear" AND NOT consolidation',
    "(effusion section:findings) OR (atelectasis section:impression)", "nodule OR mass",
]
SEARCHES = ["pleural effusion", "no pneumothorax", "right lower lobe pneumonia", "cardiomegaly",
            "chest tube"]
TABLES = ("reports", "sentences", "findings")


def _tables(index_dir: Path) -> dict[str, Any]:
    with Index.open(index_dir) as index:
        return {name: index.generation.table(name) for name in TABLES}


@pytest.fixture(scope="module")
def built(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("equality")
    reports = list(read_reports(SAMPLE, "jsonl"))
    Index.build(reports, root / "local", progress=False)
    build_index(spark, SAMPLE, root / "spark", "jsonl", partitions=3, progress=False)
    return root / "local", root / "spark"


def test_same_rows_and_manifest(built: tuple[Path, Path]) -> None:
    local, spark = _tables(built[0]), _tables(built[1])
    for name in TABLES:
        assert spark[name].num_rows > 0
        assert spark[name].equals(local[name]), name
    with Index.open(built[1]) as index:  # one segment per Spark partition
        sizes = [s.reports for s in index.generation.segments]
        assert len(sizes) == 3 and sum(sizes) == 185 and min(sizes) > 0, sizes
    manifests = [Index.open(p).manifest.to_dict() for p in built]
    for key in ("counts", "config", "components", "next_report_key"):
        assert json.dumps(manifests[0][key]) == json.dumps(manifests[1][key]), key


def test_same_bm25_top_10(built: tuple[Path, Path]) -> None:
    local, spark = (Index.open(p) for p in built)
    for level in ("sentence", "report", "patient"):
        a = local.search_many(SEARCHES, level=level, top=10)
        b = spark.search_many(SEARCHES, level=level, top=10)
        assert [[(h.id, round(h.score, 5)) for h in hits] for hits in a] == \
               [[(h.id, round(h.score, 5)) for h in hits] for hits in b]


def test_same_cohorts_as_duckdb(spark: Any, built: tuple[Path, Path]) -> None:
    duck = Cohort(built[0])
    engine = index_cohort(spark, built[1])
    assert engine.counts_many(QUERIES) == [duck.counts(query) for query in QUERIES]
    for level, query in zip(("patient", "visit", "report", "sentence"), QUERIES[5:], strict=False):
        assert engine.answer(query, level=level).members == duck.engine.ids(query, level), query


def test_a_spark_cohort_keeps_its_generation_until_closed(spark: Any, tmp_path: Path) -> None:
    reports = list(read_reports(SAMPLE, "jsonl"))[:30]
    index = Index.build(reports, tmp_path / "idx", progress=False)
    with index_cohort(spark, tmp_path / "idx") as engine:
        before = Cohort(index).counts("NOT pneumonia")
        index.delete([reports[0].id])  # a commit; Spark has read nothing yet
        index.close()
        assert engine.counts_many(["NOT pneumonia"]) == [before]  # its snapshot, still there
    assert len(list((tmp_path / "idx").glob("gen-*"))) == 2  # the old one was leased
    with Index.open(tmp_path / "idx") as index:
        index.delete([reports[1].id])  # once closed, the next writer removes it
    assert len(list((tmp_path / "idx").glob("gen-*"))) == 1


def test_add_on_spark_equals_a_local_add(spark: Any, tmp_path: Path) -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines(True)
    rest = tmp_path / "rest.jsonl"
    rest.write_text("".join(lines[120:]), encoding="utf-8")
    first = list(read_reports(SAMPLE, "jsonl"))[:120]
    local = Index.build(first, tmp_path / "local", progress=False)
    local.add(read_reports(rest, "jsonl"), progress=False)
    Index.build(first, tmp_path / "spark", progress=False)
    assert add_to_index(spark, tmp_path / "spark", rest, "jsonl", progress=False) == 65
    a, b = _tables(tmp_path / "local"), _tables(tmp_path / "spark")
    for name in TABLES:
        assert b[name].equals(a[name]), name


def test_note_nlp_on_spark_equals_the_local_export(spark: Any, built: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    from clinsearch.index.omop import write_note_nlp as local_export
    from clinsearch.spark.omop import write_note_nlp as spark_export

    local = local_export(built[1], tmp_path / "local.parquet")  # same generation: same time
    assert spark_export(spark, built[1], tmp_path / "spark") == local
    a = pq.read_table(tmp_path / "local.parquet")
    b = pq.read_table(tmp_path / "spark").sort_by("note_nlp_id").select(a.column_names)
    b = b.cast(a.schema)
    for name in a.column_names:
        assert b.column(name).to_pylist() == a.column(name).to_pylist(), name
    with pytest.raises(ClinsearchError, match="use `force`"):
        spark_export(spark, built[1], tmp_path / "spark")
