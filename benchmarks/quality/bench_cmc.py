"""CMC 2007 benchmark: every search method side by side, and "code like a coder".

Indexes the coded CMC 2007 dev reports (``--format cmc2007-coded``; ``--all`` indexes the 488
uncoded ones too, unjudged) with every component (bm25, findings, concepts, dense), builds
the benchmark of ``clinsearch bench build cmc2007`` (one query per majority ICD-9-CM code with at
least two reports, written from its title; renal vs other groups), searches it with bm25,
concept, dense and hybrid at report level, and prints MAP per group. Then codes the reports:
one report cohort per code's cohort query, micro-F1 against the majority codes, with every
refused query and its reason, twice: counting the ``--context`` flags for every code (default:
asserted findings only), and counting the contexts each code declares in the query list (the
reason for the exam, personal history). Skips cleanly without the data.

    python -m benchmarks.quality.bench_cmc [--out DIR] [--reuse] [--all] [--context FLAGS]
        [--section-context SECTION=CONTEXT] [--per-code] [--record]

``--record`` (with the default query list and no --section-context or --all) puts the figures
in benchmarks/figures.yaml: each method's MAP and the coding F1 with the defaults and with the
declared contexts, or with ``--context indication`` the coding F1 for that uniform context.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from clinsearch import Index, IndexConfig
from clinsearch.cli.index import section_meanings
from clinsearch.corpus.readers import read_reports
from clinsearch.datasets import CMC2007, shared_data
from clinsearch.evaluate import render
from clinsearch.evaluate.bench.cmc2007 import (
    CodeQuery,
    cmc_benchmark,
    load_code_queries,
    report_codes,
)
from clinsearch.evaluate.coding import code_cohorts, coding_scores
from clinsearch.evaluate.compare import Comparison, compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.runner import index_runs
from clinsearch.query_file import Query
from clinsearch.search.concept.ranking import parse_context
from clinsearch.search.concept.tools import index_concept_tools
from clinsearch.search.phrase import text_reason
from clinsearch.search.registry import parse_method
from clinsearch.trec import Run

METHODS = ("bm25", "concept", "dense", "hybrid")
CONTEXT_METHODS = ("concept", "hybrid")  # the methods --context applies to
MEASURES = ("map", "p@10", "ndcg@10", "recall@100")
COMPONENTS = ("bm25", "findings", "concepts", "dense")
TOP = 1000


def main() -> int:
    """Run both benchmarks; 0 on success or a clean skip."""
    args = _arguments()
    xml = shared_data(CMC2007)
    if xml is None:
        print(f"skipped: CMC 2007 reports not found (../shared/data/{CMC2007})")
        return 0
    queries = load_code_queries(args.queries)
    gold = report_codes(read_reports(xml, "cmc2007-coded"))
    bench = cmc_benchmark(gold, queries)
    fmt = "cmc2007" if args.all else "cmc2007-coded"
    started = time.perf_counter()
    if args.reuse and (args.out / "CURRENT").exists():
        index = Index.open(args.out)
    else:
        if args.out.exists():
            shutil.rmtree(args.out)
        findings = {"section_context": section_meanings(args.section_context)}
        index = Index.build(read_reports(xml, fmt), args.out, IndexConfig(
            components=COMPONENTS, options={"findings": findings} if args.section_context else {}),
            progress=False)
    built = time.perf_counter() - started
    print(f"{bench.summary()}; index of {index.manifest.counts.reports} reports ({fmt}) built"
          f" or opened in {built:.0f} s")

    started = time.perf_counter()
    methods = [f"{m}:context={args.context}" if args.context and m in CONTEXT_METHODS
               else m for m in METHODS]
    runs = index_runs(index, bench.queries, [parse_method(m) for m in methods], "report", TOP,
                      progress=False)
    declared = {q.code: q.context for q in queries}
    runs += [declared_run(index, bench.queries, declared, m) for m in CONTEXT_METHODS]
    searched = time.perf_counter() - started
    comp = compare_runs(bench.qrels, runs, [parse_measure(m) for m in MEASURES], bench.queries)
    print("\n## Retrieval (report level, depth 1000; * = p < 0.05 vs bm25)\n")
    print(render.markdown(comp))
    if args.per_code:
        print(render.markdown_from_rows(*render.per_query_rows(comp),
                                        text_columns=render.PER_QUERY_TEXT_COLUMNS))
    print(f"search: {searched:.1f} s for {len(runs)} runs x {len(bench.queries)} queries")

    if args.per_code:
        print("\n## How concept search reads each query\n")
        tools = index_concept_tools(index)
        print("| code | query | read as |\n| --- | --- | --- |")
        for q in bench.queries:
            parsed = tools.parser.parse(q.text)
            why = text_reason(parsed)
            read = (f"text: {why}" if why else "; ".join(parsed.patterns))
            print(f"| {q.qid} | {q.text} | {read} |")

    judged = [q for q in queries if q.qid in bench.qrels.grades]
    print("\n## Code like a coder (one report cohort per code; micro over (report, code))")
    uniform = parse_context(args.context)
    f1 = _code(index, gold, judged, uniform,
               f"--context {args.context or '(none)'} for every code", args.per_code)
    declared_f1 = _code(index, gold, judged, None, "each code's declared context",
                        args.per_code)
    if args.record and not (args.all or args.section_context or args.queries):
        _record(args.context, comp, f1, declared_f1)
    return 0


def _record(context: str, comp: Comparison, f1: float, declared_f1: float) -> None:
    """This run's figures in benchmarks/figures.yaml (see ``--record``)."""
    from benchmarks.figures import record

    command = "python -m benchmarks.quality.bench_cmc --record" + (
        f" --context {context}" if context else "")
    if context == "indication":
        record("cmc.coding-f1.indication", round(f1, 3), command=command, group="quality",
               figure="CMC 2007 coding micro-F1, one cohort per code, --context indication",
               corpus="CMC 2007 dev, 479 coded reports", digits=3, method="concept",
               series="CMC 2007 coding (micro-F1)")
        return
    if context:
        return
    for run in comp.runs:
        record(f"cmc.map.{run.replace(':', '-')}", round(comp.mean(run, comp.measures[0]), 3),
               command=command)
    record("cmc.coding-f1.defaults", round(f1, 3), command=command)
    record("cmc.coding-f1.declared", round(declared_f1, 3), command=command)


