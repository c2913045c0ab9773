"""Cohort engine on an existing index: open time, warm counts, members and a text filter.

Run: ``python -m benchmarks.performance.bench_cohort_open --index DIR [--before REF] [--rounds 5]``

Each side (this checkout, and git ``REF`` exported to a temporary folder, default ``main``) runs
in its own fresh process, the sides alternating ``--runs`` times: ``Cohort(index)`` is opened
(wall and CPU seconds, peak memory), then each of ``bench_storage.COHORTS`` is counted once to
warm up and ``--rounds`` times more (p50/p95 milliseconds of ``counts``, the three levels), the
report members of the first query are listed, and a ``text:`` query is counted (its first call,
then warm). Prints a Markdown table and the load averages (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.performance.bench_cold_start import _env, compared_sources
from benchmarks.performance.bench_storage import COHORTS

TEXT_QUERY = 'text:"pleural" AND NOT pneumothorax'
CHILD = r"""
import json, resource, statistics, sys, time
from clinsearch.search.cohort import Cohort

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

queries, rounds, text = json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
start, used = time.perf_counter(), cpu()
cohort = Cohort(sys.argv[1])
out = {"open_s": time.perf_counter() - start, "open_cpu_s": cpu() - used}
for query in queries:
    cohort.counts(query)
times = []
for _ in range(rounds):
    for query in queries:
        start = time.perf_counter()
        cohort.counts(query)
        times.append((time.perf_counter() - start) * 1000)
ranked = sorted(times)
out["count_p50_ms"] = statistics.median(ranked)
out["count_p95_ms"] = ranked[min(len(ranked) - 1, int(0.95 * len(ranked)))]
start = time.perf_counter()
out["members"] = len(cohort.members(queries[0], "report"))
out["members_ms"] = (time.perf_counter() - start) * 1000
for label in ("text_first_ms", "text_warm_ms"):
    start = time.perf_counter()
    cohort.counts(text)
    out[label] = (time.perf_counter() - start) * 1000
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""
FIELDS = (("open_s", "open wall (s)", 2), ("open_cpu_s", "open CPU (s)", 2),
          ("count_p50_ms", "warm counts p50 (ms)", 1), ("count_p95_ms", "warm counts p95 (ms)", 1),
          ("members_ms", "report members of the 1st query (ms)", 0),
          ("text_first_ms", "text: query, first (ms)", 0),
          ("text_warm_ms", "text: query, again (ms)", 0), ("peak_mb", "peak memory (MB)", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--before", default="main", help="git ref to compare with")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per side")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of the queries")
    args = parser.parse_args()
    with compared_sources(args.before) as sides:
        runs: dict[str, list[dict]] = {side: [] for side in sides}
        for _ in range(args.runs):
            for side, src in sides.items():
                done = subprocess.run(
                    [sys.executable, "-c", CHILD, str(args.index), json.dumps(COHORTS),
                     str(args.rounds), TEXT_QUERY],
                    env=_env(src), check=True, capture_output=True, text=True)
                runs[side].append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"\n{args.index}, medians of {args.runs} processes per side, before = {args.before};"
          f" counts of {', '.join(COHORTS)}, {args.rounds} rounds\n")
    print("| | before | after | before / after |")
    print("| --- | ---: | ---: | ---: |")
    for key, label, digits in FIELDS:
        before, after = (statistics.median(r[key] for r in runs[side]) for side in sides)
        print(f"| {label} | {before:.{digits}f} | {after:.{digits}f} | {before / after:.1f}x |")
    same = {json.dumps(r["members"]) for side in sides for r in runs[side]}
    print(f"\nreport members of the first query: {', '.join(sorted(same))} (every run)")


if __name__ == "__main__":
    main()
