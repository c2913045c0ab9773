"""Dense and hybrid retrieval on IU X-ray, report level, against the MeSH benchmark (iu-mesh).

Side by side in one run: BM25, concept (when registered), dense (all-MiniLM-L6-v2 unless
--model), hybrid (bm25 + dense [+ concept]) and hybrid + cross-encoder re-ranking (with
--rerank MODEL). Queries are split in two by a hash of their id, within each query kind:
fusion settings are chosen on the development half only, every figure is reported on the
evaluation half. Also measured: sentence encoding throughput and per-query latency p50/p95.

Run: python benchmarks/bench_dense.py [--threads 2] [--rerank FOLDER]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.trec import Run
from clinsearch.index import COMPONENTS, Index, IndexConfig
from clinsearch.models.encoder import load_encoder
from clinsearch.search.fusion import reciprocal_rank_fusion, weighted_score_fusion
from clinsearch.search.hybrid import DEFAULT_FUSION, DEFAULT_WEIGHTS, HybridRetriever
from clinsearch.search.registry import METHODS
from iu_common import iu_mesh

MEASURES = ("map", "ndcg@10", "p@10", "rprec", "mrr")
DEPTH = 1000
# Fusion settings tried on the development queries: how lists are fused, then method weights.
FUSIONS: tuple[dict[str, object], ...] = (
    {"fusion": "rrf", "rrf_k": 10},
    {"fusion": "rrf", "rrf_k": 60},
    {"fusion": "weighted", "normalisation": "minmax"},
    {"fusion": "weighted", "normalisation": "zscore"},
)
WEIGHT_GRID = {"bm25": (0.25, 0.5, 1.0), "dense": (0.05, 0.1, 0.25), "concept": (2.0, 4.0, 8.0)}
console = Console()


def split(bench: Benchmark) -> tuple[Benchmark, Benchmark]:
    """(development, evaluation) halves: within each kind, by the parity of sha1(qid)."""
    dev = {q.qid for q in bench.queries if hashlib.sha1(q.qid.encode()).digest()[0] % 2 == 0}
    return bench.subset(dev), bench.subset({q.qid for q in bench.queries} - dev)


def run_of(index: Index, bench: Benchmark, name: str, method: str, **options: object) -> Run:
    """A TREC run of ``method`` over every benchmark query (report level, depth 1000)."""
    texts = [q.text for q in bench.queries]
    results = index.search_many(texts, "report", DEPTH, method, **options)
    scores = {
        q.qid: {h.id: h.score for h in hits} for q, hits in zip(bench.queries, results, strict=True)
    }
    return Run(name, scores)


def fused_run(runs: Sequence[Run], weights: Sequence[float], options: dict[str, object]) -> Run:
    """Fuse per-query rankings offline with the same functions the hybrid retriever uses."""
    scores = {}
    for qid in runs[0].scores:
        rankings = [sorted(r.scores.get(qid, {}).items(), key=lambda x: -x[1]) for r in runs]
        if options["fusion"] == "rrf":
            fused = reciprocal_rank_fusion(rankings, k=int(options["rrf_k"]), weights=weights)
        else:
            fused = weighted_score_fusion(
                rankings, weights=weights, normalisation=options["normalisation"]
            )
        scores[qid] = dict(fused[:DEPTH])
    return Run("fused", scores)


def _weights(methods: Sequence[str], weights: Sequence[float]) -> str:
    """Weights as the hybrid option string, e.g. "bm25=1.0,dense=0.25"."""
    return ",".join(f"{m}={w}" for m, w in zip(methods, weights, strict=True))


def _subset(run: Run, bench: Benchmark) -> Run:
    """``run`` restricted to the benchmark's queries."""
    return Run(run.name, {q: run.scores[q] for q in bench.qrels.grades})


def mean_map(bench: Benchmark, run: Run) -> float:
    """MAP of ``run`` over the benchmark's queries."""
    comp = compare_runs(bench.qrels, [run], [parse_measure("map")], bench.queries, resamples=0)
    return comp.mean(run.name, comp.measures[0])


def latency(index: Index, queries: Sequence[str], method: str, **options: object) -> tuple:
    """(p50, p95) milliseconds of one ``search`` call per query, top 10, after a warm-up."""
    index.search(queries[0], "report", 10, method, **options)
    times = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, "report", 10, method, **options)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.95 * len(times)))]