def declared_run(index: Index, queries: list[Query], declared: dict[str, tuple[str, ...]],
                  method: str) -> Run:
    """``method`` searching each query with the context flags its code declares, as one run
    named ``METHOD:declared``."""
    scores: dict[str, dict[str, float]] = {}
    for flags in sorted(set(declared.values())):
        group = [q for q in queries if declared[q.qid] == flags]
        spec = parse_method(f"{method}:context={','.join(flags)}" if flags else method)
        (run,) = index_runs(index, group, [spec], "report", TOP, progress=False)
        scores.update(run.scores)
    return Run(f"{method}:declared", scores, f"{index.path} --method {method}, declared contexts")


def _code(index: Index, gold: dict[str, set[str]], queries: list[CodeQuery],
          context: tuple[str, ...] | None, label: str, per_code: bool) -> float:
    """Code the reports with one cohort per code (``context``: as ``code_cohorts``), print
    micro P/R/F1, and with ``per_code`` a row per code; returns the micro F1."""
    cohorts = code_cohorts(index, queries, context)
    scores = coding_scores(gold, cohorts)
    total = scores.micro
    refused = [c for c in cohorts if c.refused]
    print(f"\n{label}: micro P {total.precision:.3f}  R {total.recall:.3f}  F1 {total.f1:.3f}"
          f"  (tp {total.tp}, fp {total.fp}, fn {total.fn}); {len(refused)} of {len(cohorts)}"
          " cohort queries refused")
    if per_code:
        flags = {q.code: ",".join(q.context if context is None else context) for q in queries}
        print("\n| code | cohort query | context | tp | fp | fn | F1 | refused |")
        print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- |")
        for c in cohorts:
            n = scores.concept(c.code)
            print(f"| {c.code} | {c.query} | {flags[c.code]} | {n.tp} | {n.fp} | {n.fn} |"
                  f" {n.f1:.2f} | {c.refused} |")
    return total.f1


def _arguments() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent
                        / "out" / "cmc", help="index folder (replaced)")
    parser.add_argument("--all", action="store_true", help="index all 967 reports, not the 479"
                        " coded ones")
    parser.add_argument("--reuse", action="store_true", help="open the index in --out if it"
                        " is there instead of rebuilding it")
    parser.add_argument("--context", default="", help="context flags concept search, hybrid"
                        " and the first coding also count for every code (e.g. indication:"
                        " the clinical history, the reason for the exam)")
    parser.add_argument("--section-context", action="append", default=[], help="SECTION=CONTEXT"
                        " as `clinsearch index --section-context` (indication=historical: the"
                        " reading before the indication flag); not applied with --reuse")
    parser.add_argument("--queries", type=Path, default=None, help="code query list YAML")
    parser.add_argument("--record", action="store_true", help="record the figures in"
                        " benchmarks/figures.yaml")
    parser.add_argument("--per-code", action="store_true", help="per-query and per-code rows")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
