"""Benchmark BM25 in segments (issue 16): adds against a fresh build, and deletes that only mark
against deletes that rebuild.

Run: ``python -m benchmarks.performance.bench_bm25_segments [--reports 20000] [--seed 16]``

On a seeded synthetic corpus (IU X-ray sentences recombined when ../shared data is present, else
the bundled sample): (1) an index grown by 10 adds is compared with a fresh build of the same
reports (top 10 of every query at both granularities: ids, scores bit for bit, order); (2) for
1%, 5%, 10% and 20% of the reports deleted, an index whose delete only marks (tantivy deletion
bitsets: the deleted documents still count in the BM25 statistics) is compared with a fresh
build of the remaining reports (queries whose top 10 differ, relative score differences), and a
marks-only delete is timed against a delete that rebuilds the BM25 indexes. Prints JSON with
the machine's load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import tantivy

from benchmarks.performance.bench_storage import QUERIES, _uptime
from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import SegmentedReport
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.synthetic import default_source, sentence_pool, synthetic_reports
from clinsearch.index.bm25 import GRANULARITIES, BM25Searcher
from clinsearch.index.index_store import split_into_sentences

MARKS_ONLY = {"merge_below_sentences": 0, "max_deleted_fraction": 1.0}
REBUILD = {"merge_below_sentences": 0, "max_deleted_fraction": 0.0}
ADDS = 10
PASSES = 3
FRACTIONS = (0.01, 0.05, 0.10, 0.20)

Top = list[tuple[str, int, float]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()
    source, fmt = default_source()
    pool = sentence_pool(read_reports(source, fmt, skip_bad=True))
    reports = split_into_sentences(list(synthetic_reports(pool, args.reports, seed=args.seed)))
    queries = _queries(reports, args.seed)
    result: dict = {"reports": len(reports), "sentences": sum(len(r.sentences) for r in reports),
                    "queries": len(queries), "cores": os.cpu_count(), "load_before": _uptime()}
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        fresh = Index.build(reports, root / "fresh", _config({}), progress=False)
        result["search"] = _latency(fresh, queries)
        result["adds"] = _adds(root, reports, queries, _top10(fresh, queries))
        result["deletes"] = [_deletes(root, reports, queries, f, args.seed) for f in FRACTIONS]
    result["load_after"] = _uptime()
    print(json.dumps(result, indent=2))


def _adds(root: Path, reports: list[SegmentedReport], queries: list[str], want: list[Top]) -> dict:
    """An index grown by ``ADDS`` adds against a fresh build: top 10s that differ."""
    step = len(reports) // (ADDS + 1)
    grown = Index.build(reports[:step], root / "grown", _config({}), progress=False)
    started = time.perf_counter()
    for start in range(step, len(reports), step):
        grown.add(reports[start:start + step], progress=False)
    seconds = time.perf_counter() - started
    got = _top10(grown, queries)
    meta = grown.generation.path / "lexical" / "sentences" / "meta.json"
    return {"adds": ADDS, "seconds": round(seconds, 2),
            "tantivy_segments": len(json.loads(meta.read_text())["segments"]),
            "top10_differ": sum(a != b for a, b in zip(want, got, strict=True)),
            "top10_compared": len(want)}


def _deletes(
    root: Path, reports: list[SegmentedReport], queries: list[str], fraction: float, seed: int
) -> dict:
    """Marks only against a fresh build of the remaining reports, and the time of each policy."""
    rng = np.random.default_rng(seed)
    gone = {reports[i].report.id for i in rng.choice(len(reports), int(fraction * len(reports)),
                                                     replace=False)}
    kept = [r for r in reports if r.report.id not in gone]
    name = f"{fraction:.2f}"
    fresh = _top10(Index.build(kept, root / f"kept-{name}", _config({}), progress=False), queries)
    timings = {}
    for policy, options in (("marks", MARKS_ONLY), ("rebuild", REBUILD)):
        index = Index.build(reports, root / f"{policy}-{name}", _config(options), progress=False)
        started = time.perf_counter()
        index.delete(sorted(gone))
        timings[policy] = round(time.perf_counter() - started, 3)
        if policy == "marks":
            marked = _top10(index, queries)
        else:
            assert _top10(index, queries) == fresh, "a rebuild must equal a fresh build"
    ratios = [abs(m[2] - f[2]) / f[2] for a, b in zip(fresh, marked, strict=True)
              for f, m in zip(a, b, strict=False) if f[:2] == m[:2]]
    return {
        "deleted": fraction,
        "top10_set_differs": sum({x[:2] for x in a} != {x[:2] for x in b}
                                 for a, b in zip(fresh, marked, strict=True)),
        "top10_order_differs": sum([x[:2] for x in a] != [x[:2] for x in b]
                                   for a, b in zip(fresh, marked, strict=True)),
        "top10_compared": len(fresh),
        "score_rel_diff_median": round(float(np.median(ratios)), 4),
        "score_rel_diff_max": round(float(np.max(ratios)), 4),
        "delete_seconds": timings,
    }


def _latency(index: Index, queries: list[str]) -> dict:
    """p50 ms of a top-10 and a top-64 search (the first fetch of a report-level search), per
    granularity: ``BM25Searcher.search`` (ties ordered by keys) and tantivy's own top k with
    the same fast-field reads."""
    bm25: BM25Searcher = index.component("bm25")
    found: dict = {}
    for granularity in GRANULARITIES:
        searcher, schema = bm25._searchers[granularity], bm25._indexes[granularity].schema
        ordered, plain = [], []
        for _ in range(PASSES):
            for query in queries:
                terms = bm25.terms(query)
                for limit in (10, 64):
                    started = time.perf_counter()
                    bm25.search(granularity, terms, limit)
                    ordered.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    tantivy_query = tantivy.Query.boolean_query(
                        [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t))
                         for t in terms])
                    hits = searcher.search(tantivy_query, limit=limit, count=True).hits
                    searcher.fast_field_values("report_key", [address for _, address in hits])
                    plain.append(time.perf_counter() - started)
        ms = (1000 * float(np.median(ordered)), 1000 * float(np.median(plain)))
        found[granularity] = {"ordered_p50_ms": round(ms[0], 3), "tantivy_p50_ms": round(ms[1], 3),
                              "ratio": round(ms[0] / ms[1], 2)}
    return found


def _config(options: dict) -> IndexConfig:
    return IndexConfig(components=("bm25",), options={"bm25": options})


def _queries(reports: list[SegmentedReport], seed: int) -> list[str]:
    """The storage benchmark's queries plus 200 of one to three words drawn from the reports."""
    words = sorted({w.strip(".,;:").lower() for r in reports[:500] for s in r.sentences
                    for w in s.text.split() if w.strip(".,;:").isalpha()})
    rng = np.random.default_rng(seed)
    drawn = [" ".join(rng.choice(words, size=int(rng.integers(1, 4)))) for _ in range(200)]
    return [*QUERIES, *drawn]


def _top10(index: Index, queries: list[str]) -> list[Top]:
    """Top 10 of each query at both granularities as (report id, sentence index, score)."""
    bm25: BM25Searcher = index.component("bm25")
    found = []
    for granularity in GRANULARITIES:
        for query in queries:
            ranked = bm25.search(granularity, bm25.terms(query), 10)
            rows = index.lookup.report_rows(ranked.report_keys).tolist()
            indexes = (ranked.sentence_indexes.tolist() if ranked.sentence_indexes is not None
                       else [-1] * len(rows))
            found.append([(index.lookup.report_ids[row], i, s) for row, i, s in
                          zip(rows, indexes, ranked.scores.tolist(), strict=True)])
    return found


if __name__ == "__main__":
    main()
