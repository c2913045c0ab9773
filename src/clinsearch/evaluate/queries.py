"""Benchmark query files: tab-separated ``qid, query, kind`` with an optional header line.

``kind`` names the query's group (e.g. ``positive``, ``negative``, ``core``, ``synonym``);
when it is absent, queries of the form "no M" count as ``negative`` and others as ``positive``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from clinsearch.errors import InputError
from clinsearch.evaluate.files import atomic_write_lines
from clinsearch.search import queries as search_queries

COLUMNS = ("qid", "query", "kind")
NEGATION_PREFIX = "no "


@dataclass(frozen=True, slots=True)
class Query:
    """One benchmark query and the group it is reported in."""

    qid: str
    text: str
    kind: str = ""


def polarity_kind(text: str) -> str:
    """``negative`` for a "no M" query, else ``positive`` (paper 000's two query forms)."""
    return "negative" if text.strip().lower().startswith(NEGATION_PREFIX) else "positive"


def read_queries(path: str | Path) -> list[Query]:
    """Read a queries TSV (validated by the batch-search reader); ``kind`` comes from the
    ``kind`` column (the third when there is no header) or is inferred with `polarity_kind`."""
    queries = search_queries.read_queries(path)
    kinds = _kinds(Path(path), queries[0].qid)
    return [Query(q.qid, q.text, kinds.get(q.qid) or polarity_kind(q.text)) for q in queries]


def _kinds(path: Path, first_qid: str) -> dict[str, str]:
    """``qid -> kind`` from the kind column of a query file the search reader accepted; a first
    row that is not the first query is the header the search reader skipped."""
    rows = [
        [c.strip() for c in line.split("\t")]
        for line in path.read_text(encoding="utf-8-sig").splitlines()
        if line.strip()
    ]
    column = 2
    if rows[0][0] != first_qid:
        header = [c.lower() for c in rows.pop(0)]
        column = header.index("kind") if "kind" in header else len(header)
    return {r[0]: r[column] for r in rows if len(r) > column}


def write_queries(path: str | Path, queries: Iterable[Query]) -> None:
    """Write queries as a TSV with a ``qid, query, kind`` header."""
    rows = ["\t".join(COLUMNS)]
    for q in queries:
        if any(c in q.text for c in "\t\n\r"):
            raise InputError(f"query {q.qid!r} contains a tab or line break")
        rows.append(f"{q.qid}\t{q.text}\t{q.kind}")
    atomic_write_lines(path, rows)
