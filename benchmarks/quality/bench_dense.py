"""Dense and hybrid retrieval on IU X-ray, report level, against the MeSH benchmark (iu-mesh).

Side by side in one run: BM25, concept (when registered), dense (all-MiniLM-L6-v2 unless
--model), hybrid (bm25 + dense [+ concept]) and hybrid + cross-encoder re-ranking (with
--rerank MODEL). Queries are split in two by a hash of their id, within each query kind:
fusion settings are chosen on the development half only, every figure is reported on the
evaluation half. Also measured: sentence encoding throughput and per-query latency p50/p95.

Run: python -m benchmarks.quality.bench_dense \
    [--threads 2] [--rerank FOLDER [--rerank-input sentence]]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.iu_common import iu_mesh
from clinsearch import Index, IndexConfig
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.index import COMPONENTS
from clinsearch.models.encoder import load_encoder
from clinsearch.progress import track
from clinsearch.search.concept.tools import index_concept_tools
from clinsearch.search.fusion import RRF_K, Fusion, Normalisation
from clinsearch.search.hybrid import TIER_ANCHOR, fusion_of
from clinsearch.search.registry import METHODS
from clinsearch.trec import Run

MEASURES = ("map", "ndcg@10", "p@10", "rprec", "mrr")
DEPTH = 1000
# Fusions tried on the development queries: (label, kind, normalisation, rrf k), each over
# every weight combination of WEIGHT_GRID; the best of each is then shown on both halves.
FUSION_KINDS: tuple[tuple[str, str, Normalisation, int], ...] = (
    ("rrf k=10", "rrf", "minmax", 10),
    ("rrf k=60", "rrf", "minmax", 60),
    ("weighted min-max", "weighted", "minmax", RRF_K),
    ("weighted z-score", "weighted", "zscore", RRF_K),
    ("tiered min-max", "tiered", "minmax", RRF_K),
    ("tiered z-score", "tiered", "zscore", RRF_K),
)
WEIGHT_GRID = {
    "bm25": (0.25, 0.5, 1.0),
    "dense": (0.0, 0.05, 0.25),
    "concept": (0.0, 1.0, 8.0),
}
GROUPS = ("core", "modifier", "synonym", "all")
console = Console(width=160)  # wide tables are not cut when the output is a file


@dataclass(frozen=True)
class Tuned:
    """The best weights of one fusion kind on the development queries."""

    label: str
    options: dict[str, object]  # hybrid search options (fusion, weights, normalisation, rrf_k)
    fusion: Fusion
    dev_map: float


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


def single_runs(
    index: Index, bench: Benchmark, methods: Sequence[str], cache: Path | None
) -> dict[str, Run]:
    """Each method's run over the benchmark, searched once (or read from ``cache``)."""
    if cache is not None and cache.exists():
        stored = json.loads(cache.read_text(encoding="utf-8"))
        console.print(f"single-method runs read from {cache}")
        return {m: Run(m, stored[m]) for m in methods}
    runs = {m: run_of(index, bench, m, m) for m in methods}
    if cache is not None:
        cache.write_text(json.dumps({m: r.scores for m, r in runs.items()}), encoding="utf-8")
    return runs


def fused_run(name: str, runs: Sequence[Run], fusion: Fusion, bench: Benchmark) -> Run:
    """Fuse the per-query rankings of ``bench``'s queries offline, as the hybrid retriever does."""
    scores = {}
    for qid in bench.qrels.grades:
        rankings = [sorted(r.scores.get(qid, {}).items(), key=lambda x: -x[1]) for r in runs]
        scores[qid] = dict(fusion.apply(rankings)[:DEPTH])
    return Run(name, scores)


def tune(runs: Sequence[Run], names: Sequence[str], dev: Benchmark) -> list[Tuned]:
    """For each of ``FUSION_KINDS``, the weights with the best MAP on ``dev``."""
    out = []
    for label, kind, normalisation, rrf_k in FUSION_KINDS:
        if kind == "tiered" and TIER_ANCHOR not in names:
            continue
        best: Tuned | None = None
        grid = list(itertools.product(*(WEIGHT_GRID[m] for m in names)))
        for weights in track(grid, f"tuning {label} on dev", total=len(grid)):
            options = {"fusion": kind, "weights": _weights(names, weights),
                       "normalisation": normalisation, "rrf_k": rrf_k}
            fusion = fusion_of(names, **options)
            value = mean_map(dev, fused_run(label, runs, fusion, dev))
            if best is None or value > best.dev_map:
                best = Tuned(label, options, fusion, value)
        assert best is not None
        out.append(best)
    return out


def unknown_words(index: Index, *benches: Benchmark) -> str:
    """How many queries of each half hold words the lexicon does not know (query-adaptive
    weights could only differ from the fully parsed case on those)."""
    parser = index_concept_tools(index).parser
    counts = [sum(bool(parser.parse(q.text).mappings) for q in b.queries) for b in benches]
    return "queries with words the lexicon does not know: " + ", ".join(
        f"{n} of {len(b.queries)}" for n, b in zip(counts, benches, strict=True))


