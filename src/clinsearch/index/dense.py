"""The ``dense`` component: sentence embeddings plus an ANN structure, per generation.

Files in ``dense/``: ``vectors.npy`` (float32, unit rows), ``rows.parquet`` (the report key and
sentence index of each row, the same keys the lexical and findings parts use) and, above
``exact_limit`` vectors, ``hnsw.faiss`` (FAISS HNSW, inner product). Below the limit search is an
exact matrix product. A sentence longer than the encoder window has several rows (windows) and
scores as its best one. ``meta.json`` records the model path and fingerprint: adding with, or
searching with, a different model is an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clinsearch.errors import ClinsearchError
from clinsearch.index.component import Change, Generation

if TYPE_CHECKING:
    from clinsearch.index.integrity import CoreRows

NAME = "dense"
VECTORS_FILE = "vectors.npy"
ROWS_FILE = "rows.parquet"
ANN_FILE = "hnsw.faiss"
META_FILE = "meta.json"
VECTOR_SCHEMA = pa.schema(
    [("report_key", pa.int64()), ("index", pa.int64()), ("vector", pa.list_(pa.float32()))]
)
EXACT_LIMIT = 50_000  # below this many vectors an exact search is fast enough (~5 ms at 50k)
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
HNSW_EF_SEARCH = 128


@dataclass(frozen=True, slots=True)
class DenseMeta:
    """What the vectors were made with: checked before adding to or searching them."""

    model_path: str
    fingerprint: str
    dim: int
    vectors: int
    sentences: int
    ann: str  # "exact" or "hnsw"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (also the component's manifest entry)."""
        return {
            "model_path": self.model_path,
            "fingerprint": self.fingerprint,
            "dim": self.dim,
            "vectors": self.vectors,
            "sentences": self.sentences,
            "ann": self.ann,
        }

    @classmethod
    def read(cls, folder: Path) -> DenseMeta:
        """Read ``meta.json`` of a dense folder."""
        path = folder / META_FILE
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as exc:
            raise ClinsearchError(f"{path}: cannot read the dense index metadata ({exc})") from None


@dataclass(frozen=True, slots=True)
class SentenceScores:
    """Sentences best first: scores, report keys and sentence indexes; ``exhausted`` if all."""

    scores: np.ndarray  # float32
    report_keys: np.ndarray  # int64
    sentence_indexes: np.ndarray  # int64
    exhausted: bool


