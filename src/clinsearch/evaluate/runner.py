"""Make TREC runs by searching an index with each method of the search registry.

A method spec is ``NAME`` or ``NAME:option=value,...`` (e.g. ``bm25:whole_report=true``,
``search.method_spec``); the options go to the retriever, so methods added to the registry
later work unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from clinsearch.index import IndexStore
from clinsearch.progress import track
from clinsearch.query_file import Query
from clinsearch.search.method_spec import MethodSpec
from clinsearch.search.session import session_for
from clinsearch.trec import Run

BATCH = 32


def index_runs(
    index: IndexStore,
    queries: Sequence[Query],
    methods: Sequence[MethodSpec],
    level: str = "report",
    top: int = 1000,
    progress: bool = True,
) -> list[Run]:
    """One run per method: the ``top`` hits at ``level`` for every query, ids as TREC docids."""
    runs = []
    session = session_for(index)
    for spec in methods:
        scores: dict[str, dict[str, float]] = {}
        batches = [queries[i : i + BATCH] for i in range(0, len(queries), BATCH)]
        label = f"searching with {spec.label} (batches of {BATCH} queries)"
        for batch in track(batches, label, total=len(batches), enabled=progress):
            results = session.search_many([q.text for q in batch], level, top, spec)
            for query, hits in zip(batch, results, strict=True):
                scores[query.qid] = {hit.id: hit.score for hit in hits}
        runs.append(Run(spec.label, scores, f"{index.path} --method {spec.label}"))
    return runs
