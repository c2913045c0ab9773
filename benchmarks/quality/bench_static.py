"""Static encoders beside MiniLM, every method in one run: IU X-ray MeSH and CMC 2007 dev.

Rows: bm25, concept, dense and hybrid (the code's defaults) with each dense model: MiniLM,
the static model distilled from it (``--model static``), the static model trained on the IU
index's weak labels with [Shi2022]'s schedule (``clinsearch train static``), and that model
trained further with [CAPR2021]'s (entity, section) objective; with ``--rerank-steps N`` also
hybrid re-ranked over its top 50 by a cross-encoder and a poly-encoder trained N steps from the
weak labels. IU figures: MAP per query group on the evaluation half (``sha1(qid)`` odd; the
modifier group holds the fine-grained queries of [SyedaMahmood2021], paper 001) and all
queries on the development half; CMC: MAP over the 31 code queries. Latency: p50 per query
(top 10, report level, warm). Build times include the encoding of every sentence.

    nice -n 5 python -m benchmarks.quality.bench_static --work DIR [--epochs 10]
        [--models static,"static trained",...] [--rerank-steps 60] [--json FILE]

Indexes and trained models in ``--work`` are reused by a later run. Skips without the data.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from benchmarks.iu_common import iu_csv, iu_mesh
from benchmarks.quality.bench_dense import latency, split
from clinsearch import Index, IndexConfig
from clinsearch.corpus.readers import read_reports
from clinsearch.datasets import CMC2007, shared_data
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.evaluate.bench.cmc2007 import cmc_benchmark, load_code_queries, report_codes
from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.runner import index_runs
from clinsearch.search.registry import parse_method
from clinsearch.trec import Run

COMPONENTS = ("bm25", "findings", "concepts", "dense")
GROUPS = ("core", "modifier", "synonym", "all")
RERANK_DEPTH = 50
MODELS = ("static", "static trained", "static trained + sections", "MiniLM")


def build(path: Path, reports: list, model: str | None) -> tuple[Index, float]:
    """The index at ``path`` with vectors of ``model`` (None: MiniLM), built when missing; the
    build seconds (0 when reused)."""
    if (path / "CURRENT").exists():
        return Index.open(path), 0.0
    began = time.perf_counter()
    options = {"dense": {"model": model}} if model else {}
    index = Index.build(reports, path, IndexConfig(COMPONENTS, options), progress=False)
    return index, time.perf_counter() - began


def train_static_models(
    index_dir: Path, work: Path, epochs: int, wanted: list[str]
) -> dict[str, dict]:
    """The static model trained on ``index_dir``'s weak labels ([Shi2022]: findings) and then
    on its (entity, section) queries ([CAPR2021]), as far as ``wanted`` needs; what each run
    did."""
    from clinsearch.models.model_names import named_model
    from clinsearch.train.biencoder import train_biencoder
    from clinsearch.train.loop import LoopConfig
    from clinsearch.train.static import STATIC_LR, static_config
    from clinsearch.train.training_data import training_data

    runs = {}
    base = named_model("static")
    stages = (("static trained", "findings", "triplet"),
              ("static trained + sections", "sections", "listwise"))
    needed = 2 if MODELS[2] in wanted else 1 if MODELS[1] in wanted else 0
    for name, source, loss in stages[:needed]:
        out = work / name.replace(" ", "-").replace("+", "and")
        if not (out / "training.json").exists():
            queries, texts = training_data(index_dir, source=source, progress=False)
            loop = LoopConfig(epochs=epochs, lr=STATIC_LR, weight_decay=0.0, checkpoint_every=0,
                              progress=False)
            result = train_biencoder(queries, texts, out, static_config(base, loop, loss=loss))
            print(f"{name}: {len(queries)} queries, {result.steps} steps in {result.seconds:.0f} s,"
                  f" loss {result.losses[0]:.3f} -> {result.losses[-1]:.3f}", flush=True)
        log = json.loads((out / "training.json").read_text())
        runs[name] = {"path": str(out), "steps": log["steps"], "seconds": log["seconds"],
                      "first_loss": log["losses"][0], "last_loss": log["losses"][-1]}
        base = out
    return runs


def train_rerankers(index_dir: Path, work: Path, steps: int) -> dict[str, Path]:
    """Cross- and poly-encoder trained ``steps`` steps from the weak labels (bench_neural_iu)."""
    from benchmarks.quality.bench_neural_iu import train_rerankers as train

    return train(index_dir, work, steps)


def maps(run: Run, half: Benchmark, tag: str, groups: tuple[str, ...]) -> dict[str, float]:
    """MAP of ``run`` per query group over the queries of ``half``, keys ``"TAG GROUP"``."""
    kept = Run(run.name, {q: run.scores.get(q, {}) for q in half.qrels.grades})
    comp = compare_runs(half.qrels, [kept], [parse_measure("map")], half.queries, resamples=0)
    return {f"{tag} {g}": round(comp.mean(run.name, comp.measures[0], g), 4) for g in groups}


def search(index: Index, bench: Benchmark, spec: str) -> Run:
    """The run of method ``spec`` over the benchmark's queries (report level, depth 1000)."""
    (run,) = index_runs(index, bench.queries, [parse_method(spec)], "report", 1000,
                        progress=False)
    return run


