"""Why concept search misses relevant CMC 2007 reports, cause by cause, on one half of them.

The coded reports are split by report id into two halves: ``tune`` (even id) and ``test`` (odd
id); vocabulary fixes are chosen from the tune half's misses only, and MAP is printed per
method on tune, test and all. For each code query, every relevant report that
``concept:declared`` does not return, and its top non-relevant reports, are classed from the
index's findings of the query concept (or a narrower one) in that report:

- ``no mention``: no finding of the concept at all (a vocabulary gap, or the text never says it);
- ``broader concept``: only a finding of an ancestor of the concept (a too-broad mapping);
- ``read absent`` / ``read uncertain``: found, but only negated / only hedged;
- ``other context (FLAGS)``: asserted, but only with context flags the code does not count;
- ``asserted`` (non-relevant reports): read present as the code counts it; the coders did not
  code it.

Prints counts and report ids only; ``--show`` also prints the missed reports' text to the
terminal (never write it to a file in the repository).

    python -m benchmarks.experiments.cmc_concept_misses --index DIR [--half tune] [--show]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.quality.bench_cmc import declared_run
from clinsearch import Index
from clinsearch.corpus.readers import read_reports
from clinsearch.datasets import CMC2007, shared_data
from clinsearch.evaluate import render
from clinsearch.evaluate.bench.cmc2007 import cmc_benchmark, load_code_queries, report_codes
from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.runner import index_runs
from clinsearch.search.concept.tools import index_concept_tools
from clinsearch.search.registry import parse_method
from clinsearch.trec import Qrels, Run

HALVES = ("tune", "test", "all")
METHODS = ("bm25", "dense")
TOP = 1000
Mention = tuple[str, str, frozenset[str]]  # concept, polarity, context flags


def in_half(report_id: str, half: str) -> bool:
    """Whether a report belongs to ``half``: tune = even numeric id, test = odd."""
    if half == "all":
        return True
    return (int(report_id) % 2 == 0) == (half == "tune")


def half_qrels(qrels: Qrels, half: str) -> Qrels:
    """The judgements of the reports in ``half``."""
    return Qrels({q: {d: g for d, g in docs.items() if in_half(d, half)}
                  for q, docs in qrels.grades.items()})


def half_run(run: Run, half: str) -> Run:
    """``run`` with only the reports in ``half``."""
    return Run(run.name, {q: {d: s for d, s in docs.items() if in_half(d, half)}
                          for q, docs in run.scores.items()}, run.source)


def mentions(index: Index) -> dict[str, list[Mention]]:
    """(concept, polarity, context flags) of every finding, by report id."""
    table = index.component("findings").table(["report_id", "concept", "polarity", "context"])
    out: dict[str, list[Mention]] = defaultdict(list)
    for rid, concept, polarity, flags in zip(*(table.column(c).to_pylist() for c in
                                               ("report_id", "concept", "polarity", "context")),
                                             strict=True):
        out[rid].append((concept, polarity, frozenset(flags or ())))
    return out


def cause(found: list[Mention], narrower: set[str], broader: set[str],
          counted: frozenset[str]) -> str:
    """The class of one report for a query concept (``narrower``: it and its descendants,
    ``broader``: its ancestors) whose code counts the ``counted`` context flags."""
    hits = [(pol, flags) for concept, pol, flags in found if concept in narrower]
    if not hits:
        broad = any(concept in broader for concept, _, _ in found)
        return "broader concept" if broad else "no mention"
    present = [flags for pol, flags in hits if pol == "present"]
    if any(flags <= counted for flags in present):
        return "asserted"
    if present:
        other = sorted(set().union(*present) - counted)
        return f"other context ({','.join(other)})"
    polarities = {pol for pol, _ in hits}
    return "read uncertain" if "uncertain" in polarities else "read absent"


def main() -> int:
    """Print per-half MAP and the miss classes; 0 on success or a clean skip."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, required=True, help="index built by bench_cmc")
    ap.add_argument("--half", choices=HALVES, default="tune", help="whose misses to class")
    ap.add_argument("--top", type=int, default=5, help="top non-relevant reports per query")
    ap.add_argument("--show", action="store_true", help="print missed reports' text (terminal)")
    args = ap.parse_args()
    xml = shared_data(CMC2007)
    if xml is None:
        print(f"skipped: CMC 2007 reports not found (../shared/data/{CMC2007})")
        return 0
    reports = {r.id: r for r in read_reports(xml, "cmc2007-coded")}
    queries = load_code_queries()
    bench = cmc_benchmark(report_codes(reports.values()), queries)
    index = Index.open(args.index)
    declared = {q.code: q.context for q in queries}
    runs = index_runs(index, bench.queries, [parse_method(m) for m in METHODS], "report", TOP,
                      progress=False)
    runs += [declared_run(index, bench.queries, declared, m) for m in ("concept", "hybrid")]
    measures = [parse_measure(m) for m in ("map", "recall@100")]
    for half in HALVES:
        comp = compare_runs(half_qrels(bench.qrels, half), [half_run(r, half) for r in runs],
                            measures, bench.queries)
        title = "all reports" if half == "all" else f"{half} half"
        print(f"\n## {title}\n\n{render.markdown(comp)}")

    tools = index_concept_tools(index)
    found = mentions(index)
    concept_run = half_run(runs[len(METHODS)], args.half)
    totals: Counter[str] = Counter()
    print(f"\n## concept:declared misses and top non-relevant reports, {args.half} half\n")
    for query in bench.queries:
        concepts = [f.concept for g in tools.parser.parse(query.text).groups for f in g]
        narrower = {d for c in concepts for d in tools.hierarchy.descendants(c)}
        broader = {a for c in concepts for a in tools.hierarchy.ancestors(c)} - narrower
        counted = frozenset(declared[query.qid])
        ranking = concept_run.ranking(query.qid)
        relevant = {d for d in bench.qrels.relevant(query.qid) if in_half(d, args.half)}
        missed = sorted(relevant - set(ranking))
        wrong = [d for d in ranking if d not in relevant][: args.top]
        print(f"{query.qid} ({query.text} -> {','.join(concepts)}): {len(relevant)} relevant,"
              f" {len(missed)} missed")
        for label, docs in (("missed", missed), ("top non-relevant", wrong)):
            classes: dict[str, list[str]] = defaultdict(list)
            for doc in docs:
                classes[cause(found.get(doc, []), narrower, broader, counted)].append(doc)
            for cls, ids in sorted(classes.items()):
                totals[f"{label}: {cls}"] += len(ids)
                codes = [";".join(sorted(reports[d].metadata["codes"].split(";"))) for d in ids]
                print(f"  {label} / {cls}: " + " ".join(f"{d}[{c}]" for d, c in zip(ids, codes,
                                                                                  strict=True)))
                if args.show and label == "missed":
                    for doc in ids:
                        print(f"    --- {doc}: {' '.join(reports[doc].text.split())}")
    print("\n## totals\n")
    for key, n in sorted(totals.items()):
        print(f"{n:5d}  {key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
