"""Concept search vs BM25 on IU X-ray (report level), its latency, and cohorts at 1M sentences.

1. Builds the IU X-ray index with the bm25, findings and concepts components and the iu-mesh
   benchmark (core, concept+modifier and synonym queries judged from the manual MeSH labels);
   searches with ``bm25``, ``concept`` and ``concept`` with uncertain mentions admitted in one
   run and compares MAP, R-precision, P@10 and Recall@100 per query kind; then classifies the
   relevant reports concept search leaves out of its top 100 (``concept_losses``).
2. Times single concept queries on that index (p50/p95 over the benchmark queries).
3. Replicates the IU reports, sentences and findings tables to at least 1M sentences and times
   cohort queries (exact counts at one level, at all three levels, and member lists).

Writes the figures into benchmarks/results/quality.md (section "Concept search").
Skips with a message when ../shared/data is absent.

    python -m benchmarks.quality.bench_concept [--index DIR] [--reuse]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import duckdb

from benchmarks.iu_common import iu_csv, iu_mesh, run_and_compare
from benchmarks.quality.concept_losses import classify_losses, loss_table
from benchmarks.results_md import BENCHMARKS, OUT, RESULTS, update_section
from clinsearch import Index, IndexConfig
from clinsearch.corpus.readers import read_reports
from clinsearch.evaluate import render
from clinsearch.evaluate.bench.benchmark import write_benchmark
from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.engine import CohortEngine
from clinsearch.search.cohort.resolve import term_resolver
from clinsearch.search.concept.tools import concept_tools

WORK = OUT / "concept_iu"
RESULTS_MD = RESULTS / "quality.md"
HEADING = "## Concept search"
UNCERTAIN = "concept:include_uncertain=true"
METHODS = ("bm25", "concept", UNCERTAIN)
MEASURES = ("map", "rprec", "p@10", "recall@100")
TARGETS = {"core": 0.15, "modifier": 0.20, "synonym": 0.25}  # MAP gains asked for (issue 5)
TOP = 1000
# Measured once (before/after the Recall@100 fixes); kept in the section as written.
RECALL_WORK = """\
Recall@100 work (2026-11-23). The loss table of the 2026-11-22 concept run put the avoidable
Recall@100 losses (all queries) in: no finding 0.055, modifier missing 0.038, uncertain only
0.023, absent only 0.005, outranked 0.003. Reading the lost reports: "modifier missing" was
mostly "minimal" where MeSH says mild, and laterality or location written once for coordinated
findings ("scarring or atelectasis in the left lung base") or as a plural site ("the lung
apices"); "uncertain only" is hedged findings ("atelectasis versus infiltrate", "probable
DISH") that the default rightly leaves out; "absent only" held a few annotator errors (a
terminator that did not end a short backward cue: "blunting which is not evident on the
lateral view", a medspaCy 1.3.1 span-overlap bug now patched in `annotate/medspacy_pipeline.py`);
"no finding" is wording the lexicon lacks ("pulmonary venous hypertension", "prominent
ascending aorta", "irregularity of the rib") and MeSH labels the text never states. Fixed:
hedges are uncertain, never negated ("unclear whether", "suspicion for", "this does not
exclude", "can not be ruled out", "is suspected"); terminators end short backward cues;
coordinated findings share a modifier (alternatives in both directions, lists a postposed
one); plural sites (bases, apices, hila) are bilateral; "minimal" and "mild" count half for
each other in ranking. Same benchmark (identical qrels), concept run of main on an index
built by main (before) and of this branch on an index built by it (after):

| group | run | MAP before | MAP after | Recall@100 before | Recall@100 after | ceiling |
|---|---|---:|---:|---:|---:|---:|
| core | concept | 0.781 | 0.781 | 0.764 | 0.766 | 0.872 |
| modifier | concept | 0.680 | 0.704 | 0.861 | 0.881 | 0.993 |
| synonym | concept | 0.785 | 0.784 | 0.757 | 0.758 | 0.854 |
| all | concept | 0.707 | 0.725 | 0.834 | 0.849 | |
| core | concept, include uncertain | 0.800 | 0.798 | 0.784 | 0.784 | 0.872 |
| modifier | concept, include uncertain | 0.688 | 0.714 | 0.875 | 0.897 | 0.993 |
| synonym | concept, include uncertain | 0.803 | 0.801 | 0.775 | 0.774 | 0.854 |
| all | concept, include uncertain | 0.719 | 0.737 | 0.849 | 0.866 | |

Extraction guard rails on the same code: NegEx test set negated F1 0.964 -> 0.963 (one
more error of 2376: "weakness although that seemed to have resolved" is now present, the
terminator now ending "resolved"), 3-class accuracy 0.956 -> 0.956; IU X-ray MeSH finding
extraction (present, hierarchical) F1 0.931 -> 0.931 (P 0.939 -> 0.940, R 0.922 -> 0.923),
laterality of matched concepts F1 0.813 -> 0.833 (R 0.760 -> 0.801, P 0.874 -> 0.867).
The 0.90 Recall@100 target stays out of reach: the ceilings (queries with more than 100
relevant reports) cap core at 0.872 and synonym at 0.854, and within them the largest
remaining loss is reports with no finding of the concept at all (lexicon wording gaps and
labels the text does not state), then hedged findings (default run) and modifiers the text
states elsewhere or not at all.
Core and synonym MAP move by at most 0.003, not significantly (the modifier and overall gains
are, p < 0.05, paired randomization test, before vs after run) (core 0.781 -> 0.781,
synonym 0.785 -> 0.784; with uncertain 0.800 -> 0.798 and 0.803 -> 0.801):
pattern-similarity tie-breaks shift once findings carry more modifier values. Admitting
uncertain mentions is significant on every group (paired randomization, after runs: MAP
+0.012, Recall@100 +0.017 overall)."""
COHORT_HEADER = (
    "| level | query | matching units | count at level (ms) | counts at 3 levels (ms)"
    " | members with evidence (ms) |\n|---|---|---:|---:|---:|---:|"
)
COHORT_QUERIES = (
    ("patient", 'pneumonia AND NOT "pleural effusion"'),
    ("patient", "(cardiomegaly AND pleural effusion) same sentence OR pneumothorax"),
    ("report", "granuloma AND NOT (atelectasis OR opacity) section:impression"),
    ("visit", "NOT (cardiomegaly OR pneumonia OR emphysema)"),
)


def main() -> int:
    """Run the three parts; 0 on success or a clean skip."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=1_000_000,
                    help="cohort part: replicate IU to at least this many sentences")
    ap.add_argument("--index", type=Path, default=WORK / "index",
                    help="IU index folder (bm25, findings, concepts)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the index in --index if there is one, instead of rebuilding it")
    args = ap.parse_args()
    csv = iu_csv()
    if csv is None:
        return 0
    console = render.table_console()
    t0 = time.perf_counter()
    built = not (args.reuse and (args.index / "CURRENT").exists())
    if built:
        config = IndexConfig(components=("bm25", "findings", "concepts"))
        index = Index.build(read_reports(csv, "iu-xray", skip_bad=True), args.index, config)
    else:
        index = Index.open(args.index)
    t_index = time.perf_counter() - t0
    reports, bench = iu_mesh(csv)
    WORK.mkdir(parents=True, exist_ok=True)
    write_benchmark(WORK / "bench", bench, force=True)

    runs, comp, t_search = run_and_compare(index, bench, METHODS, MEASURES, "report", TOP)
    console.print(render.rich_table(comp))
    gains = target_lines(comp, bench)
    console.print(gains)
    losses = {run.name: loss_table(classify_losses(index, bench, run), bench)
              for run in runs if run.name != "bm25"}
    for name, table in losses.items():
        console.print(f"{name}: lost relevant reports by cause\n{table}")

    latencies = concept_latency(index, [q.text for q in bench.queries])
    p50, p95 = _percentiles(latencies)
    console.print(f"concept search latency: p50 {p50:.2f} ms, p95 {p95:.2f} ms "
                  f"({len(latencies)} queries, report level, top 10)")

    cohort_rows, n_sentences, t_load = cohort_scale(index, args.sentences)
    for row in cohort_rows:
        console.print(" | ".join(row))

    body = f"""
Concept search (`--method concept`: finding patterns parsed from the query by the annotator,
looked up in the concept postings, ranked by pattern completeness with ties broken by pattern
similarity, reports scored by their best sentence) against BM25 best sentence (`bm25`) in one
run on the IU X-ray MeSH benchmark (`clinsearch bench build iu-mesh`): {bench.summary()};
{len(reports)} reports. Relevance comes from the manual MeSH labels. Depth {TOP};
`*` = p < 0.05, paired randomization test vs `bm25`.

{render.markdown(comp)}
{gains}

`{UNCERTAIN}` admits hedged mentions ("possible pneumonia", "atelectasis versus pneumonia",
"pneumothorax cannot be excluded"), ranked after definite ones (polarity counts half). The
MeSH labels include such findings, so it is the fairer setting for label-style retrieval; the
default (present mentions only) is what the issue asks for and what a user asking "pneumonia"
expects first.

Relevant reports each concept run leaves out of its top 100, by cause
(`benchmarks/quality/concept_losses.py`): no finding of the query concept (or a narrower one) in the
report; found only negated; only hedged; present but without every queried modifier value;
present with every value but outranked. Points are Recall@100 lost, only the avoidable share
(queries with more than 100 relevant reports lose R - 100 whatever the ranking), so a column
sums to the ceiling minus the run's Recall@100.

{chr(10).join(f"{name}:{chr(10)}{chr(10)}{table}{chr(10)}" for name, table in losses.items())}

Latency of one concept query (parse + lookup + rank + hits, report level, top 10), over the
{len(latencies)} benchmark queries after one warm-up pass: p50 {p50:.2f} ms, p95 {p95:.2f} ms.
Index build (bm25 + findings + concepts) {f"{t_index:.0f} s" if built else "not timed (reused)"};
TREC runs {1000 * t_search /
(len(runs) * len(bench.queries)):.0f} ms per query and method at depth {TOP}.

Cohort queries over the IU tables replicated to {n_sentences:,} sentences (loaded once in
{t_load:.1f} s; each query parsed, resolved and evaluated; best of 5):

{COHORT_HEADER}
{chr(10).join("| " + " | ".join(r) + " |" for r in cohort_rows)}

Reading the figures: concept search beats BM25 on every kind of query, by far on synonym
queries (BM25 cannot match "enlarged heart" to reports that say "cardiomegaly") and clearly on
core queries (negated mentions never match). On concept+modifier queries three partial-credit
rules (`search/modifier_relations.py`) help: related regions count half (base ~ lower lobe ~
lower zone, apex ~ upper lobe ~ upper zone, bilateral ~ either side), a sentence that leaves
a queried modifier unstated ranks above one that contradicts it, and a modifier carried by
another finding of the same report counts half. Together they raise concept modifier MAP from
0.641 to 0.680 and Recall@100 from 0.826 to 0.861 (concept run of main without them, same
benchmark and lexicon, 2026-11-22); core and synonym MAP do not move (0.781, 0.785). Added
one at a time on the previous lexicon: 0.626 (none) -> 0.636 (related regions) -> 0.638
(unstated above contradicting) -> 0.661 (stated elsewhere in the report). What remains is
MeSH wording the lexicon normalises away ("prior" and "chronic" are one temporal value)
and reports whose text never states the labelled modifier.

{RECALL_WORK}

The cohort queries stay under 200 ms per level at
1M sentences; member lists with evidence for 150k units take longer (building Python rows).

Command: `python -m benchmarks.quality.bench_concept`; {date.today().isoformat()},
{platform.machine()} {os.cpu_count()} cores shared with other jobs (timings are indicative).
"""
    update_section(RESULTS_MD, HEADING, body)
    console.print(f"wrote {RESULTS_MD.relative_to(BENCHMARKS.parent)}")
    return 0


def target_lines(comp: object, bench: object) -> str:
    """MAP gain of concept over BM25 per query kind against the targets, and the best
    Recall@100 any ranking could reach (queries with more than 100 relevant reports cap it)."""
    lines = ["| kind | MAP gain (concept - bm25) | target | Recall@100 ceiling |",
             "|---|---:|---:|---:|"]
    for kind, target in TARGETS.items():
        qids = [q.qid for q in bench.queries if q.kind == kind]  # type: ignore[attr-defined]
        ap = comp.measures[0]  # type: ignore[attr-defined]  # MAP, the first of MEASURES
        gain = comp.mean("concept", ap, kind) - comp.mean("bm25", ap, kind)  # type: ignore[attr-defined]
        relevant = [sum(g > 0 for g in bench.qrels.grades[q].values()) for q in qids]  # type: ignore[attr-defined]
        ceiling = sum(min(1.0, 100 / r) for r in relevant) / len(relevant)
        lines.append(f"| {kind} | {gain:+.3f} | >= +{target:.2f} | {ceiling:.3f} |")
    return "\n".join(lines)


def concept_latency(index: Index, queries: list[str]) -> list[float]:
    """Milliseconds per single concept query, after a warm-up pass over the same queries."""
    for q in queries:
        index.search(q, "report", 10, "concept")
    out = []
    for q in queries:
        t = time.perf_counter()
        index.search(q, "report", 10, "concept")
        out.append(1000 * (time.perf_counter() - t))
    return out


def cohort_scale(index: Index, sentences: int) -> tuple[list[list[str]], int, float]:
    """Time cohort queries over the index's tables replicated to at least ``sentences``."""
    gen = index.generation
    con = duckdb.connect()
    con.register("indexed_reports", gen.table("reports", ["id", "patient_id", "visit_id",
                                                          "type", "date"]))
    con.register("indexed_sentences", gen.table("sentences", ["id", "report_id", "index",
                                                              "section", "text"]))
    n = con.execute("SELECT count(*) FROM indexed_sentences").fetchall()[0][0]
    copies = max(1, -(-sentences // n))
    t = time.perf_counter()
    con.execute(
        "CREATE TABLE reports AS SELECT id || '~' || k AS id, patient_id || '~' || k AS"
        " patient_id, visit_id, type, date FROM indexed_reports, range(?) c(k)", [copies])
    con.execute(
        "CREATE TABLE sentences AS SELECT id || '~' || k AS id, report_id || '~' || k AS"
        " report_id, \"index\", section, text FROM indexed_sentences, range(?) c(k)", [copies])
    con.register("indexed_findings", index.component("findings").table(
        ["sentence_id", "concept", "polarity", "modifiers"]))
    con.execute(
        "CREATE TABLE findings AS SELECT sentence_id || '~' || k AS sentence_id, concept,"
        " polarity, modifiers FROM indexed_findings, range(?) c(k)", [copies])
    total = con.execute("SELECT count(*) FROM sentences").fetchall()[0][0]
    tools = concept_tools(None)
    tables = [con.sql(f"FROM {name}").to_arrow_table() for name in ("reports", "sentences")]
    corpus = CohortArrays.from_arrow(*tables, con.sql("FROM findings").to_arrow_table())
    engine = CohortEngine(corpus, lambda q: term_resolver(q, tools.parser, tools.hierarchy))
    t_load = time.perf_counter() - t
    rows = []
    for level, query in COHORT_QUERIES:
        engine.count(query, level)  # warm-up: resolves the terms once
        one = _best(lambda q=query, lv=level: engine.count(q, lv))
        three = _best(lambda q=query: engine.counts(q))
        members = _best(lambda q=query, lv=level: engine.members(q, lv))
        rows.append([level, f"`{query}`", f"{engine.count(query, level):,}", f"{one:.0f}",
                     f"{three:.0f}", f"{members:.0f}"])
    return rows, total, t_load


def _best(fn: object, repeat: int = 5) -> float:
    """Fastest of ``repeat`` calls, in milliseconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(1000 * (time.perf_counter() - t))
    return min(times)


def _percentiles(values: list[float]) -> tuple[float, float]:
    """p50 and p95."""
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


if __name__ == "__main__":
    sys.exit(main())