def p50(index: Index, queries: list[str], spec: str) -> float:
    """Warm median milliseconds per query of ``spec`` (top 10)."""
    parsed = parse_method(spec)
    return round(latency(index, queries, parsed.method, **parsed.options)[0], 1)


def cmc_maps(work: Path, models: dict[str, str | None]) -> dict[str, float]:
    """MAP of bm25, concept, and dense and hybrid with each model on the CMC 2007 dev codes."""
    xml = shared_data(CMC2007)
    if xml is None:
        print("CMC 2007 not found: its column is skipped")
        return {}
    bench = cmc_benchmark(report_codes(read_reports(xml, "cmc2007-coded")), load_code_queries())
    reports = list(read_reports(xml, "cmc2007-coded"))
    out: dict[str, float] = {}
    for name, model in models.items():
        index, _ = build(work / f"cmc-{_slug(name)}", reports, model)
        methods = ("dense", "hybrid") if out else ("bm25", "concept", "dense", "hybrid")
        for method in methods:
            run = search(index, bench, method)
            comp = compare_runs(bench.qrels, [run], [parse_measure("map")], bench.queries,
                                resamples=0)
            label = method if method in ("bm25", "concept") else f"{method} ({name})"
            out[label] = round(comp.mean(run.name, comp.measures[0]), 4)
    return out


def _slug(name: str) -> str:
    return name.replace(" ", "-").replace("+", "and")


def main() -> int:
    """Build, train, search, print one table; 0 on success or a clean skip."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="indexes and models (reused)")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--rerank-steps", type=int, default=0, help="0: no re-ranker rows")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--models", default=",".join(MODELS),
                    help="dense models to compare (comma-separated, of: " + ", ".join(MODELS) + ")")
    args = ap.parse_args()
    csv = iu_csv()
    if csv is None:
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    builds: dict[str, float] = {}
    reports, bench = iu_mesh(csv)
    dev, test = split(bench)
    print(f"IU MeSH: {bench.summary()}; eval half {test.summary()}", flush=True)
    wanted = [m for m in MODELS if m in args.models.split(",")]
    first, builds["static"] = build(args.work / "iu-static", reports, "static")
    trained = train_static_models(first.path, args.work, args.epochs, wanted)
    paths = {"static": "static", "MiniLM": None, **{n: r["path"] for n, r in trained.items()}}
    models = {name: paths[name] for name in wanted}
    indexes = {}
    for name, model in models.items():
        indexes[name], builds[name] = build(args.work / f"iu-{_slug(name)}", reports, model)
    queries = [q.text for q in test.queries]
    rows: dict[str, dict] = {}

    def row(label: str, index: Index, spec: str) -> None:
        run = search(index, bench, spec)
        rows[label] = {**maps(run, test, "eval", GROUPS), **maps(run, dev, "dev", ("all",)),
                       "p50 ms": p50(index, queries, spec)}
        print(label, json.dumps(rows[label]), flush=True)

    row("bm25", first, "bm25")
    row("concept", first, "concept")
    for name, index in indexes.items():
        row(f"dense ({name})", index, "dense")
        row(f"hybrid ({name})", index, "hybrid")
    if args.rerank_steps:
        rerankers = train_rerankers(first.path, args.work, args.rerank_steps)
        best = max(indexes, key=lambda n: rows[f"hybrid ({n})"]["dev all"])
        for kind in ("cross", "poly"):
            spec = (f"hybrid:rerank={kind}:{rerankers[kind]},rerank_depth={RERANK_DEPTH},"
                    "rerank_input=sentence")
            rows[f"hybrid ({best}) + {kind}-encoder"] = {
                **maps(search(indexes[best], test, spec), test, "eval", GROUPS),
                "p50 ms": p50(indexes[best], queries[:50], spec)}
            print(kind, json.dumps(rows[f"hybrid ({best}) + {kind}-encoder"]), flush=True)
    cmc = cmc_maps(args.work, models)
    header = ["method", *(f"IU eval {g}" for g in GROUPS), "IU dev all", "CMC dev", "p50 ms"]
    print("\n| " + " | ".join(header) + " |\n|" + " --- |" * len(header))
    for label, r in rows.items():
        cells = [r.get(f"eval {g}", "") for g in GROUPS] + [r.get("dev all", ""),
                                                            cmc.get(label, ""), r["p50 ms"]]
        print(f"| {label} | " + " | ".join(str(c) for c in cells) + " |")
    summary = {"load_at_start": load, "load_at_end": os.getloadavg()[0], "builds_s": builds,
               "training": trained, "rows": rows, "cmc": cmc}
    print(json.dumps(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
