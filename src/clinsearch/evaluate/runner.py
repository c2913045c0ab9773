"""Make TREC runs by searching an index with each method of the search registry.

A method spec is ``NAME`` or ``NAME:option=value,...`` (e.g. ``bm25:whole_report=true``); the
options go to the retriever, so methods added to the registry later work unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clinsearch.errors import InputError
from clinsearch.index import Index
from clinsearch.progress import track
from clinsearch.query_file import Query
from clinsearch.search.session import session_for
from clinsearch.trec import Run

BATCH = 32


@dataclass(frozen=True)
class MethodSpec:
    """A search method and its options; ``label`` (the spec as written) names the run."""

    label: str
    method: str
    options: dict[str, Any] = field(default_factory=dict)


def _value(text: str) -> Any:
    """An option value: JSON literal (true, 3, 0.5, "x") where it parses, else the bare string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_method(spec: str) -> MethodSpec:
    """Parse ``NAME[:key=value,...]``; raises InputError on a malformed option."""
    name, _, rest = spec.strip().partition(":")
    if not name:
        raise InputError(f"empty method name in {spec!r}", field="--method")
    options: dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(
                f"option {item!r} of method {spec!r} is not key=value", field="--method"
            )
        options[key.strip()] = _value(value.strip())
    return MethodSpec(spec.strip(), name, options)


def index_runs(
    index: Index,
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
            results = session.search_many(
                [q.text for q in batch], level, top, spec.method, **spec.options
            )
            for query, hits in zip(batch, results, strict=True):
                scores[query.qid] = {hit.id: hit.score for hit in hits}
        runs.append(Run(spec.label, scores, f"{index.path} --method {spec.label}"))
    return runs
