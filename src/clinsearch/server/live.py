"""The live index: the generation ``CURRENT`` names, loaded and warmed once, followed after
``add`` and ``delete`` without a restart.

A watcher thread polls ``CURRENT``; when it names a new generation, the new one is opened and
warmed in the background while requests keep using the old one, then swapped in. Each snapshot
holds its generation's lease (writers leave it on disk) until the last request using it ends.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from clinsearch.errors import ClinsearchError
from clinsearch.index.generations import current_generation
from clinsearch.index.report_view import SentenceFindings
from clinsearch.models.encoder import load_encoder
from clinsearch.models.threads import one_blas_thread
from clinsearch.search.cohort import Cohort
from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.concept.tools import warm_term_vectors
from clinsearch.search.session import Index
from clinsearch.server.memory_guard import MemoryGuard
from clinsearch.terminal import printable
from clinsearch.user_files import describe_failure

log = logging.getLogger("clinsearch.server")
T = TypeVar("T")
WARM_QUERY = "no pneumothorax"
WARM_COHORT = "pneumothorax"
FIRST_METHOD = "bm25"  # warmed before the server answers: it needs no lexicon tools nor model


@dataclass(eq=False)
class Snapshot:
    """One generation, opened: the index, its sentences' findings and its section names, and
    its cohort engine once built (``cohort``); ``active`` counts the requests using it,
    ``retired`` is set once a newer one serves."""

    generation: str
    index: Index
    findings: SentenceFindings
    methods: tuple[str, ...]
    sections: tuple[str, ...]
    active: int = 0
    retired: bool = False
    _cohort: Cohort | None = field(default=None, repr=False)
    _cohort_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def cohort(self) -> Cohort:
        """The cohort engine, built on first need by whichever thread asks first (the warm-up
        or a request); the others wait for it (it builds the concept tools: seconds)."""
        with self._cohort_lock:
            if self._cohort is None:
                self._cohort = Cohort(self.index)
            return self._cohort


def open_snapshot(path: Path, *, warm_all: bool = True) -> Snapshot:
    """Open the live generation of ``path`` and warm every search method and the cohort
    engine; ``warm_all=False`` warms BM25 only and leaves the rest to
    ``warm_lexicon_and_models``, so a server answers before spaCy, the lexicon tools and the
    dense encoder have loaded."""
    index = Index.open(path)
    try:
        dense = "dense" in index.config.components
        # hybrid fuses BM25 and concept search, and dense retrieval when the index has it
        methods = (FIRST_METHOD, "concept", *(("dense",) if dense else ()), "hybrid")
        _warm_search(index, FIRST_METHOD)
        # concept search reads the concepts component: an index without it is refused here,
        # at start, not on a first search
        index.component("concepts")
        # the section names come from the sentences' section column: no concept tools needed
        sections = tuple(CohortArrays.from_index(index).section_names())
        snapshot = Snapshot(index.generation.path.name, index,
                            SentenceFindings(index.generation), methods, sections)
        if warm_all:
            warm_lexicon_and_models(snapshot)
        return snapshot
    except BaseException:
        index.close()
        raise


def warm_lexicon_and_models(snapshot: Snapshot) -> None:
    """Warm what ``open_snapshot(warm_all=False)`` left: the concept tools (spaCy, the
    annotator, term vectors), concept search and the cohort engine, then the dense encoder and
    the methods that read it. Requests needing any of these meanwhile wait for it (the tools
    and the cohort are built once, under locks; the encoder loads outside the search session's
    lock: other methods answer meanwhile)."""
    index = snapshot.index
    terms = warm_term_vectors(index)  # computed here (once, cached), not in a request
    log.info("term vectors for concept search ready (%d lexicon terms)", terms)
    _warm_search(index, "concept")
    snapshot.cohort().counts(WARM_COHORT)
    log.info("concept search and cohorts ready")
    dense = "dense" in snapshot.methods
    if dense:
        load_encoder(index.component("dense").meta.model_path)
        _warm_search(index, "dense")
    _warm_search(index, "hybrid")  # fuses all the methods above
    if dense:
        log.info("dense retrieval ready")


def _warm_search(index: Index, method: str) -> None:
    """One search by ``method``, so its retriever and what it reads are ready."""
    index.search(WARM_QUERY, level="report", top=10, method=method)


class LiveIndex:
    """Serves the newest generation of an index directory."""

    def __init__(self, path: str | Path, poll_seconds: float = 0.5) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # guards the swap and the use counts (held briefly)
        self._reload = threading.Lock()  # one reload at a time
        self._snapshot = open_snapshot(self.path, warm_all=False)
        one_blas_thread()  # requests run side by side
        self._stop = threading.Event()
        self._poll = poll_seconds
        self.guard: MemoryGuard | None = None  # stops requests that take too much memory
        self._watcher = threading.Thread(target=self._watch, name="clinsearch-generation",
                                         daemon=True)
        self._warmer = threading.Thread(target=self._warm, name="clinsearch-warm", daemon=True)
        self.warm = threading.Event()  # set once the background warm-up has ended

    @property
    def snapshot(self) -> Snapshot:
        """The newest loaded generation (for metadata; ``run`` for reading data)."""
        return self._snapshot

    def start(self) -> None:
        """Start following ``CURRENT`` and warming the lexicon tools and models in the
        background."""
        self._warmer.start()
        self._watcher.start()

    def _warm(self) -> None:
        """``warm_lexicon_and_models`` on the first snapshot, holding it as a request does
        (never under the memory guard: tools and models load once per process, not per
        request)."""
        try:
            with self._lease(self._snapshot) as snapshot:
                warm_lexicon_and_models(snapshot)
        except Exception as exc:  # the first request needing it then loads it, or says why not
            log.error("could not finish warming (%s)", _reason(exc))
        finally:
            self.warm.set()

    def stop(self) -> None:
        """Stop following ``CURRENT`` and release the generation."""
        self._stop.set()
        with self._lock:
            self._retire(self._snapshot)

    def refresh(self) -> Snapshot:
        """Load the generation ``CURRENT`` names, if it is not the one loaded."""
        with self._reload:
            if current_generation(self.path).name == self._snapshot.generation:
                return self._snapshot
            fresh = open_snapshot(self.path)
            with self._lock:
                old, self._snapshot = self._snapshot, fresh
                self._retire(old)
            log.info("serving generation %s", fresh.generation)
            return fresh

    def run(self, work: Callable[[Snapshot], T]) -> T:
        """``work`` on the newest snapshot, retried once on a newer one if it fails while a
        newer generation has been committed."""
        try:
            return self._on(self._snapshot, work)
        except (ClinsearchError, OSError):
            if current_generation(self.path).name == self._snapshot.generation:
                raise
        return self._on(self.refresh(), work)

    def _on(self, snapshot: Snapshot, work: Callable[[Snapshot], T]) -> T:
        with self._lease(snapshot) as held, (
                self.guard.request() if self.guard else contextlib.nullcontext()):
            return work(held)

    @contextlib.contextmanager
    def _lease(self, snapshot: Snapshot) -> Iterator[Snapshot]:
        """``snapshot`` (the newest if it is retired) kept open while in use."""
        with self._lock:
            snapshot = self._snapshot if snapshot.retired else snapshot
            snapshot.active += 1
        try:
            yield snapshot
        finally:
            with self._lock:
                snapshot.active -= 1
                if snapshot.retired and snapshot.active == 0:
                    snapshot.index.close()

    @staticmethod
    def _retire(snapshot: Snapshot) -> None:
        """Mark ``snapshot`` replaced; close it now if no request uses it (caller holds lock)."""
        snapshot.retired = True
        if snapshot.active == 0:
            snapshot.index.close()

    def _watch(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self.refresh()
            except Exception as exc:  # a half-made change is retried on the next poll
                log.error("could not load the new generation (%s); still serving %s",
                          _reason(exc), self._snapshot.generation)


def _reason(exc: Exception) -> str:
    """Why a background load failed, in one line that holds no report text."""
    reason = (str(exc) if isinstance(exc, ClinsearchError)
              else describe_failure(exc) or type(exc).__name__)
    return printable(reason, one_line=True)
