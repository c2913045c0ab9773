"""Lookups over one generation's live core tables, for turning hits into records.

Reports marked deleted are left out (their keys map to no row). Opening reads only the key
columns (what aggregation needs); ids and texts are read for the rows a query shows (the row
groups holding them), visits and patients on the first use of those levels.

Sentences are stored grouped by report, in index order, so a (report, sentence index) pair maps
to a sentence row by arithmetic; ``units`` maps sentences and reports to visits and patients.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.arrow_numbers import arrow_of, numpy_of, strings_of
from clinsearch.index.component import KEY_COLUMNS, Generation, Segment, footer
from clinsearch.index.unit_map import UnitMap

_CACHED_GROUPS = 256  # row groups of ids and texts kept per table (~2,800 sentences each)
_FEW = 32  # rows of one row group read one by one rather than in one take
# columns a hit shows, read from a row group in one call: decoded side by side, three cost
# about what the longest alone does
_TOGETHER = {"sentences": ("id", "text", "start"), "reports": ("id", "visit_id", "patient_id")}


class LiveRows:
    """Where each live row of one core table lies: its segment file and its row in that file.

    Rows are numbered as ``Generation.table`` returns them (segments in key order, deleted
    reports left out). ``known_keys`` gives, per segment, the keys of all its rows when known
    without reading the file (None: read them).
    """

    def __init__(self, gen: Generation, name: str, dropped: np.ndarray,
                 known_keys: Sequence[np.ndarray | None] | None = None) -> None:
        self.generation, self.name = gen, name
        self.files: tuple[Path, ...] = tuple(gen.files(name))
        keys, self.file_rows = [], []
        self.stored_keys: list[np.ndarray] = []  # every row's key, deleted ones included
        known = known_keys or [None] * len(self.files)
        for segment, path, file_keys in zip(gen.segments, self.files, known, strict=True):
            if file_keys is None and name == "reports":
                file_keys = _key_run(segment, path)
            if file_keys is None:
                file_keys = numpy_of(pq.ParquetFile(path).read([KEY_COLUMNS[name]]).column(0))
            self.stored_keys.append(file_keys)
            live = ~np.isin(file_keys, dropped) if len(dropped) else None
            keys.append(file_keys if live is None else file_keys[live])
            self.file_rows.append(None if live is None or live.all() else np.flatnonzero(live))
        self.file_keys: list[np.ndarray] = keys  # live rows' keys, per file
        self.starts = np.cumsum([0, *(len(k) for k in keys)])
        self._opened: dict[int, tuple[pq.ParquetFile, np.ndarray]] = {}  # footers read once
        # the row groups read last: a query's hits are read once, repeated queries not at all
        self._group = lru_cache(maxsize=_CACHED_GROUPS)(self._read_group)
        self._lock = threading.Lock()  # one reader of the open files at a time (server threads)
        self._searched: dict[str, list[pa.Array]] = {}  # columns ``find`` looks in, read once

    def __len__(self) -> int:
        return int(self.starts[-1])

    @cached_property
    def keys(self) -> np.ndarray:
        """The key of every live row."""
        return np.concatenate(self.file_keys) if self.file_keys else np.empty(0, np.int64)

    def take(self, column: str, rows: np.ndarray) -> list[Any]:
        """The values of ``column`` at ``rows``, reading only the row groups that hold them; a
        few rows of a group are read one by one (a page of hits), more in one take."""
        rows = np.asarray(rows, np.int64)
        out: list[Any] = [None] * len(rows)
        together = _TOGETHER.get(self.name, ())
        columns = together if column in together else (column,)
        segment_of = np.searchsorted(self.starts, rows, side="right") - 1
        for segment in np.unique(segment_of).tolist():
            at = np.flatnonzero(segment_of == segment)
            local = rows[at] - self.starts[segment]
            mapped = self.file_rows[segment]
            file_rows = local if mapped is None else mapped[local]
            with self._lock:
                bounds = self._bounds(segment)
            group_of = np.searchsorted(bounds, file_rows, side="right") - 1
            for group in np.unique(group_of).tolist():
                inside = np.flatnonzero(group_of == group)
                values = self._group(segment, group, columns)[column]
                offsets = file_rows[inside] - bounds[group]
                picked = ([values[i].as_py() for i in offsets.tolist()] if len(offsets) <= _FEW
                          else values.take(arrow_of(offsets)).to_pylist())
                for position, value in zip(at[inside].tolist(), picked, strict=True):
                    out[position] = value
        return out

    def _bounds(self, segment: int) -> np.ndarray:
        """The first file row of each row group of ``segment``, and the file's row count."""
        if segment not in self._opened:
            path = self.files[segment]
            metadata = footer(path, KEY_COLUMNS[self.name])[0]
            sizes = [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
            self._opened[segment] = (pq.ParquetFile(path, metadata=metadata),
                                     np.cumsum([0, *sizes]))
        return self._opened[segment][1]

    def _read_group(self, segment: int, group: int, columns: tuple[str, ...]
                    ) -> dict[str, pa.Array]:
        """``columns`` of one row group of ``segment`` (all its rows, deleted ones included)."""
        with self._lock:
            self._bounds(segment)
            parquet = self._opened[segment][0]
            table = parquet.read_row_group(group, columns=list(columns))
        return {name: table.column(name).combine_chunks() for name in columns}

    def column(self, column: str) -> Iterator[pa.Array]:
        """The whole of ``column``, in row order, batch by batch."""
        for batch in self.generation.batches(self.name, columns=[column]):
            yield batch.column(0)

    def find(self, column: str, values: Sequence[str]) -> np.ndarray:
        """The row of each of ``values`` in ``column`` (-1 when no live row holds it)."""
        distinct = list(dict.fromkeys(values))
        wanted = strings_of(distinct)
        found = np.full(len(distinct), -1, np.int64)
        if column not in self._searched:
            self._searched.setdefault(column, list(self.column(column)))
        start = 0
        for chunk in self._searched[column]:
            at = pc.index_in(chunk, value_set=wanted)  # null where not wanted
            hits = pc.indices_nonzero(pc.is_valid(at))
            found[numpy_of(at.take(hits))] = start + numpy_of(hits).astype(np.int64)
            start += len(chunk)
        row_of = dict(zip(distinct, found.tolist(), strict=True))
        return np.array([row_of[v] for v in values], np.int64)


def _key_run(segment: Segment, path: Path) -> np.ndarray | None:
    """The keys of a segment's reports file without decoding them, when the segment holds
    its whole key run (no gap: writers append keys rising, so its rows are that run in order)
    and every row group's key statistics say so; None otherwise (the keys are read). A cold
    start reads the key column of every segment, spread over many small row groups."""
    if segment.reports != segment.last_key - segment.first_key + 1:
        return None
    metadata, ranges = footer(path, KEY_COLUMNS["reports"])
    sizes = np.array([metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)],
                     np.int64)
    starts = segment.first_key + np.cumsum(sizes) - sizes
    agree = (np.array_equal(ranges[:, 0], starts)
             and np.array_equal(ranges[:, 1], starts + sizes - 1))
    if int(sizes.sum()) != segment.reports or not agree:
        return None
    return np.arange(segment.first_key, segment.last_key + 1, dtype=np.int64)


