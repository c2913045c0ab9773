"""Recall of a dense segment's HNSW against exact inner products (issue 37, vectors at scale).

Run: ``python -m benchmarks.performance.bench_hnsw_recall --index IDX [--distinct | --as-built]``

Reads the sentence vectors of the first dense segment of ``--index`` (built with
``--dense``, e.g. by ``bench_storage --dense static --work DIR``: ``DIR/index``), encodes the
IU X-ray MeSH terms (when ../shared data is present, else the sample's findings) with the
index's own model as queries, and for each HNSW setting (M, efConstruction) times the graph's
build on two threads and, for each efSearch, the recall at 10 against the exact top 10 of the
same vectors. Recall is counted by score (a result scoring at least the exact 10th score
counts), as a corpus repeats sentences and equal vectors tie. ``--distinct`` builds over each
distinct vector once; ``--as-built`` measures instead the index's own dense search (its graphs
as built, the shipped efSearch) against exact scores over every segment. Prints JSON with the
machine's load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from benchmarks.iu_common import iu_csv, iu_mesh
from benchmarks.performance.bench_storage import _uptime
from clinsearch import Index
from clinsearch.index.dense import DenseSearcher
from clinsearch.models.encoder import load_encoder

SETTINGS = ((32, 80), (16, 40))  # (M, efConstruction); the first is the shipped one
EF_SEARCH = (128, 512, 2048)
K = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--distinct", action="store_true", help="each distinct vector once")
    parser.add_argument("--as-built", action="store_true",
                        help="the index's own dense search, its graphs as built")
    args = parser.parse_args()
    import faiss

    csv = iu_csv()
    terms = (sorted({q.text for q in iu_mesh(csv)[1].queries}) if csv
             else ["pneumothorax", "pleural effusion", "cardiomegaly", "pneumonia"])
    with Index.open(args.index) as index:
        folder = index.generation.path / "dense"
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        queries = np.asarray(load_encoder(meta["model_path"]).encode_queries(terms), np.float32)
        if args.as_built:
            print(json.dumps(as_built(index.component("dense"), queries), indent=1))
            return
        vectors = np.ascontiguousarray(np.load(sorted(folder.glob("vectors-*.npy"))[0]),
                                       dtype=np.float32)
    if args.distinct:
        vectors = np.ascontiguousarray(np.unique(vectors, axis=0))
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    truth, _ = exact.search(queries, K)
    faiss.omp_set_num_threads(2)
    out = {"load_before": _uptime(), "vectors": len(vectors), "distinct": args.distinct,
           "queries": len(terms), "model": meta["model_path"], "runs": []}
    for m, ef_construction in SETTINGS:
        ann = faiss.IndexHNSWFlat(vectors.shape[1], m, faiss.METRIC_INNER_PRODUCT)
        ann.hnsw.efConstruction = ef_construction
        start = time.perf_counter()
        ann.add(vectors)
        built = time.perf_counter() - start
        for ef_search in EF_SEARCH:
            params = faiss.SearchParametersHNSW(efSearch=ef_search)
            start = time.perf_counter()
            found, _ = ann.search(queries, K, params=params)
            took = (time.perf_counter() - start) / len(terms) * 1000
            recall = float(np.mean(found >= truth[:, -1:] - 1e-5))
            out["runs"].append({"M": m, "efConstruction": ef_construction,
                                "efSearch": ef_search, "build_s": round(built, 1),
                                "recall_at_10": round(recall, 4), "ms_per_query": round(took, 2)})
            print(json.dumps(out["runs"][-1]), flush=True)
    out["load_after"] = _uptime()
    print(json.dumps(out, indent=1))


def as_built(searcher: DenseSearcher, queries: np.ndarray) -> dict:
    """Recall at ``K`` of ``searcher``'s approximate search against its exact scores."""
    found, took = 0, 0.0
    for query in queries:
        exact = np.sort(searcher.sentence_scores(query))[::-1][:K]
        start = time.perf_counter()
        got = searcher.scorer(query)(K)
        took += time.perf_counter() - start
        found += int(np.sum(got.scores >= exact[-1] - 1e-5))
    return {"load": _uptime(), "queries": len(queries),
            "segments": [{"rows": len(s.vectors), "nodes": s.nodes} for s in searcher.segments],
            "recall_at_10": round(found / (K * len(queries)), 4),
            "ms_per_query": round(took / len(queries) * 1000, 2)}


if __name__ == "__main__":
    main()