def main() -> int:
    """Build the index and benchmark, tune fusion on dev, evaluate every method on the rest."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch threads for encoding")
    ap.add_argument("--model", default=None, help="sentence encoder folder (default MiniLM)")
    ap.add_argument("--rerank", default=None, help="cross-encoder folder for the re-rank row")
    ap.add_argument("--rerank-depth", type=int, default=50)
    ap.add_argument("--sample", type=int, default=2000, help="sentences for the throughput")
    ap.add_argument("--index", default=None, help="reuse (or build into) this index folder")
    args = ap.parse_args()
    csv = shared_data(IU_XRAY)
    if csv is None:
        print("IU X-ray reports not found (../shared/data/iu_xray); skipping.")
        return 0
    import torch

    torch.set_num_threads(args.threads)
    reports, bench = iu_mesh(csv)
    dev, test = split(bench)
    console.print(f"benchmark: {bench.summary()}\n  dev: {dev.summary()}\n  eval: {test.summary()}")

    components = ["lexical", "dense"] + [c for c in ("findings", "concepts") if c in COMPONENTS]
    options = {"dense": {"model": args.model}} if args.model else {}
    path = Path(args.index or tempfile.mkdtemp(prefix="bench-dense-")) / "idx"
    if (path / "CURRENT").exists():
        index = Index.open(path)
    else:
        start = time.perf_counter()
        index = Index.build(reports, path, IndexConfig(tuple(components), options))
        console.print(f"index built in {time.perf_counter() - start:.0f} s: {index}")

    encoder = load_encoder(args.model or index.component("dense").meta.model_path)
    distinct = sorted(set(index.store.sentence_texts))
    sample = random.Random(0).sample(distinct, min(args.sample, len(distinct)))
    start = time.perf_counter()
    encoded = encoder.encode_passages(sample, batch_size=64)
    seconds = time.perf_counter() - start
    console.print(
        f"encoding ({args.threads} threads): {len(sample)} distinct sentences of"
        f" {len(index.store.sentence_texts)} ({len(distinct)} distinct; {len(encoded.vectors)}"
        f" windows) in {seconds:.1f} s = {len(sample) / seconds:.0f} sentences/s"
    )

    singles = ["bm25", "dense"] + (["concept"] if "concept" in METHODS else [])
    runs = {m: run_of(index, bench, m, m) for m in singles}
    fuse = list(singles)
    tuning = Table("method or best weights per fusion", "dev MAP", title="development half")
    for m in fuse:
        tuning.add_row(f"({m} alone)", f"{mean_map(dev, _subset(runs[m], dev)):.4f}")
    best_label, best_options, best_weights, best_map = "", {}, (), -1.0
    for cand in FUSIONS:
        kind = " ".join(str(v) for v in cand.values())
        kind_best = ("", -1.0)
        for weights in itertools.product(*(WEIGHT_GRID[m] for m in fuse)):
            fused = fused_run([runs[m] for m in fuse], weights, cand)
            value = mean_map(dev, _subset(fused, dev))
            label = f"{kind}, weights {_weights(fuse, weights)}"
            kind_best = max(kind_best, (label, value), key=lambda x: x[1])
            if value > best_map:
                best_label, best_options, best_weights, best_map = label, cand, weights, value
        tuning.add_row(kind_best[0], f"{kind_best[1]:.4f}")
    console.print(tuning)
    console.print(f"chosen on dev: {best_label} (MAP {best_map:.4f})")
    defaults = HybridRetriever.__init__.__kwdefaults__
    console.print(
        f"hybrid defaults in code: {DEFAULT_FUSION}, weights {DEFAULT_WEIGHTS}, "
        f"normalisation {defaults['normalisation']}, rrf k {defaults['rrf_k']}"
    )

    hybrid_options: dict[str, object] = {
        "methods": ",".join(fuse),
        "weights": _weights(fuse, best_weights),
        **best_options,
    }
    runs["hybrid"] = run_of(index, bench, "hybrid", "hybrid", **hybrid_options)
    rows = [*singles, "hybrid"]
    if args.rerank:
        rerank = {"rerank": args.rerank, "rerank_depth": args.rerank_depth}
        runs["hybrid+rerank"] = run_of(
            index, bench, "hybrid+rerank", "hybrid", **hybrid_options, **rerank
        )
        rows.append("hybrid+rerank")
    else:
        console.print("hybrid + re-rank: skipped (no cross-encoder folder given; none trained yet)")

    test_runs = [_subset(runs[m], test) for m in rows]
    comp = compare_runs(
        test.qrels, test_runs, [parse_measure(m) for m in MEASURES], test.queries, seed=0
    )
    for group, qids in comp.groups.items():
        table = Table("method", *comp.measures, title=f"evaluation half, {group} ({len(qids)} q)")
        for name in comp.runs:
            table.add_row(name, *(f"{comp.mean(name, m, group):.4f}" for m in comp.measures))
        console.print(table)

    queries = [q.text for q in test.queries]
    lat = Table("method", "p50 ms", "p95 ms", title="latency per query (top 10, report level)")
    for name in rows:
        method = "hybrid" if name.startswith("hybrid") else name
        opts = hybrid_options if method == "hybrid" else {}
        if name == "hybrid+rerank":
            opts = {**opts, "rerank": args.rerank, "rerank_depth": args.rerank_depth}
        p50, p95 = latency(index, queries, method, **opts)
        lat.add_row(name, f"{p50:.1f}", f"{p95:.1f}")
    console.print(lat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