class DenseComponent:
    """Builds and updates the embeddings of every sentence with one sentence encoder."""

    name = NAME

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.model = options.get("model")  # a folder path, or None for the packaged MiniLM
        self.exact_limit = int(options.get("exact_limit", EXACT_LIMIT))
        self.batch_size = int(options.get("batch_size", 64))

    def build(self, gen: Generation) -> dict[str, Any]:
        """Embed every sentence of the generation."""
        encoder = self._encoder(None)
        keys, indexes, vectors = self._embed(gen, None, encoder)
        return self._write(gen.path / NAME, keys, indexes, vectors, encoder, prev_ann=None)

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """The previous vectors plus those of the added reports' sentences (same model)."""
        old = DenseSearcher(prev.path / NAME)
        encoder = self._encoder(old.meta)
        return self._append(old, gen, encoder, *self._embed(gen, change.report_keys, encoder))

    def build_from(self, gen: Generation, tables: Iterable[pa.Table]) -> dict[str, Any]:
        """Write vectors computed elsewhere (``VECTOR_SCHEMA`` rows in order) with this model."""
        encoder = self._encoder(None)
        keys, indexes, vectors = _from_tables(tables, encoder.dim)
        return self._write(gen.path / NAME, keys, indexes, vectors, encoder, prev_ann=None)

    def add_from(
        self, prev: Generation, gen: Generation, change: Change, tables: Iterable[pa.Table]
    ) -> dict[str, Any]:
        """The previous vectors plus the added reports' vectors computed elsewhere."""
        old = DenseSearcher(prev.path / NAME)
        encoder = self._encoder(old.meta)
        return self._append(old, gen, encoder, *_from_tables(tables, encoder.dim))

    def _append(
        self,
        old: DenseSearcher,
        gen: Generation,
        encoder: Any,
        keys: np.ndarray,
        indexes: np.ndarray,
        vectors: np.ndarray,
    ) -> dict[str, Any]:
        """Write the previous generation's vectors followed by new ones."""
        return self._write(
            gen.path / NAME,
            np.concatenate([old.report_keys, keys]),
            np.concatenate([old.sentence_indexes, indexes]),
            np.concatenate([old.vectors, vectors]),
            encoder,
            prev_ann=(old.ann, vectors),
        )

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """The previous vectors without those of the deleted reports (the ANN is rebuilt)."""
        old = DenseSearcher(prev.path / NAME)
        keep = ~np.isin(old.report_keys, np.asarray(change.report_keys, np.int64))
        folder = gen.path / NAME
        folder.mkdir(parents=True)
        keys, indexes = old.report_keys[keep], old.sentence_indexes[keep]
        meta = replace(
            old.meta, vectors=len(keys), sentences=_count_sentences(keys, indexes), ann="exact"
        )
        _save(folder, keys, indexes, old.vectors[keep])
        meta = _save_ann(folder, old.vectors[keep], meta, self.exact_limit, prev_ann=None)
        return _save_meta(folder, meta)

    def check(self, gen: Generation, core: CoreRows, entry: Mapping[str, Any]) -> list[str]:
        """Problems: vectors whose sentences are not exactly the sentences table's."""
        searcher = DenseSearcher(gen.path / NAME)
        starts = searcher._starts
        keys, indexes = searcher.report_keys[starts], searcher.sentence_indexes[starts]
        problems = []
        if not core.same_sentences(keys, indexes):
            problems.append(f"{gen.path / NAME}: vectors of {len(keys)} sentences do not match the"
                            f" {len(core.sentence_keys)} sentences of the sentences table")
        if entry.get("vectors") != len(searcher.vectors):
            problems.append(f"{gen.path / NAME}: {len(searcher.vectors)} vectors, the manifest"
                            f" says {entry.get('vectors')}")
        return problems

    def open(self, gen: Generation) -> DenseSearcher:
        """The query-time reader of the generation's vectors."""
        return DenseSearcher(gen.path / NAME)

    def _encoder(self, recorded: DenseMeta | None) -> Any:
        """The encoder for this component; with ``recorded``, it must be the same model."""
        from clinsearch.models.encoder import load_encoder

        encoder = load_encoder(self.model or (recorded.model_path if recorded else None))
        if recorded is not None:
            check_same_model(recorded, encoder)
        return encoder

    def _embed(
        self, gen: Generation, report_keys: Iterable[int] | None, encoder: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(report keys, sentence indexes, vectors) of the sentences of ``report_keys`` or all."""
        batches = list(
            gen.sentence_batches(
                None if report_keys is None else list(report_keys), ["report_key", "index", "text"]
            )
        )
        table = pa.Table.from_batches(batches) if batches else None
        return embed_sentences(table, encoder, self.batch_size, gen.progress)

    def _write(
        self,
        folder: Path,
        keys: np.ndarray,
        indexes: np.ndarray,
        vectors: np.ndarray,
        encoder: Any,
        prev_ann: tuple[Any, np.ndarray] | None,
    ) -> dict[str, Any]:
        """Save vectors, rows, the ANN structure (if over the limit) and the metadata."""
        folder.mkdir(parents=True)
        _save(folder, keys, indexes, vectors)
        meta = DenseMeta(
            model_path=str(encoder.path),
            fingerprint=encoder.fingerprint,
            dim=encoder.dim,
            vectors=len(vectors),
            sentences=_count_sentences(keys, indexes),
            ann="exact",
        )
        meta = _save_ann(folder, vectors, meta, self.exact_limit, prev_ann)
        return _save_meta(folder, meta)


class DenseSearcher:
    """Nearest sentences to a query vector, over one generation's dense folder."""

    def __init__(self, folder: Path) -> None:
        if not (folder / META_FILE).is_file():
            raise ClinsearchError(f"{folder}: dense index files are missing; rebuild with --dense")
        self.meta = DenseMeta.read(folder)
        self.vectors: np.ndarray = np.load(folder / VECTORS_FILE, mmap_mode="r")
        rows = pq.read_table(folder / ROWS_FILE)
        self.report_keys: np.ndarray = rows.column("report_key").to_numpy()
        self.sentence_indexes: np.ndarray = rows.column("index").to_numpy()
        if len(self.report_keys) != len(self.vectors):
            raise ClinsearchError(
                f"{folder}: {len(self.vectors)} vectors but {len(self.report_keys)} rows; rebuild"
            )
        # Rows of one sentence (its windows) are contiguous: starts of each sentence's run.
        change = np.flatnonzero(
            (np.diff(self.report_keys) != 0) | (np.diff(self.sentence_indexes) != 0)
        )
        self._starts = np.concatenate([[0], change + 1]) if len(self.vectors) else change
        self.ann = _load_ann(folder) if self.meta.ann == "hnsw" else None

    @property
    def num_sentences(self) -> int:
        """How many sentences have vectors."""
        return len(self._starts)

    def scorer(self, query: np.ndarray) -> Any:
        """A function ``limit -> SentenceScores`` for one unit query vector."""
        if self.ann is None:
            return _ExactScores(self, self.sentence_scores(query))
        return lambda limit: self._ann_search(query, limit)

    def sentence_scores(self, query: np.ndarray) -> np.ndarray:
        """The exact score of every sentence (its best window), in row-run order."""
        scores = np.asarray(self.vectors @ query.astype(np.float32), np.float32)
        if len(self._starts) == len(scores):
            return scores
        return np.maximum.reduceat(scores, self._starts) if len(scores) else scores

    def _ann_search(self, query: np.ndarray, limit: int) -> SentenceScores:
        """Approximate best sentences: ask HNSW for enough windows to fill ``limit`` sentences."""
        want = min(
            len(self.vectors), max(limit, 1) * max(1, len(self.vectors) // self.num_sentences)
        )
        self.ann.hnsw.efSearch = max(HNSW_EF_SEARCH, want)
        scores, rows = self.ann.search(query.reshape(1, -1).astype(np.float32), want)
        found = rows[0] >= 0
        scores, rows = scores[0][found], rows[0][found]
        pairs = np.stack([self.report_keys[rows], self.sentence_indexes[rows]], axis=1)
        _, first = np.unique(pairs, axis=0, return_index=True)  # best window per sentence
        first = np.sort(first)[:limit]
        return SentenceScores(
            scores[first].astype(np.float32),
            self.report_keys[rows[first]],
            self.sentence_indexes[rows[first]],
            exhausted=want >= len(self.vectors),
        )


class _ExactScores:
    """Exact sentence scores of one query, ranked lazily as more are asked for."""

    def __init__(self, searcher: DenseSearcher, scores: np.ndarray) -> None:
        self.searcher = searcher
        self.scores = scores

    def __call__(self, limit: int) -> SentenceScores:
        """The ``limit`` best sentences (ties broken by row order)."""
        n = len(self.scores)
        limit = min(limit, n)
        part = np.argpartition(-self.scores, limit - 1)[:limit] if limit < n else np.arange(n)
        order = part[np.lexsort((part, -self.scores[part]))]
        rows = self.searcher._starts[order]
        return SentenceScores(
            self.scores[order],
            self.searcher.report_keys[rows],
            self.searcher.sentence_indexes[rows],
            exhausted=limit >= n,
        )


def embed_sentences(
    table: pa.Table | None, encoder: Any, batch_size: int, progress: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(report keys, sentence indexes, vectors) of sentence rows (report_key, index, text); a
    sentence longer than the encoder window gets one row per window, in order."""
    if table is None or table.num_rows == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, np.empty((0, encoder.dim), np.float32)
    encoded = encoder.encode_passages(
        table.column("text").to_pylist(), batch_size=batch_size, progress=progress
    )
    keys = table.column("report_key").to_numpy()[encoded.owner]
    indexes = table.column("index").to_numpy()[encoded.owner]
    return keys.astype(np.int64), indexes.astype(np.int64), encoded.vectors


def vectors_table(keys: np.ndarray, indexes: np.ndarray, vectors: np.ndarray) -> pa.Table:
    """Vectors as a table (``VECTOR_SCHEMA``), to compute them in one place and store in another."""
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    flat = pa.array(np.ascontiguousarray(vectors, np.float32).reshape(-1), pa.float32())
    offsets = pa.array(np.arange(len(keys) + 1, dtype=np.int32) * dim, pa.int32())
    return pa.table(
        [pa.array(keys, pa.int64()), pa.array(indexes, pa.int64()),
         pa.ListArray.from_arrays(offsets, flat)],
        schema=VECTOR_SCHEMA,
    )


def _from_tables(tables: Iterable[pa.Table], dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(report keys, sentence indexes, vectors) of ``vectors_table`` parts, concatenated."""
    parts = [t for t in tables if t.num_rows]
    if not parts:
        empty = np.empty(0, np.int64)
        return empty, empty, np.empty((0, dim), np.float32)
    table = pa.concat_tables([t.combine_chunks() for t in parts]).combine_chunks()
    vectors = table.column("vector").chunk(0).flatten().to_numpy().reshape(-1, dim)
    return (
        table.column("report_key").to_numpy().astype(np.int64),
        table.column("index").to_numpy().astype(np.int64),
        vectors.astype(np.float32),
    )


def check_same_model(recorded: DenseMeta, encoder: Any) -> None:
    """Refuse to mix vectors of two models: the fingerprints must match."""
    if encoder.fingerprint != recorded.fingerprint:
        raise ClinsearchError(
            f"the dense index was built with model {recorded.model_path} (fingerprint "
            f"{recorded.fingerprint}), not {encoder.path} (fingerprint {encoder.fingerprint}); "
            "use the same model, or rebuild the index with --dense --model PATH"
        )


def _count_sentences(keys: np.ndarray, indexes: np.ndarray) -> int:
    """How many distinct (report key, sentence index) pairs there are."""
    if len(keys) == 0:
        return 0
    return len(np.unique(np.stack([keys, indexes], axis=1), axis=0))


def _save(folder: Path, keys: np.ndarray, indexes: np.ndarray, vectors: np.ndarray) -> None:
    """Write the vectors and their (report key, sentence index) rows."""
    np.save(folder / VECTORS_FILE, np.ascontiguousarray(vectors, dtype=np.float32))
    table = pa.table(
        {"report_key": pa.array(keys, pa.int64()), "index": pa.array(indexes, pa.int64())}
    )
    pq.write_table(table, folder / ROWS_FILE)


def _save_ann(
    folder: Path,
    vectors: np.ndarray,
    meta: DenseMeta,
    exact_limit: int,
    prev_ann: tuple[Any, np.ndarray] | None,
) -> DenseMeta:
    """Write an HNSW index when there are more than ``exact_limit`` vectors.

    With ``prev_ann`` (the previous HNSW and the appended vectors) the new vectors are added to
    a copy of it; otherwise it is built from all vectors.
    """
    import faiss

    if len(vectors) <= exact_limit:
        return meta
    previous, appended = prev_ann if prev_ann is not None else (None, None)
    if previous is not None and appended is not None:
        ann = faiss.clone_index(previous)
        ann.add(np.ascontiguousarray(appended, dtype=np.float32))
    else:
        ann = faiss.IndexHNSWFlat(meta.dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        ann.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        ann.add(np.ascontiguousarray(vectors, dtype=np.float32))
    faiss.write_index(ann, str(folder / ANN_FILE))
    return replace(meta, ann="hnsw")


def _save_meta(folder: Path, meta: DenseMeta) -> dict[str, Any]:
    """Write ``meta.json`` and return the manifest entry."""
    (folder / META_FILE).write_text(json.dumps(meta.to_dict(), indent=2) + "\n", encoding="utf-8")
    return meta.to_dict()


def _load_ann(folder: Path) -> Any:
    """Read the HNSW index of a dense folder."""
    import faiss

    return faiss.read_index(str(folder / ANN_FILE))
