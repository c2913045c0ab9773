"""The ``dense`` component: sentence embeddings plus an ANN structure, in segments.

A dense folder holds one or more immutable segments, each ``vectors-NNNNNN.npy`` (float32, unit
rows), ``rows-NNNNNN.parquet`` (the report key and sentence index of each row, the keys the
bm25 and findings parts use) and, above ``exact_limit`` vectors, ``hnsw-NNNNNN.faiss`` (FAISS
HNSW, inner product) over each distinct vector once, with ``node-rows``/``node-starts`` naming
the rows of each (``dense_nodes``). ``meta.json`` lists the segments and records the model path and
fingerprint: adding with, or searching with, a different model is an error.

A build or an ``add`` writes its sentences' vectors as segments of about ``segment_vectors``
rows at most (``SEGMENT_VECTORS``), one embedded and graphed at a time, so that its memory is one
segment's, not the corpus's; ``add`` hard-links the previous segments; ``delete`` only links
(readers leave out the reports in the generation's deletion marks); ``merge`` rewrites the
segments holding deleted rows without them, packed into segments of at most ``segment_vectors``
rows. Search is exact over all segments (memory-mapped) or, where
a segment has an HNSW, approximate in it, the segments' best merged. A sentence longer than the
encoder window has several rows (windows) and scores as its best one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clinsearch.errors import ClinsearchError
from clinsearch.index.component import Change, Generation
from clinsearch.index.dense_nodes import graph_nodes
from clinsearch.index.links import link_file, link_tree
from clinsearch.parallel import available_cores

if TYPE_CHECKING:
    from clinsearch.index.component import CoreRows

NAME = "dense"
META_FILE = "meta.json"
VECTOR_SCHEMA = pa.schema(
    [("report_key", pa.int64()), ("index", pa.int64()), ("vector", pa.list_(pa.float32()))]
)
EXACT_LIMIT = 50_000  # below this many vectors an exact search is fast enough
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 80
# chosen by recall against the exact scores at 100,000 reports, whose repeated sentences crowd
# the graph's neighbour lists (benchmarks/performance/bench_hnsw_recall.py, results/static.md)
HNSW_EF_SEARCH = 512
_CHUNK = 65_536  # vectors copied or added to an HNSW at a time
Known = Callable[[list[str]], dict[str, np.ndarray]]
"""``known(texts)``: the window vectors, shape (windows, dim), of the texts already embedded."""
# Most rows a build, an add or a merge writes into one segment: its vectors and graph are what
# the writer holds in memory at once (500,000 rows of 384 floats: 0.77 GB, the graph as much).
SEGMENT_VECTORS = 500_000
MAX_SEGMENTS = 8  # above this many segments a merge packs the ones below SEGMENT_VECTORS rows


@dataclass(frozen=True, slots=True)
class DenseSegment:
    """One immutable segment of vectors: its number, how many rows it stores, its search."""

    number: int
    vectors: int
    ann: str  # "exact" or "hnsw"
    nodes: int = 0  # distinct vectors its HNSW holds; 0: one node per row (as first written)

    @property
    def vectors_file(self) -> str:
        """The float32 matrix, one unit row per sentence window."""
        return f"vectors-{self.number:06d}.npy"

    @property
    def rows_file(self) -> str:
        """The (report key, sentence index) of each row."""
        return f"rows-{self.number:06d}.parquet"

    @property
    def ann_file(self) -> str:
        """The HNSW over the segment's distinct vectors (when ``ann`` is ``hnsw``)."""
        return f"hnsw-{self.number:06d}.faiss"

    @property
    def node_rows_file(self) -> str:
        """The rows of each graph node, node after node (``dense_nodes.GraphNodes.rows``)."""
        return f"node-rows-{self.number:06d}.npy"

    @property
    def node_starts_file(self) -> str:
        """Where each graph node's rows start in ``node_rows_file``."""
        return f"node-starts-{self.number:06d}.npy"

    @property
    def files(self) -> tuple[str, ...]:
        """The names of the segment's files."""
        ann = (self.ann_file,) if self.ann == "hnsw" else ()
        nodes = (self.node_rows_file, self.node_starts_file) if self.nodes else ()
        return (self.vectors_file, self.rows_file, *ann, *nodes)


