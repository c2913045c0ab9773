"""`make bench`: run the quick benchmarks now and print the benchmark table.

Measured now, on the shared data sets (skipped, and said so, when they are absent): the IU X-ray
index build; the IU X-ray MeSH benchmark's MAP for bm25, concept and concept with hedged
mentions; warm query latency of bm25 and concept on that index; annotation throughput in one
process; the NegEx test set's F1 on negated conditions; IU X-ray MeSH finding extraction
micro-F1. Each measured row is printed with its corpus, machine, date and commit; then the rows
of the table in benchmarks/README.md that this script does not measure, marked "standing" (the
long runs: 1M reports, the service under load, Spark).

    python -m benchmarks.quick [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.iu_common import iu_csv, iu_mesh, run_and_compare
from benchmarks.performance.bench_index import latencies
from benchmarks.quality.bench_findings_mesh import PRIMARY
from benchmarks.quality.bench_findings_mesh import score as mesh_score
from benchmarks.quality.bench_negex import clinsearch_method, read_rows
from benchmarks.quality.bench_negex import score as negex_score
from benchmarks.results_md import BENCHMARKS, OUT

README = BENCHMARKS / "README.md"
IU = "IU X-ray, 3,826 reports with text"
MESH = "IU X-ray MeSH benchmark, 542 queries, report level, depth 1000"
DEPTH = 1000
METHODS = ("bm25", "concept", "concept:include_uncertain=true")
LATENCY_QUERIES = 200
THROUGHPUT_SENTENCES = 5000
WARM_UP = 500
HEADER = "| area | figure | value | corpus | machine | date (UTC) | commit | command |"


@dataclass
class Row:
    """One row of the benchmark table."""

    area: str
    figure: str
    value: str
    corpus: str
    command: str

    def line(self, machine: str, date: str, commit: str) -> str:
        """The row as a Markdown table line."""
        cells = (self.area, self.figure, self.value, self.corpus, machine, date, commit,
                 f"`{self.command}`")
        return "| " + " | ".join(cells) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=OUT / "quick", help="scratch folder")
    args = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")  # per-report progress bars would bury the table
    machine = f"{os.cpu_count()} cores {platform.machine()}, load {os.getloadavg()[0]:.1f}"
    date, commit = datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), _commit()
    print("## Measured now\n")
    print(HEADER)
    print(_rule(), flush=True)
    measured = set()
    for row in measure(args.work):
        print(row.line(machine, date, commit), flush=True)
        measured.add(row.figure)
    standing = [line for line in _table_lines(README) if _figure(line) not in measured]
    print("\n## Standing (last measured; rows of benchmarks/README.md not rerun by this script)\n")
    print(HEADER)
    print(_rule())
    for line in standing:
        print(line)
    return 0


def measure(work: Path) -> Iterator[Row]:
    """Run every quick benchmark whose data is present, yielding each row when measured."""
    from clinsearch import Index

    csv = iu_csv()
    if csv is not None:
        reports, bench = iu_mesh(csv)
        started = time.perf_counter()
        work.mkdir(parents=True, exist_ok=True)
        index = Index.build(reports, work / "iu", progress=False)
        yield Row("speed", "IU X-ray index build (default components)",
                  f"{time.perf_counter() - started:.1f} s", IU, "python -m benchmarks.quick")
        _, comp, _ = run_and_compare(index, bench, METHODS, ["map"], "report", DEPTH)
        for method in METHODS:
            yield Row("quality", f"MAP, {method}", f"{comp.mean(method, comp.measures[0]):.3f}",
                      MESH, "python -m benchmarks.quick")
        queries = [q.text for q in bench.queries][:LATENCY_QUERIES]
        for method in ("bm25", "concept"):
            p50, p95, _ = latencies(_searcher(index, method), queries)
            yield Row("speed", f"warm query latency p50 / p95, {method}",
                      f"{p50:.1f} / {p95:.1f} ms",
                      f"{IU}; {len(queries)} MeSH queries, report level, top 10",
                      "python -m benchmarks.performance.bench_latency --index IDX")
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
        Row("speed", "annotation throughput, one process", f"{rate:,.0f} sentences/s",
            f"{len(sentences):,} IU X-ray sentences (after {WARM_UP} warm-up ones)",
            "python -m benchmarks.performance.bench_annotate_speed"),
        Row("quality", "finding extraction micro-F1 (present, hierarchical)",
            f"{run.scores[PRIMARY].micro.f1:.3f}", f"{IU}, manual MeSH labels",
            "python -m benchmarks.quality.bench_findings_mesh"),
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
    return [Row("quality", "NegEx F1, negated conditions", f"{scores.f1:.3f}",
                f"NegEx test set, {len(rows):,} sentences",
                "python -m benchmarks.quality.bench_negex")]


def _commit() -> str:
    """The checkout's short commit, with "+changes" when the tree differs from it."""
    def git(*words: str) -> str:
        done = subprocess.run(["git", "-C", str(BENCHMARKS), *words], capture_output=True,
                              text=True, check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def _table_lines(path: Path) -> list[str]:
    """The body rows of the first table in ``path`` that has the benchmark table's header."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADER) + 2
    body = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        body.append(line)
    return body


def _figure(line: str) -> str:
    """The figure cell of a table line."""
    return line.split("|")[2].strip()


def _rule() -> str:
    """The Markdown rule under the header."""
    return "|" + " --- |" * HEADER.count(" | ") + " --- |"


if __name__ == "__main__":
    raise SystemExit(main())
