"""Neural methods side by side on the IU X-ray MeSH benchmark: bi-encoder (dense), hybrid, and
hybrid re-ranked by a cross-encoder ([Soni2020]) and by a poly-encoder ([CAPR2021]), each
re-ranker trained here from the index's weak labels on a small budget (``--steps``), with MAP
and search latency per query.

    nice -n 10 python benchmarks/quality/bench_neural_iu.py [--index DIR] [--steps 60]

``--index``: an IU X-ray index with vectors (built into ``--out`` when not given). Re-ranking
reads each hit's best sentence (the poly-encoder learns from sentences), the top ``--depth``.
Skips cleanly without the IU X-ray data.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from clinsearch import Index, IndexConfig
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.readers import read_reports
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.bench.iu_mesh import iu_mesh_benchmark
from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.mesh import MeshMap
from clinsearch.evaluate.runner import index_runs
from clinsearch.search.registry import parse_method

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "out" / "neural_iu"


def train_rerankers(index_dir: Path, out: Path, steps: int) -> dict[str, Path]:
    """A cross-encoder and a poly-encoder trained for ``steps`` steps from the weak labels."""
    from clinsearch.train.crossencoder import CrossEncoderConfig, cross_groups, train_crossencoder
    from clinsearch.train.loop import LoopConfig
    from clinsearch.train.poly import PolyConfig, train_poly_encoder
    from clinsearch.train.training_data import bm25_retriever, sentence_texts, training_data

    models = {"cross": out / "cross", "poly": out / "poly"}
    queries, texts = training_data(index_dir, progress=False)
    loop = {"max_steps": steps, "checkpoint_every": 0, "progress": False}
    if not (models["poly"] / "training.json").exists():
        result = train_poly_encoder(queries, texts, models["poly"],
                                    PolyConfig(loop=LoopConfig(lr=5e-5, **loop)))
        print(f"poly-encoder: {result.steps} steps in {result.seconds:.0f} s", flush=True)
    if not (models["cross"] / "training.json").exists():
        index = Index.open(index_dir)
        config = CrossEncoderConfig(loop=LoopConfig(lr=5e-5, **loop))
        groups = cross_groups(queries, sentence_texts(index), bm25_retriever(index), config)
        result = train_crossencoder(groups, models["cross"], config)
        print(f"cross-encoder: {result.steps} steps in {result.seconds:.0f} s", flush=True)
    return models


def main() -> int:
    """Train, search, compare; 0 on success or a clean skip."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None)
    parser.add_argument("--steps", type=int, default=60, help="training steps per re-ranker")
    parser.add_argument("--depth", type=int, default=20, help="hits re-ranked per query")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    csv = shared_data(IU_XRAY)
    if csv is None:
        print("skipped: IU X-ray reports not found")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    reports = list(read_reports(csv, "iu-xray", skip_bad=True))
    bench = iu_mesh_benchmark(reports, Lexicon.load(), MeshMap.load())
    index_dir = args.index or args.out / "index"
    if not (index_dir / "CURRENT").exists():
        config = IndexConfig(components=(*IndexConfig().components, "dense"))
        Index.build(reports, index_dir, config)
    models = train_rerankers(index_dir, args.out, args.steps)
    rerank = f"rerank_depth={args.depth},rerank_input=sentence"
    methods = {
        "bi-encoder (dense, MiniLM)": "dense",
        "hybrid": "hybrid",
        "hybrid + cross-encoder": f"hybrid:rerank=cross:{models['cross']},{rerank}",
        "hybrid + poly-encoder": f"hybrid:rerank=poly:{models['poly']},{rerank}",
    }
    index = Index.open(index_dir)
    rows = {}
    load = os.getloadavg()[0]
    for name, spec in methods.items():
        index_runs(index, bench.queries[:2], [parse_method(spec)], "report", 10, progress=False)
        began = time.perf_counter()
        (run,) = index_runs(index, bench.queries, [parse_method(spec)], "report", 1000,
                            progress=False)
        ms = 1000 * (time.perf_counter() - began) / len(bench.queries)
        comp = compare_runs(bench.qrels, [run], [parse_measure("map")], bench.queries)
        rows[name] = {"map": comp.mean(run.name, "MAP"), "ms_per_query": ms}
        print(f"{name:<28} MAP {rows[name]['map']:.4f}  {ms:7.0f} ms/query", flush=True)
    summary = {"queries": len(bench.queries), "steps": args.steps, "depth": args.depth,
               "load_at_start": load, "load_at_end": os.getloadavg()[0], "rows": rows}
    (args.out / "results.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
