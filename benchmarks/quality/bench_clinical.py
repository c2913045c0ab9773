"""Concept and hybrid search as shipped (default options), per IU X-ray MeSH query group and half.

The issue-15 benchmark: MAP of ``concept``, ``concept:include_uncertain=true`` and ``hybrid``
(the code's default fusion and weights, i.e. what ``clinsearch search`` gives) per query group
(core, modifier, synonym, all) on the development half, the evaluation half (``sha1(qid)[0]``
even / odd, the split of bench_dense.py) and all queries. ``--qids FILE`` restricts the queries
to those listed (one qid per line), so that runs of two versions of the lexicon, whose
benchmarks differ by the queries a new concept adds, compare on the same queries;
``--save-qids FILE`` writes the qids of this run.

``--reannotate-from OLD`` builds ``--index`` as a copy of the index OLD with its findings and
concept postings extracted again by this code: the sentences and the dense vectors (which do
not depend on the annotator) are reused, which saves the slow sentence encoding.

With ``--record`` each method's MAP over all queries goes into benchmarks/figures.yaml (the IU
MeSH series) and its MAP on the modifier group (the fine-grained queries of paper 001) into the
paper-001 series.

Run: python -m benchmarks.quality.bench_clinical --index IDX [--reannotate-from OLD] [--qids FILE]
     [--methods concept,hybrid] [--record]
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.iu_common import iu_csv, iu_mesh, open_or_build
from clinsearch import Index
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.runner import index_runs
from clinsearch.search.registry import parse_method
from clinsearch.trec import Run

METHODS = ("concept", "concept:include_uncertain=true", "hybrid")
GROUPS = ("core", "modifier", "synonym", "all")
# figure ids of the methods in benchmarks/figures.yaml
FIGURE_KEYS = {"bm25": "bm25", "concept": "concept",
               "concept:include_uncertain=true": "concept-uncertain", "hybrid": "hybrid"}
MESH = "IU X-ray MeSH, 542 queries, report level"
COMMAND = "python -m benchmarks.quality.bench_clinical --index IDX --record"
COMPONENTS = ("bm25", "findings", "concepts", "dense")


def is_dev(qid: str) -> bool:
    """The development half: the first byte of sha1(qid) is even."""
    return hashlib.sha1(qid.encode()).digest()[0] % 2 == 0


def reannotated(old: Path, path: Path) -> Index:
    """A copy of the index ``old`` whose findings and concepts this code extracts again."""
    if not (path / "CURRENT").exists():
        shutil.copytree(old, path)
        opened = Index.open(path)
        gen, config = replace(opened.generation, progress=True), opened.config
        for component in config.make():
            if component.name in ("findings", "concepts"):
                component.build(gen)
    return Index.open(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, required=True, help="IU index (built when missing)")
    ap.add_argument("--reannotate-from", type=Path, default=None,
                    help="copy this index and extract its findings again (reuses dense vectors)")
    ap.add_argument("--qids", type=Path, default=None,
                    help="also report the figures on the queries listed in this file")
    ap.add_argument("--save-qids", type=Path, default=None, help="write this run's qids here")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--record", action="store_true",
                    help="record the MAP of all queries and of the modifier group in"
                    " benchmarks/figures.yaml")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="comma-separated method specs to run (default: the three above)")
    args = ap.parse_args()
    csv = iu_csv()
    if csv is None:
        return 0
    import torch

    torch.set_num_threads(args.threads)
    reports, bench = iu_mesh(csv)
    if args.reannotate_from:
        index = reannotated(args.reannotate_from, args.index)
    else:
        index = open_or_build(args.index, reports, COMPONENTS)
    if args.save_qids:
        args.save_qids.write_text("\n".join(q.qid for q in bench.queries) + "\n", "utf-8")
    print(f"benchmark: {bench.summary()}")
    started = time.perf_counter()
    methods = [parse_method(m) for m in args.methods.split(",")]
    runs = index_runs(index, bench.queries, methods, "report", 1000)
    print(f"searched in {time.perf_counter() - started:.0f} s")
    print_maps(bench, runs, "all queries of this lexicon's benchmark")
    if args.record:
        record_maps(bench, runs)
    if args.qids:
        keep = set(args.qids.read_text(encoding="utf-8").split())
        print_maps(bench.subset(keep), runs, f"only the queries listed in {args.qids}")
    return 0


def print_maps(bench: Benchmark, runs: list[Run], title: str) -> None:
    """MAP per group of each run on the development half, the evaluation half and all."""
    halves = {
        "dev": bench.subset({q.qid for q in bench.queries if is_dev(q.qid)}),
        "eval": bench.subset({q.qid for q in bench.queries if not is_dev(q.qid)}),
        "all": bench,
    }
    print(f"\n{title}\n\n| half | method | " + " | ".join(GROUPS) + " |")
    print("|---|---|" + "---:|" * len(GROUPS))
    for half, part in halves.items():
        comp = compare_runs(part.qrels, runs, [parse_measure("map")], part.queries,
                            allow_unknown=True)  # each half scores its own queries
        measure = comp.measures[0]
        sizes = {g: len(comp.groups.get(g, ())) for g in GROUPS}
        for run in runs:
            cells = [f"{comp.mean(run.name, measure, g):.4f}" if sizes[g] else "-"
                     for g in GROUPS]
            print(f"| {half} ({sizes['all']} q) | {run.name} | " + " | ".join(cells) + " |")


def record_maps(bench: Benchmark, runs: list[Run]) -> None:
    """Each run's MAP over all queries and over the modifier group, in the figures file."""
    from benchmarks.figures import record

    comp = compare_runs(bench.qrels, runs, [parse_measure("map")], bench.queries,
                        allow_unknown=True)
    measure = comp.measures[0]
    for run in runs:
        key = FIGURE_KEYS.get(run.name, run.name.replace(":", "-").replace("=", "-"))
        record(f"iu-mesh.map.{key}", round(comp.mean(run.name, measure, "all"), 3),
               command=COMMAND, group="quality", figure=f"MAP, {run.name}", corpus=MESH,
               digits=3, method=run.name, series="IU X-ray MeSH (MAP)")
        record(f"paper001.map.{key}", round(comp.mean(run.name, measure, "modifier"), 3),
               command=COMMAND, group="quality", figure=f"MAP, {run.name}",
               corpus="IU X-ray MeSH modifier queries (paper 001), report level", digits=3,
               method=run.name, series="paper 001 fine-grained (MAP)")


if __name__ == "__main__":
    sys.exit(main())
