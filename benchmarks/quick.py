"""`make bench`: run the quick benchmarks now, record their figures in benchmarks/figures.yaml,
and draw the benchmark table (benchmarks/README.md) and its pictures anew.

Measured now, on the shared data sets (skipped, and said so, when they are absent): the IU X-ray
index build; the IU X-ray MeSH benchmark's MAP for bm25, concept and concept with hedged
mentions; warm query latency of bm25 and concept on that index; annotation throughput in one
process; the NegEx test set's F1 on negated conditions; IU X-ray MeSH finding extraction
micro-F1. Each figure is recorded with this run's machine, load, date and commit; the other
figures of the file (the long runs: 1M reports, the service under load, Spark) stand as they
were, with their own date and commit.

    python -m benchmarks.quick [--work DIR] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import plots, render
from benchmarks.figures import FIGURES, load, load_average, record
from benchmarks.iu_common import iu_csv, iu_mesh, run_and_compare
from benchmarks.performance.bench_index import latencies
from benchmarks.quality.bench_findings_mesh import PRIMARY
from benchmarks.quality.bench_findings_mesh import score as mesh_score
from benchmarks.quality.bench_negex import clinsearch_method, read_rows
from benchmarks.quality.bench_negex import score as negex_score
from benchmarks.results_md import OUT

IU = "IU X-ray, 3,826 reports"
MESH = "IU X-ray MeSH, 542 queries, report level"
DEPTH = 1000
METHODS = {"bm25": "bm25", "concept": "concept",
           "concept:include_uncertain=true": "concept-uncertain"}
LATENCY_QUERIES = 200
THROUGHPUT_SENTENCES = 5000
WARM_UP = 500
QUICK = "python -m benchmarks.quick"


@dataclass
class Row:
    """One measured figure: its id in benchmarks/figures.yaml, its value and the fields a new
    entry needs (an entry already in the file keeps its note)."""

    id: str
    value: float | str
    command: str
    fields: dict[str, object] = field(default_factory=dict)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=OUT / "quick", help="scratch folder")
    ap.add_argument("--no-record", action="store_true",
                    help="print the figures only; leave benchmarks/figures.yaml as it is")
    args = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")  # per-report progress bars would bury the figures
    start = load_average()  # the table states the load when the run started
    print(f"load average {start} at the start", flush=True)
    for row in measure(args.work):
        if args.no_record:
            print(f"{row.id}: {row.value}", flush=True)
        else:
            print(record(row.id, row.value, command=row.command, load=start,
                         **row.fields).shown()
                  + f"  {row.id}", flush=True)
    if not args.no_record:
        figures = load(FIGURES)
        render.stale(figures, write=True)
        for path in plots.draw(figures):
            print(path)
    return 0


def measure(work: Path) -> Iterator[Row]:
    """Run every quick benchmark whose data is present, yielding each figure when measured."""
    from clinsearch import Index

    csv = iu_csv()
    if csv is not None:
        reports, bench = iu_mesh(csv)
        started = time.perf_counter()
        work.mkdir(parents=True, exist_ok=True)
        index = Index.build(reports, work / "iu", progress=False)
        yield Row("build.iu", round(time.perf_counter() - started, 1), QUICK, {
            "group": "speed", "figure": "IU X-ray index build (default components)", "unit": "s",
            "corpus": IU})
        _, comp, _ = run_and_compare(index, bench, list(METHODS), ["map"], "report", DEPTH)
        for method, key in METHODS.items():
            yield Row(f"iu-mesh.map.{key}", round(comp.mean(method, comp.measures[0]), 3), QUICK,
                      {"group": "quality", "figure": f"MAP, {method}", "corpus": MESH,
                       "digits": 3, "method": method, "series": "IU X-ray MeSH (MAP)"})
        queries = [q.text for q in bench.queries][:LATENCY_QUERIES]
        for method in ("bm25", "concept"):
            p50, p95, _ = latencies(_searcher(index, method), queries)
            for name, value in (("p50", p50), ("p95", p95)):
                yield Row(f"latency.warm.{name}.{method}", round(value, 1), QUICK, {
                    "group": "speed", "figure": f"warm query latency {name}, {method}",
                    "unit": "ms", "digits": 1, "method": method,
                    "corpus": f"IU X-ray, {len(queries)} MeSH queries, top 10"})
        index.close()
        yield from _annotation(reports)
    yield from _negex()


def _searcher(index, method: str) -> Callable[[str], object]:  # type: ignore[no-untyped-def]
    """One warm search at report level, top 10."""
    return lambda query: index.search(query, level="report", top=10, method=method)


def _annotation(reports) -> list[Row]:  # type: ignore[no-untyped-def]
    """Annotation throughput, and finding extraction against the IU X-ray MeSH labels."""
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.corpus.segment import Segmenter
    from clinsearch.evaluate.mesh import MeshMap

    annotator = Annotator()
    sentences = [s.text for seg in Segmenter().segment_many(reports) for s in seg.sentences]
    for _ in annotator.annotate_many(sentences[:WARM_UP]):  # the first texts pay spaCy's start
        pass
    sentences = sentences[WARM_UP:WARM_UP + THROUGHPUT_SENTENCES]
    started = time.perf_counter()
    for _ in annotator.annotate_many(sentences):
        pass
    rate = len(sentences) / (time.perf_counter() - started)
    run = mesh_score("report text", [r.text for r in reports], reports, annotator, MeshMap.load())
    return [
        Row("annotate.throughput", round(rate), QUICK, {
            "group": "speed", "figure": "annotation throughput, one process",
            "unit": "sentences/s", "corpus": f"{len(sentences):,} IU X-ray sentences"}),
        Row("findings.micro-f1", round(run.scores[PRIMARY].micro.f1, 3), QUICK, {
            "group": "quality", "figure": "finding extraction micro-F1 (present, hierarchical)",
            "digits": 3, "corpus": f"{IU}, manual MeSH labels"}),
    ]


def _negex() -> list[Row]:
    """F1 of the negated class on the NegEx test set (each row's condition as a target)."""
    from clinsearch.datasets import NEGEX, shared_data

    path = shared_data(NEGEX)
    if path is None:
        print("skipped: NegEx test set not found (../shared/data/negex)")
        return []
    rows = read_rows(path)
    predict = clinsearch_method(True)
    started = time.process_time()
    predicted = [predict(row) for row in rows]
    scores = negex_score([r.gold for r in rows], predicted, time.process_time() - started)
    return [Row("negex.f1", round(scores.f1, 3), QUICK, {
        "group": "quality", "figure": "NegEx F1, negated conditions", "digits": 3,
        "corpus": f"NegEx test set, {len(rows):,} sentences"})]


if __name__ == "__main__":
    raise SystemExit(main())
