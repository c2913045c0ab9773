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
    """Read a queries TSV; ``kind`` is taken from its column or inferred with `polarity_kind`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", file=path) from None
    queries: list[Query] = []
    seen: dict[str, int] = {}
    columns = COLUMNS
    first = True
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        cols = [c.strip() for c in line.split("\t")]
        if first and cols[0].lower() == "qid":
            columns = tuple(c.lower() for c in cols)
            if "query" not in columns:
                raise InputError("header has no 'query' column", file=path, line=number)
            first = False
            continue
        first = False
        row = dict(zip(columns, cols, strict=False))
        qid, query = row.get("qid", ""), row.get("query", "")
        if not qid:
            raise InputError("empty query id", file=path, line=number, field="qid")
        if not query:
            raise InputError(
                "no query text (expected qid<TAB>query[<TAB>kind])",
                file=path,
                line=number,
                field="query",
            )
        if qid in seen:
            raise InputError(
                f"query id {qid!r} already used on line {seen[qid]}",
                file=path,
                line=number,
                field="qid",
            )
        seen[qid] = number
        queries.append(Query(qid, query, row.get("kind", "") or polarity_kind(query)))
    if not queries:
        raise InputError("no queries", file=path)
    return queries


def write_queries(path: str | Path, queries: Iterable[Query]) -> None:
    """Write queries as a TSV with a ``qid, query, kind`` header."""
    rows = ["\t".join(COLUMNS)]
    for q in queries:
        if any(c in q.text for c in "\t\n\r"):
            raise InputError(f"query {q.qid!r} contains a tab or line break")
        rows.append(f"{q.qid}\t{q.text}\t{q.kind}")
    atomic_write_lines(path, rows)
