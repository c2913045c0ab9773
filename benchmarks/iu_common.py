"""Setup shared by the IU X-ray benchmarks: the MeSH benchmark, and method runs compared."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from clinsearch import Index, IndexConfig
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.evaluate.bench.iu_mesh import iu_mesh_benchmark
from clinsearch.evaluate.compare import Comparison, compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.mesh import MeshMap
from clinsearch.evaluate.runner import index_runs
from clinsearch.search.registry import parse_method
from clinsearch.trec import Run


def iu_csv() -> Path | None:
    """The IU X-ray CSV in ../shared, or None after saying the benchmark is skipped."""
    csv = shared_data(IU_XRAY)
    if csv is None:
        print("skipped: IU X-ray reports not found (../shared/data/iu_xray/indiana_reports.csv)")
    return csv


def iu_mesh(csv: Path) -> tuple[list[Report], Benchmark]:
    """The IU X-ray reports with text and their MeSH benchmark (shipped lexicon and MeSH map)."""
    reports = list(read_reports(csv, "iu-xray", skip_bad=True))
    return reports, iu_mesh_benchmark(reports, Lexicon.load(), MeshMap.load())


def open_or_build(path: Path, reports: Sequence[Report], components: Sequence[str]) -> Index:
    """The IU index at ``path``, built there from ``reports`` with ``components`` if it is not
    there yet."""
    if (path / "CURRENT").exists():
        return Index.open(path)
    started = time.perf_counter()
    index = Index.build(reports, path, IndexConfig(components=tuple(components)))
    print(f"built {path} in {time.perf_counter() - started:.0f} s")
    return index


def iu_index_and_bench(path: Path, components: Sequence[str]) -> tuple[Index, Benchmark] | None:
    """The IU index at ``path`` (built when missing) and the MeSH benchmark, reading the CSV
    once; None after saying the benchmark is skipped when the data is absent."""
    csv = iu_csv()
    if csv is None:
        return None
    reports, bench = iu_mesh(csv)
    return open_or_build(path, reports, components), bench


def run_and_compare(
    index: Index,
    bench: Benchmark,
    methods: Sequence[str],
    measures: Sequence[str],
    level: str,
    top: int,
) -> tuple[list[Run], Comparison, float]:
    """Search ``bench``'s queries with each method, compare the runs; also the search seconds."""
    started = time.perf_counter()
    runs = index_runs(index, bench.queries, [parse_method(m) for m in methods], level, top)
    seconds = time.perf_counter() - started
    comp = compare_runs(bench.qrels, runs, [parse_measure(m) for m in measures], bench.queries)
    return runs, comp, seconds
