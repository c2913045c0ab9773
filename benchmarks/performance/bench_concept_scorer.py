"""Concept scorer speed: ``ConceptRanker.rank`` and its explanations, for one or more source trees.

For each ``--src`` tree (a folder holding ``clinsearch/``, e.g. this checkout's ``src`` and an
older commit's, from ``git archive``), a fresh process opens the index, parses a fixed set of
concept queries, and times, per round: ranking them with a new ranker (every pattern scored:
the cold path), ranking them again (memoised pattern scores: the warm path), and explaining
each ranking's 10 best sentences. Trees alternate round by round, so a change in the machine's
load reaches each alike. Prints JSON: per tree, the median of each timing in milliseconds.

    python -m benchmarks.performance.bench_concept_scorer --index IDX --src src --src /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

QUERIES = (
    "right lower lobe pneumonia", "no pleural effusion", "small left pleural effusion",
    "mild cardiomegaly", "large right pneumothorax", "bilateral pleural effusions",
    "left basilar atelectasis", "pulmonary edema", "enlarged heart", "right upper lobe opacity",
    "stable mild cardiomegaly", "small right apical pneumothorax",
    "left lower lobe consolidation", "calcified granuloma", "no focal airspace consolidation",
    "degenerative changes of the thoracic spine",
)

CHILD = """
import json, sys, time
from clinsearch import Index
from clinsearch.search.concept.ranking import ConceptRanker

index = Index.open(sys.argv[1])
retriever = index.session.retriever("concept", {})
parsed = retriever.parser.parse_many(json.loads(sys.argv[2]))
base = retriever.ranker
for line in sys.stdin:  # one round per line, so that the parent can alternate trees
    ranker = ConceptRanker(base.index, base.hierarchy, base.vectors, base.categories)
    started = time.perf_counter()
    rankings = [ranker.rank(p, retriever.options) for p in parsed]
    cold = time.perf_counter() - started
    started = time.perf_counter()
    rankings = [ranker.rank(p, retriever.options) for p in parsed]
    warm = time.perf_counter() - started
    started = time.perf_counter()
    for ranking in rankings:
        for code in ranking.top(10)[0].tolist():
            ranking.parts(code)
    explain = time.perf_counter() - started
    found = [(len(r), r.top(10)[0].tolist(), [round(float(v), 9) for v in r.top(10)[1]])
             for r in rankings]
    print(json.dumps({"cold": cold, "warm": warm, "explain": explain, "found": found}),
          flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="an index with concepts")
    parser.add_argument("--src", type=Path, action="append", required=True,
                        help="a source tree to time (repeat to compare)")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    children = [subprocess.Popen(
        [sys.executable, "-c", CHILD, str(args.index), json.dumps(QUERIES)],
        env={**os.environ, "PYTHONPATH": str(src.resolve())}, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE) for src in args.src]
    results: list[list[dict]] = [[] for _ in children]
    for _ in range(args.rounds):
        for child, got in zip(children, results, strict=True):
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write("\n")
            child.stdin.flush()
            got.append(json.loads(child.stdout.readline()))
    for child in children:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    found = {json.dumps(got[0]["found"]) for got in results}
    print(json.dumps({
        "index": str(args.index), "queries": len(QUERIES), "rounds": args.rounds,
        "same_results": len(found) == 1, "load": os.getloadavg()[0],
        "trees": {str(src): {key: round(1000 * statistics.median(r[key] for r in got), 1)
                             for key in ("cold", "warm", "explain")}
                  for src, got in zip(args.src, results, strict=True)},
    }, indent=2))


if __name__ == "__main__":
    main()
