"""The live index answers BM25 before its lexicon tools and dense encoder have loaded, warms them
in the background, and requests needing them meanwhile wait for them (built once)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report
from clinsearch.models import encoder
from clinsearch.search.concept import tools
from clinsearch.search.concept.tools import warm_term_vectors
from clinsearch.server.live import LiveIndex

REPORTS = [
    Report(id="r1", text="FINDINGS: Small right pleural effusion.", patient_id="p1"),
    Report(id="r2", text="IMPRESSION: No pneumothorax. Heart size normal.", patient_id="p2"),
    Report(id="r3", text="FINDINGS: Enlarged cardiac silhouette.", patient_id="p3"),
]


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small index with every component, dense vectors included."""
    path = tmp_path_factory.mktemp("live") / "idx"
    components = ("bm25", "findings", "concepts", "dense")
    Index.build(REPORTS, path, IndexConfig(components=components), progress=False).close()
    return path


@contextmanager
def held_elsewhere(lock: threading.RLock) -> Iterator[None]:
    """``lock`` held by another thread (a re-entrant lock held by the test's own thread would
    let the test's own calls through)."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    taken.wait()
    try:
        yield
    finally:
        release.set()
        holder.join()


def test_bm25_answers_before_the_lexicon_tools_and_others_wait_for_them(index_path: Path) -> None:
    live: LiveIndex | None = None
    pool = ThreadPoolExecutor(2)
    try:
        with held_elsewhere(tools._BUILDING):  # no concept tools are built (or found) meanwhile
            live = LiveIndex(index_path)  # opening needs no concept tools
            live.start()
            hits = live.run(lambda s: s.index.search("pleural effusion", method="bm25"))
            assert hits[0].report_id == "r1"
            assert live.snapshot.sections == ("findings", "impression")  # as /api/info shows
            concept = pool.submit(live.run, lambda s: s.index.search("no pneumothorax",
                                                                     method="concept"))
            cohort = pool.submit(live.run, lambda s: (s.cohort(),
                                                      s.cohort().counts("pleural effusion")))
            assert not wait([concept, cohort], timeout=1).done  # they wait for the tools
            assert not live.warm.is_set()  # /api/info says "warming": true
        assert concept.result(120)[0].report_id == "r2"
        built, counts = cohort.result(120)
        assert counts["report"] == 1
        assert live.warm.wait(120)
        assert live.run(lambda s: s.cohort()) is built  # built once, by whichever came first
        hits = live.run(lambda s: s.index.search("fluid around the lung", method="hybrid"))
        assert "dense" in hits[0].explanation["ranks"]
    finally:
        pool.shutdown()
        if live is not None:
            live.stop()


def test_search_answers_while_the_encoder_loads_and_dense_is_warm_after(index_path: Path) -> None:
    live = LiveIndex(index_path)
    try:
        # term vectors missing from the disk cache would need the encoder held below
        warm_term_vectors(live.snapshot.index)
        with encoder._LOADING:  # no encoder loads (or is found loaded) while this is held
            live.start()
            for method in ("bm25", "concept"):
                hits = live.run(lambda s, m=method: s.index.search("pleural effusion", method=m))
                assert hits[0].report_id == "r1"
            assert live.run(lambda s: s.cohort().counts("pleural effusion"))["report"] == 1
            assert not live.warm.is_set()  # the background load waits for the lock
        assert live.warm.wait(120)
        hits = live.run(lambda s: s.index.search("fluid around the lung", method="hybrid"))
        assert "dense" in hits[0].explanation["ranks"]
    finally:
        live.stop()


def test_the_live_index_runs_blas_on_one_thread(index_path: Path) -> None:
    """Requests run side by side: a BLAS library's second thread would only spin, idle, on a
    core another request needs. The process-wide BLAS libraries loaded (NumPy's OpenBLAS)
    are set to one thread as the live index opens."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=2, user_api="blas"):  # this test's process: restored after
        live = LiveIndex(index_path)
        try:
            shared = [i for i in threadpool_info() if i.get("threading_layer") == "pthreads"]
            assert shared and {i["num_threads"] for i in shared} == {1}
        finally:
            live.stop()
