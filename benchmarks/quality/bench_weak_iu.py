"""IU X-ray sentence-level weak-label benchmark ([Shi2022] section 2.2): BM25 vs dense, one run.

Builds an index with the bm25 and dense components, labels its sentences with the shipped
annotator, builds "M" / "no M" queries (`clinsearch bench build weak-sentences`), searches at
sentence level with each method and compares them per query group (positive / negative / all),
the setup of [Shi2022] Table 2. Skips with a message when ../shared/data is absent.

    python -m benchmarks.quality.bench_weak_iu
"""

from __future__ import annotations

import os
import platform
import sys
import time
from datetime import date

from benchmarks.iu_common import iu_csv, run_and_compare
from benchmarks.results_md import BENCHMARKS, OUT, RESULTS, update_section
from clinsearch import Index
from clinsearch.annotate.annotator import Annotator
from clinsearch.corpus.readers import read_reports
from clinsearch.evaluate import render
from clinsearch.evaluate.bench.benchmark import write_benchmark
from clinsearch.evaluate.bench.weak import index_sentence_findings, weak_benchmark
from clinsearch.evaluate.plots import write_plots
from clinsearch.index.config import IndexConfig

WORK = OUT / "weak_iu"
PLOTS = RESULTS / "plots" / "weak_iu"
RESULTS_MD = RESULTS / "quality.md"
PARENT = "## Evaluation harness"
HEADING = "### IU X-ray weak-label sentence benchmark: BM25 vs dense ([Shi2022], Table 2)"
METHODS = ("bm25", "dense")
MEASURES = ("map", "rprec", "p@10", "ndcg@10", "bpref", "mrr", "recall@100")
TOP = 1000


def main() -> int:
    """Run the comparison; 0 on success or a clean skip."""
    csv = iu_csv()
    if csv is None:
        return 0
    console = render.table_console()
    t0 = time.perf_counter()
    config = IndexConfig(components=("bm25", "dense"))
    index = Index.build(read_reports(csv, "iu-xray", skip_bad=True), WORK / "index", config)
    t_index = time.perf_counter() - t0
    t1 = time.perf_counter()
    weak = weak_benchmark(index_sentence_findings(index, Annotator()))
    t_label = time.perf_counter() - t1
    write_benchmark(WORK / "bench", weak.all, force=True)
    bench = weak.all
    runs, comp, t_search = run_and_compare(index, bench, METHODS, MEASURES, "sentence", TOP)
    console.print(render.rich_table(comp))
    PLOTS.parent.mkdir(parents=True, exist_ok=True)
    plots = write_plots(comp, bench.qrels, runs, PLOTS, force=True)
    counts = index.manifest.counts
    folds = "; ".join(f"fold {k}: {f.summary()}" for k, f in enumerate(weak.folds, start=1))
    body = f"""
Queries are the findings the shipped annotator asserts in the {counts.sentences} indexed
sentences of {counts.reports} IU X-ray reports: "M" (positive) and "no M" (negative), each with
at least 3 relevant sentences; relevant are the sentences with that finding and polarity, and
sentences with the opposite polarity are judged not relevant (`clinsearch bench build
weak-sentences`): {bench.summary()}. The 2-fold split of [Shi2022] (Table 1) for unseen-query
evaluation of trained models: {folds}. Sentence level, depth {TOP}; `dense` is the packaged
all-MiniLM-L6-v2 off the shelf; `*` = p < 0.05, paired randomization test vs `bm25`.

{render.markdown(comp)}
Paper 000 (Table 2, IND, their own labels and de-duplicated sentences): BM25 MAP 0.39 positive /
0.34 negative / 0.38 all; SBERT (MS MARCO) 0.40 / 0.35 / 0.39. Labels here come from the
clinsearch lexicon and annotator, so the figures are anchors, not a reproduction.

Plots: {", ".join(f"`{p.relative_to(RESULTS)}`" for p in plots)}.

Command: `python -m benchmarks.quality.bench_weak_iu`; {date.today().isoformat()},
{platform.machine()} {os.cpu_count()} cores shared with other jobs (timings are indicative):
index build with embeddings {t_index:.0f} s, labelling {t_label:.0f} s, search
{1000 * t_search / (len(runs) * len(bench.queries)):.0f} ms per query and method (top {TOP}).
"""
    update_section(RESULTS_MD, HEADING, body, PARENT)
    console.print(f"wrote {RESULTS_MD.relative_to(BENCHMARKS.parent)} and {len(plots)} plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