def group_maps(run: Run, dev: Benchmark, test: Benchmark) -> list[str]:
    """MAP of ``run`` per query group (GROUPS) on the development, then the evaluation half."""
    out = []
    for half in (dev, test):
        comp = compare_runs(half.qrels, [_subset(run, half)], [parse_measure("map")],
                            half.queries, resamples=0)
        out += [f"{comp.mean(run.name, comp.measures[0], g):.4f}" for g in GROUPS]
    return out


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


def throughput(index: Index, model: str | None, sample: int, threads: int) -> None:
    """Print the encoding speed of ``sample`` distinct sentences of the index."""
    encoder = load_encoder(model or index.component("dense").meta.model_path)
    distinct = sorted(set(index.lookup.sentence_texts))
    chosen = random.Random(0).sample(distinct, min(sample, len(distinct)))
    start = time.perf_counter()
    encoded = encoder.encode_passages(chosen, batch_size=64)
    seconds = time.perf_counter() - start
    console.print(
        f"encoding ({threads} threads): {len(chosen)} distinct sentences of"
        f" {len(index.lookup.sentence_texts)} ({len(distinct)} distinct; {len(encoded.vectors)}"
        f" windows) in {seconds:.1f} s = {len(chosen) / seconds:.0f} sentences/s"
    )


def main() -> int:
    """Build the index and benchmark, tune fusion on dev, evaluate every method on the rest."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2, help="torch threads for encoding")
    ap.add_argument("--model", default=None, help="sentence encoder folder (default MiniLM)")
    ap.add_argument("--rerank", default=None, help="cross-encoder folder for the re-rank row")
    ap.add_argument("--rerank-depth", type=int, default=50)
    ap.add_argument("--rerank-input", default="report", choices=("report", "sentence", "summary"),
                    help="what the cross-encoder reads beside the query for each hit")
    ap.add_argument("--sample", type=int, default=2000, help="throughput sentences (0: skip)")
    ap.add_argument("--index", default=None, help="reuse (or build into) this index folder")
    ap.add_argument("--cache", default=None,
                    help="JSON file of the single-method runs: read if present, else written"
                    " (delete it when the index or a method changes)")
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

    components = ["bm25", "dense"] + [c for c in ("findings", "concepts") if c in COMPONENTS]
    options = {"dense": {"model": args.model}} if args.model else {}
    path = Path(args.index or tempfile.mkdtemp(prefix="bench-dense-")) / "idx"
    if (path / "CURRENT").exists():
        index = Index.open(path)
    else:
        start = time.perf_counter()
        index = Index.build(reports, path, IndexConfig(tuple(components), options))
        console.print(f"index built in {time.perf_counter() - start:.0f} s: {index}")

    if args.sample > 0:
        throughput(index, args.model, args.sample, args.threads)

    singles = ["bm25", "dense"] + (["concept"] if "concept" in METHODS else [])
    runs = single_runs(index, bench, singles, Path(args.cache) if args.cache else None)
    console.print(unknown_words(index, dev, test))
    tuned = tune([runs[m] for m in singles], singles, dev)
    halves = Table("method or fusion (best weights on dev)",
                   *(f"{h} {g}" for h in ("dev", "eval") for g in GROUPS),
                   title="MAP per query group, development and evaluation halves")
    for m in singles:
        halves.add_row(m, *group_maps(runs[m], dev, test))
    for t in tuned:
        fused = fused_run(t.label, [runs[m] for m in singles], t.fusion, bench)
        halves.add_row(f"{t.label}: {t.options['weights']}", *group_maps(fused, dev, test))
        if t.fusion.kind == "tiered":  # ablation: every distinct concept score its own tier
            whole = replace(t.fusion, tolerance=0.0)
            fused = fused_run(t.label, [runs[m] for m in singles], whole, bench)
            halves.add_row("  same, tolerance 0", *group_maps(fused, dev, test))
    console.print(halves)
    chosen = max(tuned, key=lambda t: t.dev_map)
    console.print(f"chosen on dev: {chosen.label}, {chosen.options} (dev MAP {chosen.dev_map:.4f})")
    default = fusion_of(singles)
    verdict = "the dev choice" if default == chosen.fusion else "NOT the dev choice"
    console.print(f"hybrid default in code: {default} ({verdict})")

    hybrid_options: dict[str, object] = {"methods": ",".join(singles), **chosen.options}
    runs["hybrid"] = run_of(index, bench, "hybrid", "hybrid", **hybrid_options)
    rows = [*singles, "hybrid"]
    if args.rerank:
        rerank = {"rerank": args.rerank, "rerank_depth": args.rerank_depth,
                  "rerank_input": args.rerank_input}
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
            opts = {**opts, **rerank}
        p50, p95 = latency(index, queries, method, **opts)
        lat.add_row(name, f"{p50:.1f}", f"{p95:.1f}")
    console.print(lat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
