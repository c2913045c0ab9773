"""The nodes of a dense segment's HNSW graph: one per distinct vector, not one per row.

A radiology archive repeats its sentences ("No acute cardiopulmonary abnormality."), so a graph
over every row spends its build and its neighbour lists on copies of one vector; a graph over
each distinct vector once builds in about half the time and finds more of the true nearest
(benchmarks/results/static.md). The segment keeps, for each node, the rows with its vector.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_CHUNK = 16_384  # rows hashed or compared at a time (memory stays flat on a memory map)


@dataclass(frozen=True, slots=True)
class GraphNodes:
    """Rows grouped by vector: node ``n`` holds rows ``rows[starts[n]:starts[n + 1]]`` (in row
    order) and was first seen at row ``first[n]``; nodes are numbered by their first row."""

    first: np.ndarray  # int64, one per node, ascending
    rows: np.ndarray  # int64, every row once, grouped by node
    starts: np.ndarray  # int64, nodes + 1 offsets into ``rows``

    @property
    def count(self) -> int:
        """How many nodes (distinct vectors) there are."""
        return len(self.first)


def graph_nodes(vectors: np.ndarray) -> GraphNodes:
    """Group the rows of ``vectors`` (float32, memory-mapped or not) by equal bits: a 64-bit
    hash of each row groups them, then every row is compared with its group's first row, so a
    hash collision only costs a node of its own, never a wrong match."""
    count, dim = vectors.shape
    weights = np.random.default_rng(0).integers(1, 2**63, size=dim, dtype=np.uint64) | 1
    hashes = np.empty(count, np.uint64)
    for start in range(0, count, _CHUNK):
        words = np.ascontiguousarray(vectors[start:start + _CHUNK], np.float32).view(np.uint32)
        hashes[start:start + _CHUNK] = (words.astype(np.uint64) * weights).sum(axis=1)
    _, first, node = np.unique(hashes, return_index=True, return_inverse=True)
    node = node.reshape(-1).astype(np.int64)
    first = first.astype(np.int64)
    alone = []  # rows whose hash matched a different vector's
    for start in range(0, count, _CHUNK):
        chunk = np.asarray(vectors[start:start + _CHUNK])
        same = (chunk == np.asarray(vectors[first[node[start:start + _CHUNK]]])).all(axis=1)
        alone.extend((start + np.flatnonzero(~same)).tolist())
    if alone:
        node[alone] = len(first) + np.arange(len(alone))
        first = np.concatenate([first, np.asarray(alone, np.int64)])
    by_first = np.argsort(first, kind="stable")
    renumber = np.empty_like(by_first)
    renumber[by_first] = np.arange(len(by_first))
    node = renumber[node]
    rows = np.argsort(node, kind="stable").astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(np.bincount(node, minlength=len(first)))])
    return GraphNodes(first[by_first], rows, starts.astype(np.int64))
