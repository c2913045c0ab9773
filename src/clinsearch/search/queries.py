"""Query files for batch search: `qid<TAB>query` lines, header optional, extra columns ignored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from clinsearch.errors import InputError
from clinsearch.user_files import read_user_bytes

_HEADER_IDS = {"qid", "query_id", "id", "topic"}
_HEADER_TEXTS = {"query", "text", "title"}


@dataclass(frozen=True, slots=True)
class Query:
    """One query of a batch: its id (one token, as TREC run files need) and its text."""

    qid: str
    text: str


def read_queries(path: str | Path) -> list[Query]:
    """Read a query file; malformed lines raise InputError naming file, line and field."""
    path = Path(path)
    raw = read_user_bytes(path)
    queries: list[Query] = []
    seen: dict[str, int] = {}
    for number, line_bytes in enumerate(raw.splitlines(), start=1):
        try:
            line = line_bytes.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            raise InputError("undecodable bytes (expected UTF-8)", file=path, line=number) from None
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) < 2:
            raise InputError("expected 'qid<TAB>query'", file=path, line=number)
        qid, text = fields[0].strip(), fields[1].strip()
        if not queries and not seen and _is_header(qid, text):
            seen[""] = number
            continue
        _check(path, number, qid, text, seen)
        seen[qid] = number
        queries.append(Query(qid, text))
    if not queries:
        raise InputError("no queries in file", file=path)
    return queries


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
