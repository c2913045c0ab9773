"""The live index: the generation ``CURRENT`` names, loaded and warmed once, followed after
``add`` and ``delete`` without a restart.

A watcher thread polls ``CURRENT``; when it names a new generation, the new one is opened and
warmed in the background while requests keep using the old one, then swapped in. A request
that fails because its generation was removed under it is retried on the new one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from clinsearch.errors import ClinsearchError
from clinsearch.index.generations import current_generation
from clinsearch.index.report_view import SentenceFindings
from clinsearch.search.cohort import Cohort
from clinsearch.search.session import Index

log = logging.getLogger("clinsearch.server")
T = TypeVar("T")
WARM_QUERY = "no pneumothorax"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One generation, opened: the index, its cohort engine and its sentences' findings."""

    generation: str
    index: Index
    cohort: Cohort
    findings: SentenceFindings
    methods: tuple[str, ...]


def open_snapshot(path: Path) -> Snapshot:
    """Open the live generation of ``path`` and warm every search method and the cohort engine."""
    index = Index.open(path)
    methods = ("bm25", "concept") + (("dense", "hybrid") if "dense" in index.config.components
                                     else ())
    for method in methods:
        index.search(WARM_QUERY, level="report", top=10, method=method)
    cohort = Cohort(path)
    cohort.counts("pneumothorax")
    return Snapshot(index.generation.path.name, index, cohort,
                    SentenceFindings(index.generation), methods)


class LiveIndex:
    """Serves the newest generation of an index directory."""

    def __init__(self, path: str | Path, poll_seconds: float = 0.5) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._snapshot = open_snapshot(self.path)
        self._stop = threading.Event()
        self._poll = poll_seconds
        self._watcher = threading.Thread(target=self._watch, name="clinsearch-generation",
                                         daemon=True)

    @property
    def snapshot(self) -> Snapshot:
        """The newest loaded generation."""
        return self._snapshot

    def start(self) -> None:
        """Start following ``CURRENT``."""
        self._watcher.start()

    def stop(self) -> None:
        """Stop following ``CURRENT``."""
        self._stop.set()

    def refresh(self) -> Snapshot:
        """Load the generation ``CURRENT`` names, if it is not the one loaded."""
        with self._lock:
            live = current_generation(self.path).name
            if live != self._snapshot.generation:
                log.info("loading generation %s", live)
                self._snapshot = open_snapshot(self.path)
                log.info("serving generation %s", self._snapshot.generation)
            return self._snapshot

    def run(self, work: Callable[[Snapshot], T]) -> T:
        """``work`` on the newest snapshot, retried once if its generation vanished meanwhile."""
        snapshot = self._snapshot
        try:
            return work(snapshot)
        except (ClinsearchError, OSError):
            if current_generation(self.path).name == snapshot.generation:
                raise
        return work(self.refresh())

    def _watch(self) -> None:
        while not self._stop.wait(self._poll):
            try:
                self.refresh()
            except Exception:  # a half-made change is retried on the next poll
                log.exception("could not load the new generation; still serving %s",
                              self._snapshot.generation)
