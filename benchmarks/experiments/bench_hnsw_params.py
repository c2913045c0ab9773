"""HNSW search cost: ``efSearch`` set on the shared index vs ``SearchParametersHNSW`` per call.

Run: ``python -m benchmarks.experiments.bench_hnsw_params [--vectors 20000]``

Random unit vectors (d=384, M=32, efConstruction 80, as the dense component builds), one FAISS
thread, 400 queries of k=64 with efSearch 128, both ways alternating; prints CPU and wall ms per
query and checks that both return the same neighbours.
"""

from __future__ import annotations

import argparse
import time

import faiss
import numpy as np

DIM, K, EF = 384, 64, 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=20_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    index = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 80
    index.add(_unit(rng, args.vectors))
    queries = _unit(rng, 400)
    faiss.omp_set_num_threads(1)

    def attribute(query: np.ndarray) -> np.ndarray:
        index.hnsw.efSearch = EF
        return index.search(query.reshape(1, -1), K)[1]

    def per_call(query: np.ndarray) -> np.ndarray:
        params = faiss.SearchParametersHNSW(efSearch=EF)
        return index.search(query.reshape(1, -1), K, params=params)[1]

    for name, search in (("attribute", attribute), ("per call", per_call)) * 2:
        start, cpu = time.perf_counter(), time.process_time()
        for query in queries:
            search(query)
        print(f"{name}: {(time.perf_counter() - start) * 1000 / len(queries):.3f} ms wall,"
              f" {(time.process_time() - cpu) * 1000 / len(queries):.3f} ms CPU per query")
    assert all((attribute(q) == per_call(q)).all() for q in queries)
    print("same neighbours for every query")


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` random unit vectors."""
    x = rng.standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


if __name__ == "__main__":
    main()
