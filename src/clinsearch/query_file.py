"""Query files: `qid<TAB>query[<TAB>kind]` lines, header optional, extra columns ignored.

Batch search reads the first two columns; benchmarks also read ``kind``, the query's group
(e.g. ``positive``, ``negative``, ``core``, ``synonym``): when it is absent, queries of the form
"no M" count as ``negative`` and others as ``positive``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from clinsearch.errors import InputError
from clinsearch.exports import open_export
from clinsearch.user_files import read_user_bytes

COLUMNS = ("qid", "query", "kind")
NEGATION_PREFIX = "no "

_HEADER_IDS = {"qid", "query_id", "id", "topic"}
_HEADER_TEXTS = {"query", "text", "title"}


@dataclass(frozen=True, slots=True)
class Query:
    """One query: its id (one token, as TREC run files need), its text and, in a benchmark,
    the group it is reported in."""

    qid: str
    text: str
    kind: str = ""


def read_queries(path: str | Path) -> list[Query]:
    """Read a query file (``kind`` left empty); malformed lines raise InputError naming file,
    line and field."""
    return [query for query, _ in _read_rows(Path(path))[0]]


def _read_rows(path: Path) -> tuple[list[tuple[Query, list[str]]], list[str] | None]:
    """Each query of a query file with the stripped cells of its line, and the lower-cased
    cells of the header line (None when the file has none)."""
    raw = read_user_bytes(path)
    rows: list[tuple[Query, list[str]]] = []
    header: list[str] | None = None
    seen: dict[str, int] = {}
    for number, line_bytes in enumerate(raw.splitlines(), start=1):
        try:
            line = line_bytes.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            raise InputError("undecodable bytes (expected UTF-8)", file=path, line=number) from None
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) < 2:
            raise InputError("expected 'qid<TAB>query'", file=path, line=number)
        qid, text = cells[0], cells[1]
        if not rows and header is None and _is_header(qid, text):
            header = [c.lower() for c in cells]
            continue
        _check(path, number, qid, text, seen)
        seen[qid] = number
        rows.append((Query(qid, text), cells))
    if not rows:
        raise InputError("no queries in file", file=path)
    return rows, header


def _is_header(qid: str, text: str) -> bool:
    """Whether a first line names the columns rather than holding a query."""
    return qid.lower() in _HEADER_IDS and text.lower() in _HEADER_TEXTS


def _check(path: Path, number: int, qid: str, text: str, seen: dict[str, int]) -> None:
    """Reject an empty or repeated qid, a qid with spaces, or an empty query."""
    if not qid:
        raise InputError("empty query id", file=path, line=number, field="qid")
    if any(c.isspace() for c in qid):
        raise InputError(
            f"query id {qid!r} contains whitespace", file=path, line=number, field="qid"
        )
    if qid in seen:
        raise InputError(
            f"duplicate query id {qid!r} (first at line {seen[qid]})",
            file=path,
            line=number,
            field="qid",
        )
    if not text:
        raise InputError("empty query", file=path, line=number, field="query")


def polarity_kind(text: str) -> str:
    """``negative`` for a "no M" query, else ``positive`` ([Shi2022]'s two query forms)."""
    return "negative" if text.strip().lower().startswith(NEGATION_PREFIX) else "positive"


def read_benchmark_queries(path: str | Path) -> list[Query]:
    """Read a queries TSV (validated as by ``read_queries``); ``kind`` comes from the
    ``kind`` column (the third when there is no header) or is inferred with `polarity_kind`."""
    rows, header = _read_rows(Path(path))
    column = 2 if header is None else header.index("kind") if "kind" in header else len(header)
    return [Query(q.qid, q.text, (cells[column] if len(cells) > column else "")
                  or polarity_kind(q.text)) for q, cells in rows]


def write_queries(path: str | Path, queries: Iterable[Query], *, force: bool = False) -> None:
    """Write queries as a TSV with a ``qid, query, kind`` header, as an export (replaced only
    if ``force``)."""
    rows = ["\t".join(COLUMNS)]
    for q in queries:
        if any(c in q.text for c in "\t\n\r"):
            raise InputError(f"query {q.qid!r} contains a tab or line break")
        rows.append(f"{q.qid}\t{q.text}\t{q.kind}")
    with open_export(path, force=force) as out:
        out.writelines(row + "\n" for row in rows)
