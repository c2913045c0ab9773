"""Compare concept search of two checkouts side by side on one existing index (issue 16).

Run: ``python -m benchmarks.performance.bench_concept_scale INDEX --src OLD/src --src NEW/src``,
or with one index per source when their concept files differ in format (``INDEX_OLD INDEX_NEW``:
the same reports, e.g. a hard-linked copy whose ``concepts`` folders the new code rewrote).

For each ``--src`` (in turn, twice, so that neither profits from a warmer file cache alone): a
fresh process opens the index, times the first concept query (open, term tools, concept index),
then the 20 queries of ``bench_storage.py`` warm (after one warm-up query, as bench_storage
does, so a query that first loads the term encoder counts) and fully warm (a second pass), and
cold CLI ``search --method concept`` (median of three fresh processes). The hits (ids and
scores) of every source must be identical; the result is printed as JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from benchmarks.performance.bench_cold_start import _env
from benchmarks.performance.bench_storage import QUERIES, _cold, _percentiles, _uptime

_CHILD = """
import json, sys, time
from clinsearch import Index
queries = json.loads(sys.argv[2])
start = time.perf_counter()
with Index.open(sys.argv[1]) as index:
    index.search(queries[0], method="concept", top=10)
    first = time.perf_counter() - start
    passes = []
    for _ in range(2):
        times, hits = [], {}
        for q in queries:
            t = time.perf_counter()
            found = index.search(q, method="concept", top=10)
            times.append((time.perf_counter() - t) * 1000)
            hits[q] = [(h.sentence_id, h.score) for h in found]
        passes.append(times)
print(json.dumps({"first_query_s": first, "passes": passes, "hits": hits}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path, nargs="+", help="one index, or one per --src")
    parser.add_argument("--src", type=Path, action="append", required=True)
    args = parser.parse_args()
    if len(args.index) not in (1, len(args.src)):
        parser.error("give one index, or one per --src")
    indexes = args.index if len(args.index) > 1 else args.index * len(args.src)
    index_of = dict(zip(map(str, args.src), indexes, strict=True))
    out: dict = {"command": " ".join(sys.argv), "load_before": _uptime(), "runs": {}}
    hits = {}
    for _ in range(2):
        for src in args.src:
            env = _env(src.resolve())
            index = index_of[str(src)]
            child = subprocess.run([sys.executable, "-c", _CHILD, str(index),
                                    json.dumps(QUERIES)], env=env, check=True,
                                   capture_output=True, text=True)
            got = json.loads(child.stdout.splitlines()[-1])
            hits[str(src)] = got["hits"]
            out["runs"].setdefault(str(src), []).append({
                "first_query_s": round(got["first_query_s"], 2),
                "warm_ms": _percentiles(got["passes"][0]),
                "fully_warm_ms": _percentiles(got["passes"][1]),
                "cold_cli_s": _cold(["search", str(index), "pleural effusion", "--method",
                                     "concept", "--format", "trec"], env),
            })
    out["identical_hits"] = all(h == hits[str(args.src[0])] for h in hits.values())
    out["load_after"] = _uptime()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