@dataclass(frozen=True, slots=True)
class DenseMeta:
    """What the vectors were made with (checked before adding to or searching them), the
    segments, and the live (not deleted) vectors and sentences."""

    model_path: str
    fingerprint: str
    dim: int
    vectors: int
    sentences: int
    ann: str  # "hnsw" if a segment has an HNSW, else "exact"
    segments: tuple[DenseSegment, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (also the component's manifest entry)."""
        return {
            "model_path": self.model_path,
            "fingerprint": self.fingerprint,
            "dim": self.dim,
            "vectors": self.vectors,
            "sentences": self.sentences,
            "ann": self.ann,
            "segments": [asdict(segment) for segment in self.segments],
        }

    @classmethod
    def read(cls, folder: Path) -> DenseMeta:
        """Read ``meta.json`` of a dense folder."""
        path = folder / META_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            segments = tuple(DenseSegment(**segment) for segment in data.pop("segments"))
            return cls(**data, segments=segments)
        except (OSError, ValueError, TypeError, KeyError) as exc:
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
        self.segment_vectors = int(options.get("segment_vectors", SEGMENT_VECTORS))
        self.batch_size = options.get("batch_size")  # None: the device's (models.device)

    def build(self, gen: Generation) -> dict[str, Any]:
        """Embed every sentence of the generation, a segment at a time."""
        encoder = self._encoder(None)
        return self._write_new(gen, _identity(encoder), (), self._embed(gen, None, encoder))

    def build_from(self, gen: Generation, tables: Iterable[pa.Table]) -> dict[str, Any]:
        """Write vectors computed elsewhere (``VECTOR_SCHEMA`` rows in order) with this model."""
        encoder = self._encoder(None)
        parts = (_from_tables(group, encoder.dim)
                 for group in _grouped(tables, self.segment_vectors))
        return self._write_new(gen, _identity(encoder), (), parts)

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Link the previous segments and write the added sentences' vectors as a new one; a
        text some live sentence already has takes its vectors instead of being encoded again."""
        from clinsearch.index.dense_reuse import known_vectors

        old = DenseMeta.read(prev.path / NAME)
        encoder = self._encoder(old)
        self._link(prev, gen)
        vectors = self._embed(
            gen, change.report_keys, encoder,
            lambda texts: known_vectors(
                prev, lambda: DenseSearcher(prev.path / NAME, prev.deleted_keys()).segments,
                texts),
        )
        return self._write_new(gen, _identity(encoder), old.segments, vectors)

    def add_from(
        self, prev: Generation, gen: Generation, change: Change, tables: Iterable[pa.Table]
    ) -> dict[str, Any]:
        """``add`` with the added reports' vectors computed elsewhere."""
        old = DenseMeta.read(prev.path / NAME)
        encoder = self._encoder(old)
        self._link(prev, gen)
        parts = (_from_tables(group, encoder.dim)
                 for group in _grouped(tables, self.segment_vectors))
        return self._write_new(gen, _identity(encoder), old.segments, parts)

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Link the previous segments: readers leave out the generation's deleted reports."""
        old = DenseMeta.read(prev.path / NAME)
        self._link(prev, gen)
        return _save_meta(gen, old, old.segments)

    def merge(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Rewrite every previous segment that holds rows of a deleted report (in either
        generation's marks or in ``change``) without those rows, so that no deleted vector is
        left (erasure); when there are more than ``MAX_SEGMENTS`` segments, the small ones are
        rewritten too. Rewritten segments are packed into new ones of at most
        ``segment_vectors`` rows (``merge_groups``); the other segments are linked."""
        deleted = np.union1d(
            np.union1d(prev.deleted_keys(), gen.deleted_keys()),
            np.asarray(change.report_keys, np.int64),
        )
        source = DenseSearcher(prev.path / NAME, deleted)
        metas, parts = source.meta.segments, source.segments
        live = [int(p.row_live.sum()) for p in parts]
        groups = merge_groups(live, [not p.row_live.all() for p in parts],
                              len(metas) > MAX_SEGMENTS, self.segment_vectors)
        rewritten = {n for group in groups for n in group}
        folder = gen.path / NAME
        folder.mkdir(parents=True)
        kept = []
        for n, meta in enumerate(metas):
            if n not in rewritten:
                for name in meta.files:
                    link_file(prev.path / NAME / name, folder / name)
                kept.append(meta)
        number = max((s.number for s in metas), default=0)
        for group in groups:  # a group left with no live rows is dropped
            if sum(live[n] for n in group):
                number += 1
                kept.append(self._write_merged(folder, number, [parts[n] for n in group],
                                               source.meta.dim))
        return _save_meta(gen, source.meta, self._or_empty(folder, tuple(kept), metas,
                                                           source.meta.dim))

    def check(self, gen: Generation, core: CoreRows, entry: Mapping[str, Any]) -> list[str]:
        """Problems: live vectors whose sentences are not exactly the sentences table's, or
        counts that differ from the manifest's."""
        searcher = self.open(gen)
        problems = []
        folder = gen.path / NAME
        if not core.same_sentences(searcher.report_keys, searcher.sentence_indexes):
            problems.append(f"{folder}: vectors of {searcher.num_sentences} sentences do not"
                            f" match the {len(core.sentence_keys)} sentences of the sentences"
                            " table")
        live = sum(int(segment.row_live.sum()) for segment in searcher.segments)
        if entry.get("vectors") != live:
            problems.append(f"{folder}: {live} live vectors, the manifest says"
                            f" {entry.get('vectors')}")
        return problems

    def open(self, gen: Generation) -> DenseSearcher:
        """The query-time reader of the generation's vectors, without its deleted reports."""
        return DenseSearcher(gen.path / NAME, gen.deleted_keys())

    def _encoder(self, recorded: DenseMeta | None) -> Any:
        """The encoder for this component; with ``recorded``, it must be the same model, known
        by its fingerprint and loaded only when a text needs encoding."""
        from clinsearch.models.encoder import DeferredEncoder, load_encoder

        if recorded is None:
            return load_encoder(self.model)
        encoder = DeferredEncoder(self.model or recorded.model_path, recorded.dim)
        check_same_model(recorded, encoder)
        return encoder

    def _embed(
        self, gen: Generation, report_keys: Iterable[int] | None, encoder: Any,
        known: Known | None = None,
    ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(report keys, sentence indexes, vectors) of the sentences of ``report_keys`` or all,
        about ``segment_vectors`` sentences at a time (``known``: vectors already held for some
        texts, see ``embed_sentences``)."""
        batches = gen.sentence_batches(
            None if report_keys is None else list(report_keys), ["report_key", "index", "text"]
        )
        for group in _grouped(batches, self.segment_vectors):
            yield embed_sentences(pa.Table.from_batches(group), encoder, self.batch_size,
                                  gen.progress, known)

    def _link(self, prev: Generation, gen: Generation) -> None:
        """Hard-link the previous generation's segments (``meta.json`` is written anew)."""
        link_tree(prev.path / NAME, gen.path / NAME, skip=frozenset({META_FILE}))

    def _write_new(
        self,
        gen: Generation,
        identity: DenseMeta,
        segments: tuple[DenseSegment, ...],
        parts: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]],
    ) -> dict[str, Any]:
        """Write each part's (report keys, sentence indexes, vectors) as a segment after
        ``segments``, one part in memory at a time (an empty segment when there are none at
        all), then the meta."""
        folder = gen.path / NAME
        folder.mkdir(parents=True, exist_ok=True)
        for keys, indexes, vectors in parts:
            if len(vectors):
                segments = (*segments, self._write_segment(folder, segments, keys, indexes,
                                                           vectors))
        return _save_meta(gen, identity, self._or_empty(folder, segments, segments, identity.dim))

    def _or_empty(
        self, folder: Path, segments: tuple[DenseSegment, ...],
        written: tuple[DenseSegment, ...], dim: int,
    ) -> tuple[DenseSegment, ...]:
        """``segments``, or when there are none an empty segment numbered after ``written``
        (a dense folder always holds at least one)."""
        if segments:
            return segments
        empty = np.empty(0, np.int64)
        return (self._write_segment(folder, written, empty, empty,
                                    np.empty((0, dim), np.float32)),)

    def _write_segment(
        self, folder: Path, segments: tuple[DenseSegment, ...], keys: np.ndarray,
        indexes: np.ndarray, vectors: np.ndarray,
    ) -> DenseSegment:
        """Write ``vectors`` as the segment after ``segments``."""
        number = max((s.number for s in segments), default=0) + 1
        segment = DenseSegment(number, len(vectors), "exact")
        stored = np.ascontiguousarray(vectors, np.float32)
        np.save(folder / segment.vectors_file, stored)
        return self._finish_segment(folder, segment, keys, indexes, stored)

    def _write_merged(
        self, folder: Path, number: int, parts: list[_Segment], dim: int
    ) -> DenseSegment:
        """Write the live rows of ``parts`` as segment ``number``, copying vectors a chunk at a
        time into a memory-mapped file (memory stays flat however large the segments)."""
        segment = DenseSegment(number, sum(int(p.row_live.sum()) for p in parts), "exact")
        merged = np.lib.format.open_memmap(
            folder / segment.vectors_file, "w+", np.float32, (segment.vectors, dim)
        )
        at = 0
        for part in parts:
            rows = np.flatnonzero(part.row_live)
            for start in range(0, len(rows), _CHUNK):
                chunk = part.vectors[rows[start:start + _CHUNK]]
                merged[at:at + len(chunk)] = chunk
                at += len(chunk)
        merged.flush()
        del merged
        keys = _concat([p.report_keys[p.row_live] for p in parts])
        indexes = _concat([p.sentence_indexes[p.row_live] for p in parts])
        return self._finish_segment(folder, segment, keys, indexes)

    def _finish_segment(
        self, folder: Path, segment: DenseSegment, keys: np.ndarray, indexes: np.ndarray,
        held: np.ndarray | None = None,
    ) -> DenseSegment:
        """Write a segment's rows and, above ``exact_limit`` vectors, its HNSW over each distinct
        vector once (a chunk at a time) with each one's rows. The graph is built from the
        vectors ``held`` in memory when the caller has them (mapping the saved file as well
        would add its pages to the process's memory), else from the saved file."""
        table = pa.table(
            {"report_key": pa.array(keys, pa.int64()), "index": pa.array(indexes, pa.int64())}
        )
        pq.write_table(table, folder / segment.rows_file)
        if segment.vectors <= self.exact_limit:
            return segment
        import faiss

        vectors = np.load(folder / segment.vectors_file, mmap_mode="r") if held is None else held
        nodes = graph_nodes(vectors)
        ann = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
        ann.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
        for start in range(0, nodes.count, _CHUNK):
            ann.add(np.ascontiguousarray(vectors[nodes.first[start:start + _CHUNK]], np.float32))
        segment = replace(segment, ann="hnsw", nodes=nodes.count)
        faiss.write_index(ann, str(folder / segment.ann_file))
        np.save(folder / segment.node_rows_file, nodes.rows)
        np.save(folder / segment.node_starts_file, nodes.starts)
        return segment


class DenseSearcher:
    """Nearest sentences to a query vector over one generation's dense segments, leaving out
    the ``deleted`` reports.

    ``report_keys`` and ``sentence_indexes`` name the live sentences, segment after segment.
    """

    def __init__(self, folder: Path, deleted: np.ndarray | None = None) -> None:
        if not (folder / META_FILE).is_file():
            raise ClinsearchError(
                f"{folder}: dense index files are missing; rebuild it with the dense component"
            )
        self.meta = DenseMeta.read(folder)
        gone = np.empty(0, np.int64) if deleted is None else deleted
        self.segments = [_Segment(folder, segment, gone) for segment in self.meta.segments]
        self.report_keys: np.ndarray = _concat([s.live_keys for s in self.segments])
        self.sentence_indexes: np.ndarray = _concat([s.live_indexes for s in self.segments])

    @property
    def num_sentences(self) -> int:
        """How many live sentences have vectors."""
        return len(self.report_keys)

    def scorer(self, query: np.ndarray) -> Callable[[int], SentenceScores]:
        """A function ``limit -> SentenceScores`` for one unit query vector."""
        if all(segment.ann_path is None for segment in self.segments):
            return _ExactScores(self, self.sentence_scores(query))
        return lambda limit: self._merged_search(query, limit)

    def sentence_scores(self, query: np.ndarray) -> np.ndarray:
        """The exact score of every live sentence (its best window), in ``report_keys`` order."""
        vector = query.astype(np.float32)
        return _concat([s.sentence_scores(vector) for s in self.segments], np.float32)

    def _merged_search(self, query: np.ndarray, limit: int) -> SentenceScores:
        """The best sentences of each segment (approximate where it has an HNSW, else exact),
        merged by (score desc, report key, sentence index)."""
        vector = query.astype(np.float32)
        if len(self.segments) > 1:
            parts = list(_search_pool(os.getpid()).map(lambda s: s.nearest(vector, limit),
                                                       self.segments))
        else:
            parts = [s.nearest(vector, limit) for s in self.segments]
        scores = _concat([p.scores for p in parts], np.float32)
        keys = _concat([p.report_keys for p in parts])
        indexes = _concat([p.sentence_indexes for p in parts])
        order = np.lexsort((indexes, keys, -scores))[:limit]
        return SentenceScores(
            scores[order], keys[order], indexes[order], all(p.exhausted for p in parts)
        )


class _Segment:
    """One segment opened for search: memory-mapped vectors, rows, live flags, optional HNSW."""

    def __init__(self, folder: Path, meta: DenseSegment, deleted: np.ndarray) -> None:
        self.vectors: np.ndarray = np.load(folder / meta.vectors_file, mmap_mode="r")
        rows = pq.read_table(folder / meta.rows_file)
        self.report_keys: np.ndarray = rows.column("report_key").to_numpy()
        self.sentence_indexes: np.ndarray = rows.column("index").to_numpy()
        if not len(self.report_keys) == len(self.vectors) == meta.vectors:
            raise ClinsearchError(
                f"{folder / meta.vectors_file}: {len(self.vectors)} vectors,"
                f" {len(self.report_keys)} rows, the metadata says {meta.vectors}; rebuild"
            )
        # Rows of one sentence (its windows) are contiguous: starts of each sentence's run.
        change = np.flatnonzero(
            (np.diff(self.report_keys) != 0) | (np.diff(self.sentence_indexes) != 0)
        )
        self.starts = np.concatenate([[0], change + 1]) if len(self.vectors) else change
        self.row_live: np.ndarray = ~np.isin(self.report_keys, deleted)
        self.live: np.ndarray = self.row_live[self.starts]  # per sentence
        self.live_keys = self.report_keys[self.starts][self.live]
        self.live_indexes = self.sentence_indexes[self.starts][self.live]
        self.ann_path = folder / meta.ann_file if meta.ann == "hnsw" else None
        self.nodes = meta.nodes or len(self.vectors)
        self.node_rows: np.ndarray | None = None  # None: node n is row n
        self.node_starts: np.ndarray | None = None
        if meta.nodes:
            self.node_rows = np.load(folder / meta.node_rows_file, mmap_mode="r")
            self.node_starts = np.load(folder / meta.node_starts_file, mmap_mode="r")

    @cached_property
    def ann(self) -> Any:
        """The segment's HNSW index (None: exact only), read on the first approximate search,
        not at open: a merge or check that only needs the rows never loads it."""
        return None if self.ann_path is None else _load_ann(self.ann_path)

    def sentence_scores(self, query: np.ndarray) -> np.ndarray:
        """The exact score of each live sentence of the segment (its best window). Each row's
        product is computed alike (``einsum``): BLAS's matrix-vector kernels can round a row
        by where it lies in a block, so repeated sentences scored apart and ties broke by
        position instead of report key (seen with OpenBLAS on AVX-512)."""
        scores = np.einsum("ij,j->i", self.vectors, query).astype(np.float32, copy=False)
        if len(self.starts) != len(scores) and len(scores):
            scores = np.maximum.reduceat(scores, self.starts)
        return scores[self.live]

    def nearest(self, query: np.ndarray, limit: int) -> SentenceScores:
        """The segment's ``limit`` best live sentences: exact, or from its HNSW, asking it for
        more windows until enough live sentences are found."""
        if self.ann is None:
            exact = self.sentence_scores(query)
            ranked = _top(exact, self.live_keys, self.live_indexes, limit)
            return SentenceScores(
                exact[ranked], self.live_keys[ranked],
                self.live_indexes[ranked], exhausted=limit >= len(self.live_keys),
            )
        windows = max(1, len(self.vectors) // max(1, len(self.starts)))
        want = min(self.nodes, max(limit, 1) * windows)
        while True:
            found_scores, found_nodes = self.ann.search(
                query.reshape(1, -1), want, params=_hnsw_params(max(HNSW_EF_SEARCH, want))
            )
            keep = found_nodes[0] >= 0
            best = self._best_sentences(found_scores[0][keep], found_nodes[0][keep], limit)
            if len(best.scores) >= limit or want >= self.nodes:
                break
            want = min(self.nodes, 2 * want)
        return replace(best, exhausted=want >= self.nodes)

    def _best_sentences(self, scores: np.ndarray, nodes: np.ndarray, limit: int) -> SentenceScores:
        """The first ``limit`` live sentences of the graph ``nodes`` found, best first: a node
        stands for its rows in row order, and a sentence scores as its best window."""
        seen: set[int] = set()
        picked: list[int] = []  # sentence numbers: positions in ``starts``
        picked_scores: list[float] = []
        for score, node in zip(scores.tolist(), nodes.tolist(), strict=True):
            rows = self._rows_of(node)
            rows = rows[self.row_live[rows]]
            at = 0
            while at < len(rows) and len(picked) < limit:
                chunk = rows[at:at + limit - len(picked)]
                at += len(chunk)
                for sentence in (np.searchsorted(self.starts, chunk, "right") - 1).tolist():
                    if sentence not in seen:
                        seen.add(sentence)
                        picked.append(sentence)
                        picked_scores.append(score)
            if len(picked) >= limit:
                break
        first_rows = self.starts[np.asarray(picked, np.int64)]
        return SentenceScores(np.asarray(picked_scores, np.float32), self.report_keys[first_rows],
                              self.sentence_indexes[first_rows], exhausted=False)

    def _rows_of(self, node: int) -> np.ndarray:
        """The rows whose vector is graph node ``node``."""
        if self.node_rows is None or self.node_starts is None:
            return np.asarray([node], np.int64)
        return np.asarray(self.node_rows[self.node_starts[node]:self.node_starts[node + 1]])


class _ExactScores:
    """Exact sentence scores of one query, ranked lazily as more are asked for."""

    def __init__(self, searcher: DenseSearcher, scores: np.ndarray) -> None:
        self.searcher = searcher
        self.scores = scores

    def __call__(self, limit: int) -> SentenceScores:
        """The ``limit`` best sentences (ties broken by report key, then sentence index)."""
        searcher = self.searcher
        order = _top(self.scores, searcher.report_keys, searcher.sentence_indexes, limit)
        return SentenceScores(
            self.scores[order],
            self.searcher.report_keys[order],
            self.searcher.sentence_indexes[order],
            exhausted=limit >= len(self.scores),
        )


def embed_sentences(
    table: pa.Table | None, encoder: Any, batch_size: int | None, progress: bool = False,
    known: Known | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(report keys, sentence indexes, vectors) of sentence rows (report_key, index, text); a
    sentence longer than the encoder window gets one row per window, in order. Each distinct
    text is encoded once; ``known(texts)`` gives the window vectors of texts already embedded
    with this encoder (an add: the index's other segments), which are not encoded again."""
    if table is None or table.num_rows == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, np.empty((0, encoder.dim), np.float32)
    texts = table.column("text").to_pylist()
    if known is None:
        encoded = encoder.encode_passages(texts, batch_size=batch_size, progress=progress)
        owner, vectors = encoded.owner, encoded.vectors
    else:
        owner, vectors = _encode_unknown(texts, encoder, batch_size, progress, known)
    keys = table.column("report_key").to_numpy()[owner]
    indexes = table.column("index").to_numpy()[owner]
    return keys.astype(np.int64), indexes.astype(np.int64), vectors


def _encode_unknown(
    texts: list[str], encoder: Any, batch_size: int | None, progress: bool, known: Known
) -> tuple[np.ndarray, np.ndarray]:
    """(owner, vectors) of ``texts`` as ``encode_passages`` gives them, encoding only the
    distinct texts ``known`` has no vectors for."""
    distinct = list(dict.fromkeys(texts))
    windows = known(distinct)
    new = [t for t in distinct if t not in windows]
    if new:
        encoded = encoder.encode_passages(new, batch_size=batch_size, progress=progress)
        cuts = np.flatnonzero(np.diff(encoded.owner)) + 1  # owners ascend, one run per text
        windows.update(zip(new, np.split(encoded.vectors, cuts), strict=True))
    counts = np.fromiter((len(windows[t]) for t in texts), np.int64, len(texts))
    owner = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
    return owner, np.concatenate([windows[t] for t in texts]).astype(np.float32, copy=False)


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


def merge_groups(live: Sequence[int], dirty: Sequence[bool], crowded: bool, limit: int
                 ) -> list[list[int]]:
    """Which segments (by position) a merge rewrites, grouped into the new segments: those with
    deleted rows (``dirty``), and when ``crowded`` those with fewer than ``limit`` live rows,
    packed in order while a group's live rows stay within ``limit``. A segment alone in its
    group is rewritten only if it has deleted rows."""
    groups: list[list[int]] = []
    group: list[int] = []
    rows = 0
    for n, (count, has_deleted) in enumerate(zip(live, dirty, strict=True)):
        if not (has_deleted or (crowded and count < limit)):
            continue
        if group and rows + count > limit:
            groups.append(group)
            group, rows = [], 0
        group.append(n)
        rows += count
    if group:
        groups.append(group)
    return [g for g in groups if len(g) > 1 or dirty[g[0]]]


_Rows = TypeVar("_Rows", pa.Table, pa.RecordBatch)


def _grouped(tables: Iterable[_Rows], limit: int) -> Iterator[list[_Rows]]:
    """Consecutive non-empty ``tables`` (or batches) gathered until they hold ``limit`` rows or
    more (one is never split, so a sentence's windows stay in one segment)."""
    group: list[_Rows] = []
    rows = 0
    for table in tables:
        if not table.num_rows:
            continue
        group.append(table)
        rows += table.num_rows
        if rows >= limit:
            yield group
            group, rows = [], 0
    if group:
        yield group


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
            "use the same model, or rebuild the index with that model for the dense component"
        )


def _count_sentences(keys: np.ndarray, indexes: np.ndarray) -> int:
    """How many distinct (report key, sentence index) pairs there are."""
    if len(keys) == 0:
        return 0
    return len(np.unique(np.stack([keys, indexes], axis=1), axis=0))


def _identity(encoder: Any) -> DenseMeta:
    """The model part of the metadata (no segments yet) for an encoder."""
    return DenseMeta(str(encoder.path), encoder.fingerprint, encoder.dim, 0, 0, "exact")


def _save_meta(
    gen: Generation, identity: DenseMeta, segments: tuple[DenseSegment, ...]
) -> dict[str, Any]:
    """Write ``meta.json`` listing ``segments`` with the live counts (the generation's deleted
    reports left out) and return the manifest entry."""
    folder = gen.path / NAME
    deleted = gen.deleted_keys()
    keys, indexes = [], []
    for segment in segments:
        rows = pq.read_table(folder / segment.rows_file)
        live = ~np.isin(rows.column("report_key").to_numpy(), deleted)
        keys.append(rows.column("report_key").to_numpy()[live])
        indexes.append(rows.column("index").to_numpy()[live])
    live_keys, live_indexes = _concat(keys), _concat(indexes)
    meta = replace(
        identity,
        vectors=len(live_keys),
        sentences=_count_sentences(live_keys, live_indexes),
        ann="hnsw" if any(s.ann == "hnsw" for s in segments) else "exact",
        segments=segments,
    )
    (folder / META_FILE).write_text(json.dumps(meta.to_dict(), indent=2) + "\n", encoding="utf-8")
    return meta.to_dict()


def _concat(parts: list[np.ndarray], dtype: type = np.int64) -> np.ndarray:
    """Concatenate arrays (an empty array of ``dtype`` when there are none)."""
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)


def _top(scores: np.ndarray, keys: np.ndarray, indexes: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the ``limit`` best scores, best first, ties by report key then sentence
    index (the same order however the sentences lie in segments)."""
    n = len(scores)
    limit = min(limit, n)
    if limit <= 0:
        return np.empty(0, np.int64)
    part = np.arange(n)
    if limit < n:  # every score tied with the cut stays in, so that keys decide among them
        part = np.flatnonzero(scores >= np.partition(scores, n - limit)[n - limit])
    return part[np.lexsort((indexes[part], keys[part], -scores[part]))][:limit]


def _hnsw_params(ef_search: int) -> Any:
    """Search parameters of one HNSW search: threads searching the same index each pass their
    own ``efSearch`` instead of setting it on the shared index."""
    import faiss

    return faiss.SearchParametersHNSW(efSearch=ef_search)


@lru_cache(maxsize=1)
def _search_pool(pid: int) -> ThreadPoolExecutor:
    """Threads that search a generation's segments side by side (FAISS and numpy release the
    GIL), one per core; keyed by process id, so a forked process makes its own (the parent's
    threads are not there)."""
    return ThreadPoolExecutor(available_cores(), thread_name_prefix="dense-search")


def _load_ann(path: Path) -> Any:
    """Read a segment's HNSW index."""
    import faiss

    return faiss.read_index(str(path))
