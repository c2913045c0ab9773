"""The component protocol: a part of the index (bm25, findings, dense) kept per generation.

A generation is a list of immutable *segments* plus deletion marks. A segment is a folder
``segments/<id>/`` holding the core tables (``reports.parquet``, ``sentences.parquet``) of a run
of reports with consecutive keys, and the per-segment files of components (``findings.parquet``,
``concepts/``). A change writes a new generation folder: the segments it keeps are hard-linked
from the previous generation (``index.links``), ``add`` writes new segments, ``delete`` only
writes ``deleted.parquet``, and a merge replaces segments by one without deleted rows. Each
component then writes its own files (``build``, ``add``, ``delete``, ``merge``); ``open`` gives
the query-time reader. Readers see the logical tables through ``Generation``: segments
concatenated in key order, marked-deleted reports left out.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.duck import ParquetRows
from clinsearch.errors import ClinsearchError
from clinsearch.parallel import Workers

SEGMENTS_DIR = "segments"
REPORTS_FILE = "reports.parquet"
SENTENCES_FILE = "sentences.parquet"
SENTENCE_COUNTS_FILE = "sentence_counts.npy"  # sentences per report, in report row order
DELETED_FILE = "deleted.parquet"  # columns key, id: reports marked deleted, not yet erased
KEY_COLUMNS = {"reports": "key", "sentences": "report_key", "findings": "report_key"}
_FOOTERS = 128  # Parquet footers kept (``footer``)
_footers: dict[tuple[int | str, ...], tuple[Any, np.ndarray]] = {}
_footers_lock = threading.Lock()


SENTENCE_BITS = 20  # a sentence code is report key << SENTENCE_BITS | sentence index


def sentence_codes(keys: np.ndarray, indexes: np.ndarray) -> np.ndarray:
    """One int64 per (report key, sentence index) pair, ordered as the pairs are;
    ClinsearchError for an index that does not fit in ``SENTENCE_BITS`` (its code would be
    another report's sentence) or a key that does not fit in the rest of the int64."""
    keys, indexes = np.asarray(keys, np.int64), np.asarray(indexes, np.int64)
    if indexes.size and (indexes.min() < 0 or indexes.max() >> SENTENCE_BITS
                         or keys.min() < 0 or keys.max() >> (62 - SENTENCE_BITS)):
        raise ClinsearchError(f"a report has {1 << SENTENCE_BITS:,} sentences or more (or a"
                              " report key is out of range); split it into smaller reports")
    return (keys << SENTENCE_BITS) + indexes


def sentence_parts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Report keys and sentence indexes of sentence codes."""
    codes = np.asarray(codes, np.int64)
    return codes >> SENTENCE_BITS, codes & ((1 << SENTENCE_BITS) - 1)


@dataclass(frozen=True, slots=True)
class Segment:
    """An immutable run of reports: keys ``first_key`` to ``last_key`` (inclusive; a merge may
    leave gaps), with the rows it stores (marked-deleted ones included)."""

    id: str
    first_key: int
    last_key: int
    reports: int
    sentences: int

    def to_dict(self) -> dict[str, Any]:
        """The manifest's record of the segment."""
        return {"id": self.id, "first_key": self.first_key, "last_key": self.last_key,
                "reports": self.reports, "sentences": self.sentences}

    @property
    def number(self) -> int:
        """The segment's sequence number (its id without the ``s`` prefix)."""
        return int(self.id.removeprefix("s"))


def segment_id(number: int) -> str:
    """The folder name of segment ``number``."""
    return f"s{number:06d}"


@dataclass(frozen=True, slots=True)
class Generation:
    """One generation folder, read through its segments as logical tables.

    ``segments`` are in report-key order; ``progress`` asks for progress bars; ``workers`` are
    the processes a component may use to write it (by default none: all work runs here).
    """

    path: Path
    segments: tuple[Segment, ...] = ()
    progress: bool = False
    workers: Workers = field(default_factory=Workers, compare=False)

    def segment_path(self, segment: Segment) -> Path:
        """The folder of one segment."""
        return self.path / SEGMENTS_DIR / segment.id

    def new_segments(self, prev: Generation | None) -> tuple[Segment, ...]:
        """The segments of this generation that ``prev`` does not have (all when None)."""
        old = set() if prev is None else {s.id for s in prev.segments}
        return tuple(s for s in self.segments if s.id not in old)

    def files(self, name: str) -> list[Path]:
        """Table ``name``'s file in each segment, in key order (``name``: ``reports``,
        ``sentences``, ``findings``)."""
        return [self.segment_path(s) / f"{name}.parquet" for s in self.segments]

    def has(self, name: str) -> bool:
        """Whether the generation's segments hold table ``name``."""
        return all(f.is_file() for f in self.files(name))

    def sentence_counts(self, segment: Segment) -> np.ndarray | None:
        """How many sentences each report row of ``segment`` has (deleted ones included), or
        None when the segment does not record them (written by an older clinsearch) or they
        disagree with its record (its sentences' keys then say)."""
        path = self.segment_path(segment) / SENTENCE_COUNTS_FILE
        if not path.is_file():
            return None
        counts = np.load(path, allow_pickle=False)
        if (counts.ndim != 1 or len(counts) != segment.reports
                or int(counts.sum(dtype=np.int64)) != segment.sentences):
            return None
        return counts

    def deleted_keys(self) -> np.ndarray:
        """Report keys marked deleted in this generation (sorted int64; empty when none).

        A delete only marks; readers leave these reports out, and a merge removes their data.
        """
        path = self.path / DELETED_FILE
        if not path.is_file():
            return np.empty(0, np.int64)
        keys = pq.ParquetFile(path).read(["key"]).column("key").to_numpy()
        return np.sort(keys.astype(np.int64))

    def table(
        self, name: str, columns: list[str] | None = None,
        report_keys: Collection[int] | None = None,
        filters: list[tuple[str, str, Any]] | None = None, dictionary: list[str] | None = None,
        schema: pa.Schema | None = None,
    ) -> pa.Table:
        """Logical table ``name`` read whole (optionally some columns), deleted reports left out;
        with ``report_keys`` only those reports' rows (segments and row groups without them are
        not read: ``_read_keys``), with
        ``filters`` only matching rows (pyarrow's filters: row groups are skipped by statistics);
        ``dictionary`` columns are read dictionary-encoded (no string per row). With
        ``schema`` (the table's current one), a column of it that a segment's file lacks (one
        written before the column existed) reads as nulls."""
        key, dropped = KEY_COLUMNS[name], self.deleted_keys()
        wanted = _sorted(report_keys)
        tables = []
        for segment, path in zip(self.segments, self.files(name), strict=True):
            if wanted is not None and not _overlaps(segment, wanted):
                continue
            stored = None if schema is None else set(
                footer(path, key)[0].schema.to_arrow_schema().names)
            read_columns = columns or (None if schema is None else schema.names)
            if wanted is not None or len(dropped):  # the key finds the wanted or deleted rows
                read_columns = _with_key(read_columns, key)
            if stored is not None and read_columns is not None:
                read_columns = [c for c in read_columns if c in stored]
            if wanted is not None:
                read = _read_keys(path, key, wanted, read_columns, filters, dictionary)
            elif filters:
                read = pq.read_table(path, columns=read_columns, filters=filters,
                                     read_dictionary=dictionary)
            else:
                read = pq.ParquetFile(path, read_dictionary=dictionary).read(read_columns)
            if schema is not None:
                read = _filled(read, schema, columns)
            tables.append(_kept(read, key, dropped, columns))
        if not tables:  # no segment holds the wanted reports
            empty = (schema or pq.ParquetFile(self.files(name)[0]).schema_arrow).empty_table()
            return empty if columns is None else empty.select(columns)
        return pa.concat_tables(tables) if len(tables) != 1 else tables[0]

    def batches(
        self, name: str, report_keys: Collection[int] | None = None,
        columns: list[str] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Stream table ``name``'s rows in key order, deleted reports left out (and, when
        ``report_keys`` is given, only those reports: segments without them are not read)."""
        key = KEY_COLUMNS[name]
        wanted = _sorted(report_keys)
        dropped = self.deleted_keys()
        for segment, path in zip(self.segments, self.files(name), strict=True):
            if wanted is not None and not _overlaps(segment, wanted):
                continue
            for batch in pq.ParquetFile(path).iter_batches(
                batch_size=8192, columns=_with_key(columns, key)
            ):
                if wanted is not None:
                    batch = batch.filter(pc.is_in(batch.column(key), value_set=pa.array(wanted)))
                batch = _kept(batch, key, dropped, columns)
                if batch.num_rows:
                    yield batch

    def report_batches(
        self, report_keys: Collection[int] | None = None, columns: list[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream report rows, optionally only those whose ``key`` is in ``report_keys``."""
        return self.batches("reports", report_keys, columns)

    def sentence_batches(
        self, report_keys: Collection[int] | None = None, columns: list[str] | None = None
    ) -> Iterator[pa.RecordBatch]:
        """Stream sentence rows, optionally only those of the reports in ``report_keys``."""
        return self.batches("sentences", report_keys, columns)

    def rows(self, name: str, dropped: np.ndarray | None = None) -> ParquetRows:
        """Table ``name`` for ``clinsearch.duck.connect``: its segment files, deletions excluded
        (``dropped``: ``deleted_keys()`` already read, else read here)."""
        dropped = self.deleted_keys() if dropped is None else dropped
        return ParquetRows(tuple(self.files(name)), KEY_COLUMNS[name], dropped)


@dataclass(frozen=True, slots=True)
class Change:
    """The reports an ``add`` or ``delete`` touches, by id and by internal key."""

    report_ids: tuple[str, ...]
    report_keys: tuple[int, ...]
    info: Mapping[str, Any] = field(default_factory=dict)


class Component(Protocol):
    """A part of the index stored in its own files inside each generation folder.

    ``build``, ``add``, ``delete`` and ``merge`` write into ``gen`` (a new, not yet live folder
    whose core segments are already written) and return the component's entry for the manifest
    (counts, settings). They must not modify ``prev``; files kept unchanged are hard-linked
    (``index.links``), never copied or rewritten. Files inside a segment folder that the new
    generation keeps are linked by the index itself.
    """

    name: str

    def build(self, gen: Generation) -> dict[str, Any]:
        """Build the component from the generation's core tables (all its segments are new)."""
        ...

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Write into ``gen`` the component of ``prev`` plus the reports in ``change`` (they are
        in ``gen.new_segments(prev)``)."""
        ...

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Write into ``gen`` the component of ``prev`` without the reports in ``change`` (they
        are already in ``gen.deleted_keys()``: marking them, or filtering by it, is enough)."""
        ...

    def merge(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Write into ``gen`` the component of ``prev`` after a merge of core segments: each of
        ``gen.new_segments(prev)`` replaces the segments of ``prev`` in its key range, without
        deleted rows. ``change`` names the reports whose data must be erased (the marks this
        merge clears, and for a purge the reports deleted with it); when it is empty the merge
        only regroups segments (the size-tiered policy during a write), ``gen.deleted_keys()``
        still marks every deleted report, and a component that keeps no per-segment data
        may keep (link) its previous files."""
        ...

    def open(self, gen: Generation) -> Any:
        """The query-time reader of this component in a live generation."""
        ...


def _sorted(report_keys: Collection[int] | None) -> np.ndarray | None:
    """Report keys as a sorted, distinct int64 array (None stays None: every report)."""
    return None if report_keys is None else np.unique(np.asarray(list(report_keys), np.int64))


def _filled(table: pa.Table, schema: pa.Schema, columns: list[str] | None) -> pa.Table:
    """``table`` with the ``columns`` of ``schema`` (all when None) it lacks as nulls."""
    for column in columns or schema.names:
        if column not in table.column_names:
            field = schema.field(column)
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table if columns is not None else table.select(schema.names)


def _with_key(columns: list[str] | None, key: str) -> list[str] | None:
    """``columns`` plus the key column (needed to leave deleted reports out)."""
    return columns if columns is None or key in columns else [*columns, key]


def without_keys(rows: Any, key: str, dropped: np.ndarray) -> Any:
    """``rows`` (an Arrow table or batch) without those whose ``key`` column is one of the
    ``dropped`` report keys: the one filter that leaves deleted reports out."""
    if not len(dropped):
        return rows
    gone = pa.array(dropped, type=pa.int64())
    return rows.filter(pc.invert(pc.is_in(rows.column(key), value_set=gone)))


def _kept(
    rows: pa.Table | pa.RecordBatch, key: str, dropped: np.ndarray, columns: list[str] | None
) -> Any:
    """``rows`` without those of the ``dropped`` report keys, reduced to ``columns``."""
    rows = without_keys(rows, key, dropped)
    return rows if columns is None else rows.select(columns)


def _read_keys(
    path: Path, key: str, wanted: np.ndarray, columns: list[str] | None,
    filters: list[tuple[str, str, Any]] | None, dictionary: list[str] | None,
) -> pa.Table:
    """The rows of one segment file whose ``key`` is one of the sorted ``wanted`` keys (and
    that match ``filters``), reading only the row groups whose key range holds one of them.
    The file's footer and key ranges are read once per file (``footer``): pyarrow's own
    filtered read parses the footer anew each time, and a page of hits or one report view
    asks for a few reports at a time. Keys spread over most of the file are read by pyarrow's
    scan, which filters each batch as it decodes it."""
    metadata, ranges = footer(path, key)
    at = np.searchsorted(wanted, ranges[:, 0])
    inside = at < len(wanted)
    inside[inside] = wanted[at[inside]] <= ranges[inside, 1]
    groups = np.flatnonzero(inside).tolist()
    conditions = [(key, "in", wanted.tolist()), *(filters or [])]
    if 2 * len(groups) > len(ranges):
        return pq.read_table(path, columns=columns, filters=conditions,
                             read_dictionary=dictionary)
    needed = None if columns is None else list(dict.fromkeys(
        [*columns, *(column for column, _, _ in conditions)]))
    parquet = pq.ParquetFile(path, metadata=metadata, read_dictionary=dictionary)
    read = parquet.read_row_groups(groups, columns=needed)
    read = read.filter(_matching(read, conditions))
    return read if columns is None else read.select(columns)


def _matching(rows: pa.Table, conditions: list[tuple[str, str, Any]]) -> Any:
    """A mask of the rows meeting every condition (pyarrow's filter form): ``=`` and ``in``
    by compute kernels, others by pyarrow's expression (whose engine costs about a
    millisecond a call, more than reading a report's rows)."""
    mask = None
    for column, op, value in conditions:
        if op == "=":
            test = pc.equal(rows.column(column), pa.scalar(value, rows.schema.field(column).type))
        elif op == "in":
            test = pc.is_in(rows.column(column),
                            value_set=pa.array(value, rows.schema.field(column).type))
        else:
            return pq.filters_to_expression(conditions)
        mask = test if mask is None else pc.and_(mask, test)
    return mask


def footer(path: Path, key: str) -> tuple[Any, np.ndarray]:
    """A Parquet file's metadata and each row group's (min, max) ``key`` (a group without
    statistics spans every key), read once per file for all its readers (reads of a few
    reports, the row lookup): kept by the file's identity (device, inode, size, mtime), so the
    hard links of a segment in later generations share one entry and a file written anew is
    read anew; the oldest entries go past ``_FOOTERS``."""
    stat = path.stat()
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, key)
    found = _footers.get(identity)
    if found is not None:
        return found
    metadata = pq.ParquetFile(path).metadata
    leaves = [metadata.schema.column(n).path for n in range(metadata.num_columns)]
    column = leaves.index(key)  # statistics are kept per leaf column, nested ones included
    ranges = np.empty((metadata.num_row_groups, 2), np.int64)
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(column).statistics
        known = stats is not None and stats.has_min_max
        ranges[group] = (stats.min, stats.max) if known else (np.iinfo(np.int64).min,
                                                               np.iinfo(np.int64).max)
    with _footers_lock:  # server threads: one changes the dict at a time
        while len(_footers) >= _FOOTERS:
            del _footers[next(iter(_footers))]
        _footers[identity] = metadata, ranges
    return metadata, ranges

def _overlaps(segment: Segment, keys: np.ndarray) -> bool:
    """Whether any of the sorted ``keys`` falls in the segment's key range."""
    at = int(np.searchsorted(keys, segment.first_key))
    return at < len(keys) and int(keys[at]) <= segment.last_key


@dataclass(frozen=True)
class CoreRows:
    """The keys of the core tables that every component must agree with."""

    report_keys: np.ndarray  # int64, one per report
    sentence_keys: np.ndarray  # int64, report key of each sentence
    sentence_indexes: np.ndarray  # int64, index of each sentence in its report

    @classmethod
    def read(cls, gen: Generation) -> CoreRows:
        """Read the key columns of a generation's live reports and sentences."""
        reports = gen.table("reports", ["key"])
        sentences = gen.table("sentences", ["report_key", "index"])
        return cls(
            reports.column("key").to_numpy().astype(np.int64),
            sentences.column("report_key").to_numpy().astype(np.int64),
            sentences.column("index").to_numpy().astype(np.int64),
        )

    def same_sentences(self, keys: np.ndarray, indexes: np.ndarray) -> bool:
        """Whether (report key, sentence index) pairs are exactly the sentences, in any order."""
        return np.array_equal(
            np.sort(sentence_codes(keys, indexes)),
            np.sort(sentence_codes(self.sentence_keys, self.sentence_indexes)),
        )

    def unknown_sentences(self, keys: np.ndarray, indexes: np.ndarray) -> int:
        """How many (report key, sentence index) pairs name no sentence."""
        known = sentence_codes(self.sentence_keys, self.sentence_indexes)
        return int((~np.isin(sentence_codes(keys, indexes), known)).sum())
