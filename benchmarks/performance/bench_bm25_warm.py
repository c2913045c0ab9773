"""Warm BM25 query time, before/after a git ref: per-query wall and CPU, alternating processes.

Run: ``python -m benchmarks.performance.bench_bm25_warm --index DIR [--index DIR] [--before main]
[--pairs 2]``

Each side (this checkout's code, and git ``REF``'s exported ``src``) runs in a fresh process
that opens the index, asks one warm-up query, then the 20 ``bench_storage.QUERIES`` (bm25, top
10, report level) twice: round 0 is ``bench_storage._warm``'s figure (first reads of row groups
included), round 1 the same queries again. Prints p50/p95 of wall and of CPU milliseconds per
query (CPU moves less with the load of a shared machine) and the load averages.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.performance.bench_cold_start import _env, compared_sources
from benchmarks.performance.bench_storage import QUERIES, _percentiles

ROUNDS = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, action="append", required=True,
                        help="index to query (repeatable)")
    parser.add_argument("--before", default="main", help="git ref to compare with")
    parser.add_argument("--pairs", type=int, default=2, help="before/after process pairs")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_time_queries(args.index[0])))
        return
    with compared_sources(args.before) as sides:
        for index in args.index:
            for _ in range(args.pairs):
                for side, src in sides.items():
                    out = subprocess.run(
                        [sys.executable, "-m", __spec__.name, "--child", "--index", str(index)],
                        env=_env(src), check=True, capture_output=True, text=True,
                    ).stdout
                    print(f"{index} {side}: {out.strip()}", flush=True)


def _time_queries(index_dir: Path) -> dict[str, dict[str, float]]:
    """p50/p95 wall and CPU ms of the queries, per round, in this process."""
    from clinsearch import Index

    out = {}
    with Index.open(index_dir) as index:
        index.search(QUERIES[0], method="bm25")
        for round_ in range(ROUNDS):
            wall, cpu = [], []
            for query in QUERIES:
                start, cpu_start = time.perf_counter(), time.process_time()
                index.search(query, method="bm25", top=10)
                wall.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - cpu_start) * 1000)
            out[f"round {round_}"] = _percentiles(wall) | {
                f"cpu_{k}": v for k, v in _percentiles(cpu).items()}
    return out


if __name__ == "__main__":
    main()