class Column(Sequence[str]):
    """A read-only string column of a core table: values are read for the rows asked for."""

    def __init__(self, rows: LiveRows, name: str) -> None:
        self._rows, self._name = rows, name

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, row: int) -> str: ...
    @overload
    def __getitem__(self, row: slice) -> list[str]: ...
    def __getitem__(self, row: int | slice) -> str | list[str]:
        if isinstance(row, slice):
            return self.take(np.arange(len(self))[row])
        index = int(row)
        if not -len(self) <= index < len(self):
            raise IndexError(f"row {index} out of range")
        return self.take(np.array([index % len(self)]))[0]

    def __iter__(self) -> Iterator[str]:
        for chunk in self._rows.column(self._name):
            yield from chunk.to_pylist()

    def __eq__(self, other: object) -> bool:
        """Equal to any sequence of the same strings (as the lists it replaces were)."""
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def take(self, rows: np.ndarray) -> list[str]:
        """The values at ``rows``."""
        return self._rows.take(self._name, rows)

    def rows_of(self, values: Sequence[str]) -> np.ndarray:
        """The row holding each of ``values`` (-1 when none does); no per-row Python object."""
        return self._rows.find(self._name, values)


class RowLookup:
    """Ids, groups and sentence texts of a generation, indexed by row.

    Only the key columns are read at open; strings become Python strings only for the rows a
    query shows.
    """

    def __init__(self, gen: Generation) -> None:
        dropped = gen.deleted_keys()
        reports = LiveRows(gen, "reports", dropped)
        # a segment that records its sentences per report gives its sentences' keys unread
        counts = [gen.sentence_counts(s) for s in gen.segments]
        sentences = LiveRows(gen, "sentences", dropped, [
            None if n is None else np.repeat(k, n)
            for k, n in zip(reports.stored_keys, counts, strict=True)])
        self._reports = reports
        keys = reports.keys
        self.report_keys: np.ndarray = keys
        self.report_ids = Column(reports, "id")
        self.visit_ids = Column(reports, "visit_id")
        self.patient_ids = Column(reports, "patient_id")
        self.sentence_ids = Column(sentences, "id")
        self.sentence_texts = Column(sentences, "text")
        self.sentence_sections = Column(sentences, "section")  # section names (None: none)
        self.sentence_starts = Column(sentences, "start")  # offsets in the report text (ints)
        self.report_row_by_key = np.full(int(keys.max(initial=-1)) + 1, -1, np.int64)
        self.report_row_by_key[keys] = np.arange(len(keys))
        # a segment's sentences belong to its reports, rows rising with the report key: a
        # report's sentences start after its live predecessors' (their counts summed) or,
        # without counts, where its segment's sentence keys reach its key
        first = []
        for segment, start in enumerate(sentences.starts[:-1].tolist()):
            if counts[segment] is not None:
                live = reports.file_rows[segment]
                n = counts[segment] if live is None else counts[segment][live]
                first.append(start + np.cumsum(n, dtype=np.int64) - n)
            else:
                first.append(start + np.searchsorted(sentences.file_keys[segment],
                                                     reports.file_keys[segment], side="left"))
        self.first_sentence_row = np.concatenate(first) if first else np.empty(0, np.int64)
        self.end_sentence_row = np.append(self.first_sentence_row[1:], len(sentences))

    @cached_property
    def sentence_report_row(self) -> np.ndarray:
        """The report row of every sentence row (built on first use; ``sentence_reports``
        answers a few rows without it)."""
        return np.repeat(np.arange(len(self.report_keys)),
                         self.end_sentence_row - self.first_sentence_row)

    def sentence_reports(self, rows: np.ndarray) -> np.ndarray:
        """The report row of each of the sentence ``rows``."""
        return np.searchsorted(self.first_sentence_row, rows, side="right") - 1

    @cached_property
    def units(self) -> UnitMap:
        """Sentence -> report -> visit -> patient (patient and visit ids read on first use, as
        dictionary codes)."""
        table = self._reports.generation.table("reports", ["patient_id", "visit_id"],
                                               dictionary=["patient_id", "visit_id"])
        return UnitMap.from_ids(self.sentence_report_row, table.column("patient_id"),
                                table.column("visit_id"))

    @property
    def num_reports(self) -> int:
        """How many reports the generation holds."""
        return len(self.report_keys)

    def report_rows(self, report_keys: np.ndarray) -> np.ndarray:
        """Report rows of report keys."""
        return self.report_row_by_key[report_keys]

    def sentence_rows(self, report_keys: np.ndarray, indexes: np.ndarray) -> np.ndarray:
        """Sentence rows of (report key, sentence index) pairs."""
        return self.first_sentence_row[self.report_rows(report_keys)] + indexes

    def sentence_keys(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (report key, sentence index) of each of the sentence ``rows``: the inverse of
        ``sentence_rows``."""
        reports = self.sentence_reports(rows)
        return self.report_keys[reports], np.asarray(rows) - self.first_sentence_row[reports]

    def sentence_counts(self, report_rows: np.ndarray) -> np.ndarray:
        """How many sentences each report has."""
        return self.end_sentence_row[report_rows] - self.first_sentence_row[report_rows]

    def groups(self, level: str, unit: str, rows: np.ndarray) -> np.ndarray:
        """The group (at ``level``) of each row of ``unit`` ("sentence" or "report") rows."""
        if level == unit:
            return rows
        if (level, unit) == ("report", "sentence"):  # no visit or patient ids needed
            return self.sentence_reports(rows)
        return self.units.of(level, unit, rows)  # type: ignore[arg-type]
