"""Benchmark dense search over segments (issue 16): one segment against the same vectors in
several, exact (memory-mapped matrix products) and merged.

Run: ``python -m benchmarks.performance.bench_dense_segments [--vectors 100000] [--segments 10]``

Random unit vectors of the packaged encoder's dimension (no encoding: the search is what is
timed; exact search everywhere) are written as one dense segment and as ``--segments``
segments (one build plus adds, as ``Index.add`` writes them); 200 random queries, top 10 and
top 64, p50 and p95 over 3 passes. Then the many segments are merged (``DenseComponent.merge``,
rewriting all but the largest) and
timed. Prints JSON with the machine's load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.performance.bench_storage import _uptime
from clinsearch.index.component import Change, Generation
from clinsearch.index.dense import DenseComponent, DenseSearcher, vectors_table
from clinsearch.models.encoder import load_encoder

QUERIES = 200
PASSES = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--segments", type=int, default=10)
    args = parser.parse_args()
    component = DenseComponent({"exact_limit": args.vectors})  # exact search everywhere
    dim = load_encoder(None).dim
    rng = np.random.default_rng(16)
    vectors = _unit(rng.standard_normal((args.vectors, dim), np.float32))
    keys = np.arange(args.vectors, dtype=np.int64)
    queries = _unit(rng.standard_normal((QUERIES, dim), np.float32))
    result: dict = {"vectors": args.vectors, "dim": dim, "segments": args.segments,
                    "cores": os.cpu_count(), "load_before": _uptime()}
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        one = Generation(root / "one")
        component.build_from(one, [vectors_table(keys, np.zeros_like(keys), vectors)])
        parts = np.array_split(np.arange(args.vectors), args.segments)
        many = Generation(root / "many-0")
        component.build_from(many, [vectors_table(keys[parts[0]], np.zeros_like(parts[0]),
                                                  vectors[parts[0]])])
        for n, part in enumerate(parts[1:], start=1):
            gen = Generation(root / f"many-{n}")
            table = vectors_table(keys[part], np.zeros_like(part), vectors[part])
            component.add_from(many, gen, Change((), tuple(keys[part].tolist())), [table])
            many = gen
        result["one_segment"] = _latency(DenseSearcher(one.path / "dense"), queries)
        result["many_segments"] = _latency(DenseSearcher(many.path / "dense"), queries)
        started = time.perf_counter()
        merged = Generation(root / "merged")
        entry = component.merge(many, merged, Change((), ()))
        result["merge"] = {"seconds": round(time.perf_counter() - started, 2),
                           "segments_after": len(entry["segments"])}
        same = all(
            np.array_equal(DenseSearcher(one.path / "dense").scorer(q)(10).report_keys,
                           DenseSearcher(many.path / "dense").scorer(q)(10).report_keys)
            for q in queries[:20])
        result["same_top10_as_one_segment"] = same
    result["p50_ratio_many_vs_one"] = round(
        result["many_segments"]["top10"]["p50_ms"] / result["one_segment"]["top10"]["p50_ms"], 2)
    result["load_after"] = _uptime()
    print(json.dumps(result, indent=2))


def _latency(searcher: DenseSearcher, queries: np.ndarray) -> dict:
    """p50 / p95 ms of ``scorer(query)(limit)`` for limits 10 and 64."""
    found = {}
    for limit in (10, 64):
        times = []
        for _ in range(PASSES):
            for query in queries:
                started = time.perf_counter()
                searcher.scorer(query)(limit)
                times.append(time.perf_counter() - started)
        ms = 1000 * np.asarray(times)
        found[f"top{limit}"] = {"p50_ms": round(float(np.percentile(ms, 50)), 2),
                                "p95_ms": round(float(np.percentile(ms, 95)), 2)}
    return found


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


if __name__ == "__main__":
    main()
