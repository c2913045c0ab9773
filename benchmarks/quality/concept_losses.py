"""Where concept search loses Recall@100 on the IU X-ray MeSH benchmark, cause by cause.

Every relevant report missing from a query's top 100 is put in one class, from what the
index's findings table holds for that report and the query's parsed pattern:

- ``no finding``: no finding of the query concept (or a narrower one) at all: the text never
  states it, or the annotator misses the wording;
- ``absent only`` / ``uncertain only``: the concept is found, but only negated / only hedged
  (the default concept search keeps present mentions only);
- ``modifier missing``: a present finding, without every queried modifier value on it;
- ``ranked > 100``: a present finding with every queried value, outranked (ties, partial
  matches of other reports).

Each class gets its count of lost (query, report) pairs and the Recall@100 points it costs;
queries with more than 100 relevant reports can lose ``R - 100`` of them whatever the ranking,
so only the avoidable share of their losses is counted (the table's total is ceiling - recall).

    python -m benchmarks.quality.concept_losses [--index DIR] \
        [--method concept:include_uncertain=true]
    python -m benchmarks.quality.concept_losses --index DIR --run FILE   # a run made earlier on DIR
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from benchmarks.iu_common import iu_index_and_bench, run_and_compare
from benchmarks.results_md import OUT
from clinsearch import Index
from clinsearch.annotate.finding import modifier_values
from clinsearch.evaluate import render
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.index.findings import FindingsTable
from clinsearch.search.concept.tools import concept_tools, index_lexicon_path
from clinsearch.trec import Run, read_run

CLASSES = ("no finding", "absent only", "uncertain only", "modifier missing", "ranked > 100")
DEPTH = 100
COMPONENTS = ("bm25", "findings", "concepts")
Losses = dict[str, list[tuple[str, str, float]]]  # class -> (qid, report id, recall points)


def classify_losses(index: Index, bench: Benchmark, run: Run) -> Losses:
    """The lost relevant reports of ``run`` (not in its top ``DEPTH``) by class, with the
    Recall@100 points each costs (avoidable share only, averaged over all queries)."""
    tools = concept_tools(index_lexicon_path(index))
    by_report = _findings_by_report(index.component("findings"))
    out: Losses = {c: [] for c in CLASSES}
    for query in bench.queries:
        relevant = bench.qrels.relevant(query.qid)
        lost = sorted(relevant - set(run.ranking(query.qid)[:DEPTH]))
        if not lost:
            continue
        avoidable = len(lost) - max(0, len(relevant) - DEPTH)
        weight = avoidable / len(lost) / len(relevant) / len(bench.queries)
        parsed = tools.parser.parse(query.text)
        wanted = [(set(tools.hierarchy.descendants(f.concept)), set(modifier_values(f.modifiers)))
                  for group in parsed.groups for f in group]
        for report in lost:
            out[_cause(by_report.get(report, []), wanted)].append((query.qid, report, weight))
    return out


Mentions = dict[str, list[tuple[str, str, frozenset[str]]]]


def _findings_by_report(findings: FindingsTable) -> Mentions:
    """(concept, polarity, modifier values) of every finding, by report id."""
    table = findings.table(["report_id", "concept", "polarity", "modifiers"])
    out: dict[str, list[tuple[str, str, frozenset[str]]]] = defaultdict(list)
    for rid, concept, polarity, mods in zip(*(table.column(c).to_pylist() for c in
                                              ("report_id", "concept", "polarity", "modifiers")),
                                            strict=True):
        out[rid].append((concept, polarity, frozenset(m["value"] for m in mods)))
    return out


def _cause(findings: Iterable[tuple[str, str, frozenset[str]]],
           wanted: Sequence[tuple[set[str], set[str]]]) -> str:
    """The class of one lost report, for the query's (concepts, modifier values) patterns."""
    hits = [(pol, mods, values) for concept, pol, mods in findings
            for concepts, values in wanted if concept in concepts]
    polarities = {pol for pol, _, _ in hits}
    if not hits:
        return "no finding"
    if "present" not in polarities:
        return "uncertain only" if "uncertain" in polarities else "absent only"
    if not any(pol == "present" and values <= mods for pol, mods, values in hits):
        return "modifier missing"
    return "ranked > 100"


def loss_table(losses: Losses, bench: Benchmark) -> str:
    """Markdown: per class, lost pairs and Recall@100 points by query kind and overall."""
    kinds = list(dict.fromkeys(q.kind for q in bench.queries))
    kind_of = {q.qid: q.kind for q in bench.queries}
    share = {k: len(bench.queries) / sum(q.kind == k for q in bench.queries) for k in kinds}
    head = ["class", "lost pairs", *(f"{k} points" for k in kinds), "all points"]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for cls in CLASSES:
        points: Counter[str] = Counter()
        for qid, _, w in losses[cls]:
            points[kind_of[qid]] += w * share[kind_of[qid]]
        total = sum(w for _, _, w in losses[cls])
        lines.append(f"| {cls} | {len(losses[cls])} | "
                     + " | ".join(f"{points[k]:.3f}" for k in kinds) + f" | {total:.3f} |")
    return "\n".join(lines)


def main() -> int:
    """Print the loss table of one concept run; 0 on success or a clean skip."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, default=OUT / "concept_iu"
                    / "index", help="IU index folder (built there when missing)")
    ap.add_argument("--method", default="concept", help="method spec of the run to analyse")
    ap.add_argument("--run", type=Path, default=None,
                    help="analyse this TREC run file (made on --index) instead of searching")
    ap.add_argument("--examples", type=int, default=0, help="print this many lost pairs per class")
    args = ap.parse_args()
    found = iu_index_and_bench(args.index, COMPONENTS)
    if found is None:
        return 0
    index, bench = found
    if args.run is not None:
        run = read_run(args.run)
    else:
        runs, comp, _ = run_and_compare(index, bench, [args.method], ["map", "recall@100"],
                                        "report", 1000)
        print(render.markdown(comp))
        run = runs[0]
    losses = classify_losses(index, bench, run)
    print(loss_table(losses, bench))
    for cls in CLASSES:
        for qid, report, _ in losses[cls][: args.examples]:
            print(f"{cls}\t{qid}\t{report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
