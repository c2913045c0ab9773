"""The ``Index`` store: build, open, add to and delete from an index directory, transactionally.

Searching is the next stage's job (``clinsearch.search.session``); ``clinsearch.Index`` is this
store with a search session attached.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cache, cached_property
from itertools import chain, islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clinsearch.corpus.model import Report, SegmentedReport
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.index.component import Change, Generation
from clinsearch.index.config import IndexConfig
from clinsearch.index.generations import (
    Lease,
    PendingGeneration,
    current_generation,
    lease_current,
    new_generation,
)
from clinsearch.index.integrity import file_digests
from clinsearch.index.manifest import Manifest
from clinsearch.index.parts import Parts
from clinsearch.index.store import Store
from clinsearch.index.tables import TableWriter, count
from clinsearch.parallel import Workers
from clinsearch.progress import track
from clinsearch.trust import allow
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.corpus.segment import Segmenter
    from clinsearch.index.report_view import ReportView

_BATCH = 512


class Index:
    """A clinsearch index directory, opened at its live generation.

    An open Index keeps reading the generation it opened (a snapshot: it holds a lease, so no
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
            f"Index({str(self.path)!r}, generation={self.manifest.generation},"
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
    ) -> Index:
        """Index ``reports`` into ``path`` (a new or empty folder, or an index to replace).

        Reports stream through in batches: segmentation and finding extraction run on
        ``workers`` processes, and memory does not grow with the number of reports.
        """
        config = (config or IndexConfig()).with_paths(lambda value, _: allow(value))
        root = Path(path)
        with new_generation(root) as pending, Workers(workers) as pool:
            gen = Generation(pending.path, progress, pool)
            added = _write_tables(gen, None, _segmented(reports, progress, pool), set(), 0)
            if not added:
                raise ClinsearchError("no reports to index")
            components = {c.name: c.build(gen) for c in config.make()}
            _finish(pending, gen, config, components, next_key=len(added))
        return cls.open(root)

    @classmethod
    def build_from_parts(
        cls, parts: Parts, path: str | Path, config: IndexConfig | None = None,
        progress: bool = True,
    ) -> Index:
        """Index tables computed in parts (``index.parts``, e.g. by Spark) into ``path``: one
        generation, the same files ``build`` writes for the same reports in the same order."""
        config = (config or IndexConfig()).with_paths(lambda value, _: allow(value))
        root = Path(path)
        with new_generation(root) as pending:
            gen = Generation(pending.path, progress)
            added = _write_part_tables(gen, None, parts, set())
            if not added:
                raise ClinsearchError("no reports to index")
            components = {
                c.name: c.build_from(gen, parts.tables(c.name)) if parts.has(c.name)
                else c.build(gen)
                for c in config.make()
            }
            _finish(pending, gen, config, components, max(k for _, k in added) + 1)
        return cls.open(root)

    @classmethod
    def open(cls, path: str | Path) -> Index:
        """Open the live generation of the index at ``path`` (read-only access is enough)."""
        root = Path(path)
        lease = lease_current(root)
        try:
            manifest = Manifest.read(lease.path)
        except BaseException:
            lease.release()
            raise
        return cls(root, Generation(lease.path), manifest, lease)

    def close(self) -> None:
        """Drop cached readers and the lease, so that writers may remove this generation."""
        self._drop_readers()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def reopen(self) -> Index:
        """Move to the live generation (seeing other processes' commits); returns self."""
        fresh = Index.open(self.path)
        self.close()
        self.generation, self.manifest, self._lease = fresh.generation, fresh.manifest, fresh._lease
        return self

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> IndexConfig:
        """The configuration the index was built with."""
        return self.manifest.config

    @cached_property
    def store(self) -> Store:
        """Ids, groups and sentence texts of the live generation, loaded on first use."""
        with self._replaced_as_error():
            return Store(self.generation)

    def component(self, name: str) -> Any:
        """The query-time reader of component ``name`` (e.g. ``"lexical"``)."""
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
        """Add new reports (ids must not be in the index yet); returns how many were added."""
        self._ensure_live()
        prev, first_key = self.generation, self.manifest.next_report_key
        with new_generation(self.path, expect_live=prev.path) as pending, Workers(workers) as pool:
            gen = Generation(pending.path, progress, pool)
            known = set(self.store.report_ids)
            stream = _segmented(reports, progress, pool)
            added = _write_tables(gen, prev, stream, known, first_key)
            if not added:
                raise ClinsearchError("no reports to add")
            change = Change(tuple(i for i, _ in added), tuple(k for _, k in added))
            components = {c.name: c.add(prev, gen, change) for c in self.config.make()}
            _finish(pending, gen, self.config, components, first_key + len(added))
            self.close()  # our own lease must not keep the replaced generation on disk
        self.reopen()
        return len(added)

    def add_parts(self, parts: Parts, progress: bool = True) -> int:
        """``add`` for tables computed in parts with keys from 0 (``index.parts``, e.g. by
        Spark); returns how many reports were added."""
        self._ensure_live()
        prev, first_key = self.generation, self.manifest.next_report_key
        parts = replace(parts, first_key=first_key)
        with new_generation(self.path, expect_live=prev.path) as pending:
            gen = Generation(pending.path, progress)
            added = _write_part_tables(gen, prev, parts, set(self.store.report_ids))
            if not added:
                raise ClinsearchError("no reports to add")
            change = Change(tuple(i for i, _ in added), tuple(k for _, k in added))
            components = {
                c.name: c.add_from(prev, gen, change, parts.tables(c.name))
                if parts.has(c.name) else c.add(prev, gen, change)
                for c in self.config.make()
            }
            _finish(pending, gen, self.config, components, max(k for _, k in added) + 1)
            self.close()  # our own lease must not keep the replaced generation on disk
        self.reopen()
        return len(added)

    def delete(self, report_ids: Iterable[str]) -> int:
        """Delete reports by id; every id must be in the index. Returns how many were deleted."""
        self._ensure_live()
        ids = list(dict.fromkeys(report_ids))
        if not ids:
            raise ClinsearchError("no report ids to delete")
        rows = self.store.row_by_report_id
        unknown = [i for i in ids if i not in rows]
        if unknown:
            shown = ", ".join(repr(i) for i in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
            raise InputError(f"{len(unknown)} id(s) not in the index: {shown}", field="ids")
        keys = tuple(int(self.store.report_keys[rows[i]]) for i in ids)
        change = Change(tuple(ids), keys)
        prev = self.generation
        with new_generation(self.path, expect_live=prev.path) as pending:
            gen = Generation(pending.path)
            writer = TableWriter(gen.path)
            try:
                writer.copy(prev, drop_keys=keys)
            finally:
                writer.close()
            components = {c.name: c.delete(prev, gen, change) for c in self.config.make()}
            _finish(pending, gen, self.config, components, self.manifest.next_report_key)
            self.close()  # our own lease must not keep the replaced generation on disk
        self.reopen()
        return len(ids)

    def report(self, report_id: str) -> ReportView:
        """The report ``report_id`` with its sections, sentences and findings."""
        from clinsearch.index.report_view import read_report_view

        with self._replaced_as_error():
            row = self.store.row_by_report_id.get(report_id)
            key = None if row is None else int(self.store.report_keys[row])
            return read_report_view(self.generation, report_id, key)

    def level_size(self, level: Level) -> int:
        """How many sentences, reports, visits or patients the index holds (at least 1)."""
        counts = self.manifest.counts
        size = {"sentence": counts.sentences, "report": counts.reports,
                "visit": counts.visits, "patient": counts.patients}[level]
        return max(1, size)

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
        self.__dict__.pop("store", None)


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
    for batch, done in workers.map(segment_reports, batches, send=_raw_reports):
        segmented = iter(done)
        yield from (next(segmented) if isinstance(item, Report) else item for item in batch)


def _raw_reports(batch: list[Report | SegmentedReport]) -> list[Report]:
    """The reports of a batch that still need segmenting."""
    return [item for item in batch if isinstance(item, Report)]


def segment_reports(reports: list[Report]) -> list[SegmentedReport]:
    """Segment reports (runs in a worker process when there are several)."""
    if not reports:
        return []
    return list(_segmenter().segment_many(reports))


@cache
def _segmenter() -> Segmenter:
    """One segmenter per process."""
    from clinsearch.corpus.segment import Segmenter  # only needed for raw reports

    return Segmenter()


def _write_tables(
    gen: Generation,
    prev: Generation | None,
    reports: Iterable[SegmentedReport],
    known: set[str],
    first_key: int,
) -> list[tuple[str, int]]:
    """Write the core tables (``prev``'s rows, then ``reports``); returns the new (id, key)s.

    Raises InputError, naming where the report was read, for an id already indexed or seen.
    """
    added: list[tuple[str, int]] = []
    writer = TableWriter(gen.path)
    try:
        if prev is not None:
            writer.copy(prev)
        stream = iter(reports)
        while batch := list(islice(stream, _BATCH)):
            keyed = []
            for seg in batch:
                _check_new(seg.report.id, seg.report.source, known)
                keyed.append((first_key + len(added), seg))
                added.append((seg.report.id, first_key + len(added)))
            writer.write(keyed)
    finally:
        writer.close()
    return added


def _write_part_tables(
    gen: Generation, prev: Generation | None, parts: Parts, known: set[str]
) -> list[tuple[str, int]]:
    """``_write_tables`` for tables computed in parts (already segmented and keyed)."""
    added: list[tuple[str, int]] = []
    writer = TableWriter(gen.path)
    try:
        if prev is not None:
            writer.copy(prev)
        for reports, sentences in parts.core():
            ids, keys, sources = (reports.column(c).to_pylist() for c in ("id", "key", "source"))
            for report_id, key, source in zip(ids, keys, sources, strict=True):
                _check_new(report_id, source, known)
                added.append((report_id, key))
            writer.append(reports, sentences)
    finally:
        writer.close()
    return added


def _check_new(report_id: str, source: str, known: set[str]) -> None:
    """Reject a report whose id is already in the index (or earlier in the same input)."""
    if report_id in known:
        file, _, line = source.rpartition(":")
        raise InputError(
            f"duplicate report id {report_id!r} (already in the index or earlier in the input)",
            file=file or None,
            line=int(line) if line.isdigit() else None,
            field="id",
        )
    known.add(report_id)


def _finish(
    pending: PendingGeneration,
    gen: Generation,
    config: IndexConfig,
    components: dict[str, dict[str, Any]],
    next_key: int,
) -> None:
    """Write the manifest, last, so that only a complete generation has one.

    It records the size and checksum of every file, for ``check``.
    """
    files = file_digests(gen.path)
    Manifest(pending.number, count(gen), config, components, next_key, files).write(gen.path)
