"""``IndexStore``: build, open, add to and delete from an index directory, transactionally.

Searching is the next stage's job (``clinsearch.search.session``); ``clinsearch.Index`` is this
store with a search session attached.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache, cached_property
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clinsearch.corpus.model import Report, SegmentedReport
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.index.component import (
    DELETED_FILE,
    REPORTS_FILE,
    SEGMENTS_DIR,
    Change,
    Component,
    Generation,
    Segment,
    segment_id,
)
from clinsearch.index.config import IndexConfig
from clinsearch.index.generations import (
    Lease,
    PendingGeneration,
    current_generation,
    lease_current,
    new_generation,
)
from clinsearch.index.integrity import file_digests
from clinsearch.index.links import link_file, link_tree
from clinsearch.index.manifest import Manifest
from clinsearch.index.parts import Parts
from clinsearch.index.row_lookup import RowLookup
from clinsearch.index.tables import SegmentWriter, count, merge_segments
from clinsearch.index.taken_ids import TakenIds
from clinsearch.parallel import Workers
from clinsearch.progress import track
from clinsearch.trust import allow
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.corpus.segment import Segmenter
    from clinsearch.index.report_view import ReportView

_BATCH = 512


class IndexStore:
    """A clinsearch index directory, opened at its live generation.

    An open IndexStore keeps reading the generation it opened (a snapshot: it holds a lease, so no
    writer removes that generation) until ``close`` or ``reopen``; ``add`` and ``delete`` move
    it to the new generation they write. Use it as a context manager to close it.
    """

    def __init__(
        self, path: Path, generation: Generation, manifest: Manifest, lease: Lease | None = None
    ) -> None:
        self.path = path
        self.generation = generation
        self.manifest = manifest
        self._lease = lease
        self._components: dict[str, Any] = {}

    def __repr__(self) -> str:
        counts = self.manifest.counts
        return (
            f"{type(self).__name__}({str(self.path)!r}, generation={self.manifest.generation},"
            f" reports={counts.reports}, sentences={counts.sentences})"
        )

    @classmethod
    def build(
        cls,
        reports: Iterable[Report | SegmentedReport],
        path: str | Path,
        config: IndexConfig | None = None,
        progress: bool = True,
        workers: int = 1,
    ) -> IndexStore:
        """Index ``reports`` into ``path`` (a new or empty folder, or an index to replace).

        Reports stream through in batches: segmentation and finding extraction run on
        ``workers`` processes, and the index is written in segments of at most
        ``config.max_segment_reports`` reports, so memory does not grow with the number of reports.
        """
        config = (config or IndexConfig()).with_paths(lambda value, _: allow(value))
        _commit_new(Path(path), None, config, _ReportSource(reports, progress, workers), progress)
        return cls.open(path)

    @classmethod
    def build_from_parts(
        cls, parts: Parts, path: str | Path, config: IndexConfig | None = None,
        progress: bool = True,
    ) -> IndexStore:
        """Index tables computed in parts (``index.parts``, e.g. by Spark) into ``path``: one
        segment per part, the same rows ``build`` writes for the same reports in the same order."""
        config = (config or IndexConfig()).with_paths(lambda value, _: allow(value))
        _commit_new(Path(path), None, config, _PartSource(parts), progress)
        return cls.open(path)

    @classmethod
    def open(cls, path: str | Path) -> IndexStore:
        """Open the live generation of the index at ``path`` (read-only access is enough)."""
        root = Path(path)
        lease = lease_current(root)
        try:
            manifest = Manifest.read(lease.path)
        except BaseException:
            lease.release()
            raise
        return cls(root, Generation(lease.path, manifest.segments), manifest, lease)

    def close(self) -> None:
        """Drop cached readers and the lease, so that writers may remove this generation."""
        self._drop_readers()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def reopen(self) -> IndexStore:
        """Move to the live generation (seeing other processes' commits); returns self."""
        fresh = IndexStore.open(self.path)
        self.close()
        self.generation, self.manifest, self._lease = fresh.generation, fresh.manifest, fresh._lease
        return self

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> IndexConfig:
        """The configuration the index was built with."""
        return self.manifest.config

    @cached_property
    def lookup(self) -> RowLookup:
        """Ids, groups and sentence texts of the live generation, loaded on first use."""
        with self._replaced_as_error():
            return RowLookup(self.generation)

    def component(self, name: str) -> Any:
        """The query-time reader of component ``name`` (e.g. ``"bm25"``)."""
        if name not in self._components:
            if name not in self.config.components:
                raise ClinsearchError(
                    f"{self.path}: this index has no {name!r} component"
                    f" (it has: {', '.join(self.config.components)})"
                )
            made = {c.name: c for c in self.config.make()}
            with self._replaced_as_error():
                self._components[name] = made[name].open(self.generation)
        return self._components[name]

    def add(
        self,
        reports: Iterable[Report | SegmentedReport],
        progress: bool = True,
        workers: int = 1,
    ) -> int:
        """Add new reports (ids must not be in the index yet); returns how many were added.

        Only the new reports are written (as new segments); the merge policy may then merge
        small segments in a second commit.
        """
        source = _ReportSource(reports, progress, workers, self.manifest.next_report_key)
        return self._add(source, progress)

    def add_parts(self, parts: Parts, progress: bool = True) -> int:
        """``add`` for tables computed in parts with keys from 0 (``index.parts``, e.g. by
        Spark), one new segment per part; returns how many reports were added."""
        keyed = replace(parts, first_key=self.manifest.next_report_key)
        return self._add(_PartSource(keyed), progress)

    def delete(self, report_ids: Iterable[str], purge: bool = False) -> int:
        """Delete reports by id; every id must be in the index. Returns how many were deleted.

        A delete only marks the reports (readers leave them out); their data goes at the next
        merge (``optimize``). With ``purge`` the index is merged at once, so that no data of
        the deleted reports remains once readers of older generations close.
        """
        self._ensure_live()
        ids = list(dict.fromkeys(report_ids))
        if not ids:
            raise ClinsearchError("no report ids to delete")
        live = _live_keys(self.generation)
        unknown = [i for i in ids if i not in live]
        if unknown:
            shown = ", ".join(repr(i) for i in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
            raise InputError(f"{len(unknown)} id(s) not in the index: {shown}", field="ids")
        keys = tuple(live[i] for i in ids)
        if purge:
            dropped = np.union1d(self.generation.deleted_keys(), np.asarray(keys, np.int64))
            groups = compaction_plan(self.generation.segments, self.config, dropped)
            self._merge(groups, Change(tuple(ids), keys))
            return len(ids)
        prev = self.generation
        with new_generation(self.path, expect_live=prev.path) as pending:
            gen = Generation(pending.path, prev.segments)
            _link_segments(prev, gen, prev.segments)
            change = Change(tuple(ids), keys)
            _write_marks(prev, gen, change)
            components = {c.name: c.delete(prev, gen, change) for c in self.config.make()}
            _finish(pending, (prev, self.manifest), gen, self.config, components,
                    self.manifest.next_report_key)
            self.close()  # our own lease must not keep the replaced generation on disk
        self.reopen()
        return len(ids)

    def optimize(self) -> int:
        """Merge the segments into as few as ``config.max_segment_reports`` allows, without the
        reports marked deleted (their data is gone once readers of older generations close);
        returns how many segments were merged (0 when there was nothing to merge or erase).

        Merged segments hold at most ``max_segment_reports`` reports, as a build writes them, so
        that a merge's memory (per-segment tables and postings) stays that of a build's."""
        self._ensure_live()
        deleted = self.generation.deleted_keys()
        groups = compaction_plan(self.generation.segments, self.config, deleted)
        if not groups and not len(deleted):
            return 0
        self._merge(groups, Change((), ()))
        return sum(len(group) for group in groups)

    def report(self, report_id: str) -> ReportView:
        """The report ``report_id`` with its sections, sentences and findings."""
        from clinsearch.index.report_view import read_report_view

        with self._replaced_as_error():
            row = int(self.lookup.report_ids.rows_of([report_id])[0])
            key = None if row < 0 else int(self.lookup.report_keys[row])
            return read_report_view(self.generation, report_id, key)

    def level_size(self, level: Level) -> int:
        """How many sentences, reports, visits or patients the index holds (at least 1)."""
        counts = self.manifest.counts
        size = {"sentence": counts.sentences, "report": counts.reports,
                "visit": counts.visits, "patient": counts.patients}[level]
        return max(1, size)

    def _add(self, source: _Source, progress: bool) -> int:
        """Commit ``source``'s reports as new segments, then apply the merge policy."""
        self._ensure_live()
        added = _commit_new(self.path, self, self.config, source, progress)
        self.reopen()
        if groups := merge_plan(self.generation.segments, self.config):
            self._merge(groups, None)
        return added

    def _merge(self, groups: list[list[Segment]], erase: Change | None) -> None:
        """Commit a generation in which each group of consecutive segments is one segment
        without deleted rows (other segments are kept as they are). With ``erase`` (``groups``
        then hold every segment with rows of a marked report or of ``erase``'s) the deletion
        marks are cleared and every component drops the data of the marked reports and of
        ``erase``'s; without it the marks stay and components only regroup."""
        prev = self.generation
        marks = _marks(prev)  # deleted.parquet read once: its keys and, to erase, its ids
        change = Change((), ()) if erase is None else _erased(marks, erase)
        dropped = np.union1d(np.asarray(marks.report_keys, np.int64),
                             np.asarray(change.report_keys, np.int64))
        firsts = {group[0].id: group for group in groups}
        merged = {s.id for group in groups for s in group}
        with new_generation(self.path, expect_live=prev.path) as pending:
            gen = Generation(pending.path)
            number, segments = _next_segment(prev), []
            for segment in prev.segments:
                if segment.id in firsts:
                    writer = _segment_writer(gen, number)
                    segments.append(merge_segments(prev, firsts[segment.id], dropped, writer))
                    number += 1
                elif segment.id not in merged:
                    _link_segments(prev, gen, [segment])
                    segments.append(segment)
            gen = replace(gen, segments=tuple(segments))
            if erase is None:
                _link_marks(prev, gen)
            components = {c.name: c.merge(prev, gen, change) for c in self.config.make()}
            _finish(pending, (prev, self.manifest), gen, self.config, components,
                    self.manifest.next_report_key)
            self.close()  # our own lease must not keep the replaced generation on disk
        self.reopen()

    @contextmanager
    def _replaced_as_error(self) -> Iterator[None]:
        """Report a generation removed under us (another process changed the index) clearly."""
        try:
            yield
        except (FileNotFoundError, ValueError):
            if self.generation.path.exists():
                raise
            raise ClinsearchError(
                f"{self.path}: {self.generation.path.name} was replaced by a newer generation"
                " since the index was opened; reopen it"
            ) from None

    def _ensure_live(self) -> None:
        """Refuse to change the index from a generation that is no longer the live one."""
        if current_generation(self.path) != self.generation.path:
            raise ClinsearchError(f"{self.path}: the index changed since it was opened; reopen it")

    def _drop_readers(self) -> None:
        """Forget the readers loaded from the current generation."""
        self._components.clear()
        self.__dict__.pop("lookup", None)


def _segmented(
    items: Iterable[Report | SegmentedReport], progress: bool, workers: Workers
) -> Iterator[SegmentedReport]:
    """Segment the reports among ``items`` in batches on the workers, in order; segmented ones
    pass through as given."""
    stream = iter(track(items, "reading and segmenting reports", enabled=progress))
    first = list(islice(stream, _BATCH))
    if not _raw_reports(first):
        workers = Workers(1)  # already segmented (as a rule the whole input is): no workers
    batches = chain([first], iter(lambda: list(islice(stream, _BATCH)), []))
    for batch, done in workers.map(split_into_sentences, batches, send=_raw_reports):
        segmented = iter(done)
        yield from (next(segmented) if isinstance(item, Report) else item for item in batch)


def _raw_reports(batch: list[Report | SegmentedReport]) -> list[Report]:
    """The reports of a batch that still need segmenting."""
    return [item for item in batch if isinstance(item, Report)]


def split_into_sentences(reports: list[Report]) -> list[SegmentedReport]:
    """Split reports into sentences (in a worker process when there are several)."""
    if not reports:
        return []
    return list(_segmenter().segment_many(reports))


@cache
def _segmenter() -> Segmenter:
    """One segmenter per process."""
    from clinsearch.corpus.segment import Segmenter  # only needed for raw reports

    return Segmenter()


class _Source(Protocol):
    """Where the reports of a build or an add come from: a report stream or computed parts."""

    workers: int

    def write(self, gen: Generation, number: int, size: int, taken: TakenIds) -> list[Segment]:
        """Write the new segments (numbered from ``number``, at most ``size`` reports each;
        ``taken``: the ids a new report must not have); returns them."""
        ...

    def tables(self, component: str) -> Iterable[pa.Table] | None:
        """The rows of ``component`` computed with the reports (one table per new segment), or
        None when the component computes them itself."""
        ...


@dataclass
class _ReportSource:
    """Reports (raw or segmented) to segment here, keyed from ``first_key``."""

    reports: Iterable[Report | SegmentedReport]
    progress: bool
    workers: int
    first_key: int = 0

    def write(self, gen: Generation, number: int, size: int, taken: TakenIds) -> list[Segment]:
        """Segment the reports on the workers and write them in segments of ``size``."""
        stream = _segmented(self.reports, self.progress, gen.workers)
        segments: list[Segment] = []
        writer: SegmentWriter | None = None
        key = self.first_key
        try:
            while batch := list(islice(stream, _BATCH)):
                keyed = list(enumerate(batch, key))
                key += len(batch)
                while keyed:
                    if writer is None or writer.reports >= size:
                        if writer is not None:
                            segments.append(_written(gen, writer, taken))
                        writer = _segment_writer(gen, number + len(segments))
                    room = size - writer.reports
                    part, keyed = keyed[:room], keyed[room:]
                    _check_new([s.report.id for _, s in part], [s.report.source for _, s in part],
                               taken)
                    writer.write(part)
        finally:
            if writer is not None:
                segments.append(_written(gen, writer, taken))
        return segments

    def tables(self, component: str) -> None:
        """Every component computes its rows itself."""
        return None


@dataclass
class _PartSource:
    """Tables computed in parts (``index.parts``): each part becomes one segment."""

    parts: Parts
    workers: int = 1

    def write(self, gen: Generation, number: int, size: int, taken: TakenIds) -> list[Segment]:
        """Write each part's core tables as a segment (``size`` does not split parts; an empty
        part makes no segment)."""
        segments: list[Segment] = []
        for reports, sentences in self.parts.core():
            if not reports.num_rows:
                continue
            _check_new(*(reports.column(c).to_pylist() for c in ("id", "source")), taken)
            writer = _segment_writer(gen, number + len(segments))
            try:
                writer.append(reports, sentences)
            finally:
                segments.append(_written(gen, writer, taken))
        return segments

    def tables(self, component: str) -> Iterable[pa.Table] | None:
        """The part tables of ``component`` when the parts carry them."""
        return self.parts.tables(component) if self.parts.has(component) else None


def _commit_new(
    root: Path, index: IndexStore | None, config: IndexConfig, source: _Source, progress: bool
) -> int:
    """Commit a generation of ``index``'s segments (none for a build) plus ``source``'s reports
    as new segments; returns how many reports were added. ``index`` is closed before the
    replaced generation is swept."""
    prev = None if index is None else index.generation
    taken = TakenIds()
    if prev is not None:
        taken.add_files(prev.files("reports"), prev.deleted_keys())
    with (new_generation(root, expect_live=None if prev is None else prev.path) as pending,
          Workers(source.workers) as pool):
        gen = Generation(pending.path, progress=progress, workers=pool)
        kept = () if prev is None else prev.segments
        if prev is not None:
            _link_segments(prev, gen, kept)
            _link_marks(prev, gen)
        new = source.write(gen, _next_segment(prev), config.max_segment_reports, taken)
        del taken  # the build's largest structure besides the segments: not needed further
        if not new:
            raise ClinsearchError("no reports to index" if prev is None else "no reports to add")
        gen = replace(gen, segments=(*kept, *new))
        # A build's components read every segment and need no list of the new reports.
        change = Change((), ()) if prev is None else _added(gen, new)
        components = {c.name: _write_component(c, prev, gen, change, source.tables(c.name))
                      for c in config.make()}
        previous = None if index is None else (prev, index.manifest)
        _finish(pending, previous, gen, config, components, max(s.last_key for s in new) + 1)
        if index is not None:
            index.close()  # our own lease must not keep the replaced generation on disk
    return sum(s.reports for s in new)


def _written(gen: Generation, writer: SegmentWriter, taken: TakenIds) -> Segment:
    """Close a new segment's writer; its ids are now in its reports file."""
    segment = writer.close()
    taken.segment_written(gen.segment_path(segment) / REPORTS_FILE)
    return segment


def _added(gen: Generation, new: Sequence[Segment]) -> Change:
    """The reports of the ``new`` segments of ``gen`` (ids and keys read from their files)."""
    tables = [pq.ParquetFile(gen.segment_path(s) / REPORTS_FILE).read(["id", "key"]) for s in new]
    table = pa.concat_tables(tables)
    return Change(tuple(table.column("id").to_pylist()), tuple(table.column("key").to_pylist()))


def _live_keys(gen: Generation) -> dict[str, int]:
    """The key of each live report of ``gen``, by id (two columns read, not a whole RowLookup)."""
    table = gen.table("reports", ["id", "key"])
    return dict(zip(table.column("id").to_pylist(), table.column("key").to_pylist(),
                    strict=True))


def _write_component(
    component: Component, prev: Generation | None, gen: Generation, change: Change,
    tables: Iterable[pa.Table] | None,
) -> dict[str, Any]:
    """Build (``prev`` None) or add to one component, from its computed ``tables`` if given."""
    if tables is None:
        return component.build(gen) if prev is None else component.add(prev, gen, change)
    if prev is None:
        return component.build_from(gen, tables)  # type: ignore[attr-defined]
    return component.add_from(prev, gen, change, tables)  # type: ignore[attr-defined]


def merge_plan(segments: Sequence[Segment], config: IndexConfig) -> list[list[Segment]]:
    """The size-tiered merge policy: runs of at least ``config.merge_factor`` consecutive
    segments in the same size tier (tiers by powers of the factor) are merged, as far as the
    merged segment stays within ``config.max_segment_reports`` reports."""
    factor, limit = config.merge_factor, config.max_segment_reports
    groups: list[list[Segment]] = []
    run: list[Segment] = []
    for segment in (*segments, None):
        if segment is not None and run and _tier(segment, factor) == _tier(run[0], factor):
            run.append(segment)
            continue
        sizes = np.cumsum([s.reports for s in run])
        fitting = run[: int(np.searchsorted(sizes, limit, side="right"))]
        if len(fitting) >= factor:
            groups.append(fitting)
        run = [] if segment is None else [segment]
    return groups


def compaction_plan(
    segments: Sequence[Segment], config: IndexConfig, dropped: np.ndarray
) -> list[list[Segment]]:
    """The groups an ``optimize`` (or a purge) merges: consecutive segments packed while their
    live reports (rows less those of the ``dropped`` keys, sorted) fit in
    ``config.max_segment_reports``; a group is merged when it has several segments or rows to
    drop (a lone segment without deleted rows is kept as it is)."""
    groups: list[list[Segment]] = []
    group: list[Segment] = []
    live = drops = 0
    for segment in (*segments, None):
        if segment is not None:
            first, stop = np.searchsorted(dropped, [segment.first_key, segment.last_key + 1])
            gone = int(stop - first)  # a dropped key may have no rows left (a merge took them)
            reports = max(0, segment.reports - gone)
        if group and (segment is None or live + reports > config.max_segment_reports):
            if len(group) > 1 or drops:
                groups.append(group)
            group, live, drops = [], 0, 0
        if segment is not None:
            group.append(segment)
            live, drops = live + reports, drops + gone
    return groups


def _tier(segment: Segment, factor: int) -> int:
    """The size tier of a segment: floor(log_factor(reports))."""
    return int(math.log(max(segment.reports, 1), factor))


def _segment_writer(gen: Generation, number: int) -> SegmentWriter:
    """A writer of new segment ``number`` of ``gen``."""
    return SegmentWriter(gen.path / SEGMENTS_DIR / segment_id(number), segment_id(number))


def _next_segment(prev: Generation | None) -> int:
    """The number the next new segment gets (above every segment of ``prev``)."""
    return max((s.number for s in prev.segments), default=0) + 1 if prev is not None else 1


def _link_segments(prev: Generation, gen: Generation, segments: Iterable[Segment]) -> None:
    """Hard-link ``prev``'s folders of ``segments`` (with their component files) into ``gen``."""
    for segment in segments:
        link_tree(prev.segment_path(segment), gen.segment_path(segment))


def _link_marks(prev: Generation, gen: Generation) -> None:
    """Keep ``prev``'s deletion marks in ``gen``."""
    if (prev.path / DELETED_FILE).is_file():
        link_file(prev.path / DELETED_FILE, gen.path / DELETED_FILE)


def _write_marks(prev: Generation, gen: Generation, change: Change) -> None:
    """Write the deletion marks of ``gen``: ``prev``'s and the reports of ``change`` (key and id,
    so that a later merge can name every report it erases, even one whose rows a size-tiered
    merge already dropped)."""
    marks = _marks(prev)
    table = pa.table({"key": pa.array([*marks.report_keys, *change.report_keys], pa.int64()),
                      "id": pa.array([*marks.report_ids, *change.report_ids], pa.string())})
    pq.write_table(table, gen.path / DELETED_FILE)


def _marks(gen: Generation) -> Change:
    """The reports marked deleted in ``gen``."""
    path = gen.path / DELETED_FILE
    if not path.is_file():
        return Change((), ())
    table = pq.ParquetFile(path).read(["key", "id"])
    return Change(tuple(table.column("id").to_pylist()), tuple(table.column("key").to_pylist()))


def _erased(marks: Change, erase: Change) -> Change:
    """The reports whose data a merge removes: the marked ones (``marks``) and ``erase``'s."""
    return Change((*marks.report_ids, *erase.report_ids), (*marks.report_keys, *erase.report_keys))


def _check_new(ids: Sequence[str], sources: Sequence[str], taken: TakenIds) -> None:
    """Take the ids of new reports; reject one already in the index (or earlier in the input),
    naming its file and line."""
    position = taken.take(ids)
    if position is None:
        return
    file, _, line = sources[position].rpartition(":")
    raise InputError(
        f"duplicate report id {ids[position]!r} (already in the index or earlier in the input)",
        file=file or None,
        line=int(line) if line.isdigit() else None,
        field="id",
    )


def _finish(
    pending: PendingGeneration,
    previous: tuple[Generation, Manifest] | None,
    gen: Generation,
    config: IndexConfig,
    components: dict[str, dict[str, Any]],
    next_key: int,
) -> None:
    """Write the manifest, last, so that only a complete generation has one.

    It lists the segments and records the size and checksum of every file, for ``check``
    (files hard-linked from ``previous`` keep the digest recorded there).
    """
    known = None if previous is None else (previous[0].path, previous[1].files)
    files = file_digests(gen.path, known)
    Manifest(pending.number, count(gen), config, components, next_key, files,
             gen.segments).write(gen.path)
