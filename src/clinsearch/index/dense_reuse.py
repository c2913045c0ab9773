"""Vectors an index already holds for given sentence texts, so that an add encodes only text no
segment has embedded yet (radiology repeats sentences such as "No pneumothorax." across
reports, and an add would otherwise encode them again).

The previous generation's live sentences are streamed and matched by text (Arrow's ``is_in``),
then each match's rows (its windows) are read from the memory-mapped segment that holds it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsearch.index.component import Generation

INDEX_BITS = 20


def known_vectors(
    gen: Generation, segments: Callable[[], Iterable[Any]], texts: Collection[str]
) -> dict[str, np.ndarray]:
    """For each of ``texts`` that a live sentence of ``gen`` has, its window vectors (rows of
    the dense segments ``segments()`` opens: ``index.dense``'s, passed in by it), shape
    ``(windows, dim)``."""
    if not texts:
        return {}
    wanted = pa.array(list(texts), pa.string())
    where: dict[str, tuple[int, int]] = {}
    for batch in gen.sentence_batches(None, ["report_key", "index", "text"]):
        hits = batch.filter(pc.is_in(batch.column("text"), value_set=wanted))
        for key, index, text in zip(*(hits.column(i).to_pylist() for i in range(3)), strict=True):
            where.setdefault(text, (key, index))
        if len(where) == len(wanted):
            break
    if not where:
        return {}
    keys = np.fromiter((k for k, _ in where.values()), np.int64, len(where))
    indexes = np.fromiter((i for _, i in where.values()), np.int64, len(where))
    if indexes.max() >= 1 << INDEX_BITS:
        return {}  # codes would collide: encode instead (no report has a million sentences)
    want = _codes(keys, indexes)
    found: list[np.ndarray | None] = [None] * len(where)
    for segment in segments():
        starts = segment.starts
        ends = np.append(starts[1:], len(segment.vectors))
        code = _codes(segment.report_keys[starts], segment.sentence_indexes[starts])
        order = np.argsort(code, kind="stable")
        at = np.minimum(np.searchsorted(code[order], want), max(len(order) - 1, 0))
        hit = code[order][at] == want if len(order) else np.zeros(len(want), bool)
        for n in np.flatnonzero(hit):
            if found[n] is None:
                row = order[at[n]]
                found[n] = np.asarray(segment.vectors[starts[row]:ends[row]], np.float32)
    return {text: rows for text, rows in zip(where, found, strict=True) if rows is not None}


def _codes(keys: np.ndarray, indexes: np.ndarray) -> np.ndarray:
    """One integer per (report key, sentence index) pair (sentence indexes below 2^20)."""
    return (keys.astype(np.int64) << INDEX_BITS) | indexes.astype(np.int64)
