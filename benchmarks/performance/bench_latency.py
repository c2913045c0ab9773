"""Per-query latency of every search method on one IU X-ray index, side by side in one run.

Queries: the IU X-ray MeSH benchmark's queries (`clinsearch bench build iu-mesh`), report level,
top 10. Methods: bm25, concept, dense (query encoding included), hybrid (bm25 + dense + concept,
fused). The index holds every component (bm25, findings, concepts, dense); it is built into
``--index`` when that folder holds no index yet, and reused otherwise. Skips with a message when
../shared/data is absent.

    python -m benchmarks.performance.bench_latency --index /tmp/iu-all [--methods bm25,concept]
"""

from __future__ import annotations

import argparse
import os
import platform
from datetime import date
from pathlib import Path

from benchmarks.iu_common import iu_index_and_bench
from benchmarks.performance.bench_index import latencies

METHODS = ("bm25", "concept", "dense", "hybrid")
ALL_COMPONENTS = ("bm25", "findings", "concepts", "dense")
TOP = 10


def main() -> int:
    """Print a Markdown table of p50 / p95 latency per method, with ratios to BM25."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="index folder (reused or built)")
    parser.add_argument("--queries", type=int, default=200, help="how many benchmark queries")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated methods to time (default: all four)")
    args = parser.parse_args()
    found = iu_index_and_bench(args.index, ALL_COMPONENTS)
    if found is None:
        return 0
    index, bench = found
    queries = [q.text for q in bench.queries][: args.queries]
    print(
        f"{date.today()}, {platform.machine()}, {os.cpu_count()} cores, load average"
        f" {os.getloadavg()[0]:.1f}; {len(queries)} IU X-ray MeSH queries, report level,"
        f" top {TOP}\n"
    )
    print("| method | p50 ms | p95 ms | p95 of per-query minima ms | p50 vs bm25 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    base = None
    for method in args.methods.split(","):
        p50, p95, p95_min = latencies(
            lambda q, m=method: index.search(q, level="report", top=TOP, method=m), queries
        )
        base = base or p50
        print(f"| {method} | {p50:.1f} | {p95:.1f} | {p95_min:.1f} | {p50 / base:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
