"""Search output: a Rich table with highlighted sentences, JSON, or TREC run lines."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from clinsearch.hit import Hit
from clinsearch.search.tiers import ASSERTED, STATED, TierCount, trigger_words
from clinsearch.terminal import printable, printable_runs
from clinsearch.trec import run_line
from clinsearch.units import Level

OUTPUT_FORMATS = ("table", "json", "trec")
HIGHLIGHT_STYLE = "bold yellow"
_ID_COLUMNS: dict[str, tuple[str, ...]] = {
    "sentence": ("sentence_id", "report_id", "patient_id"),
    "report": ("report_id", "visit_id", "patient_id"),
    "visit": ("visit_id", "patient_id", "report_id"),
    "patient": ("patient_id", "report_id"),
}


def highlighted(hit: Hit) -> Text:
    """The hit's sentence with its matched words styled and control characters escaped."""
    text = Text()
    for piece, marked in printable_runs(hit.sentence, list(hit.highlights)):
        text.append(piece, style=HIGHLIGHT_STYLE if marked else None)
    return text


def hits_table(hits: Sequence[Hit], level: Level, title: str | None = None,
               empty_reason: str = "", tiers: Sequence[TierCount] = ()) -> Table:
    """A table of rank, ids, score and the best sentence with matched terms highlighted, and
    each hit's tier with its trigger where the method ranks by tiers; the caption gives the
    units per tier (``tiers``), or with no hits says why (``empty_reason``)."""
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("rank", justify="right")
    columns = _ID_COLUMNS[level]
    for name in columns:
        table.add_column(name.removesuffix("_id") if name != columns[0] else level)
    table.add_column("score", justify="right")
    table.add_column("best sentence", ratio=1)
    # Methods that say which query parts a hit matched (concept search) get a column for it.
    why = any("summary" in hit.explanation for hit in hits)
    if why:
        table.add_column("matched", ratio=1)
    # a tier column when some hit is weaker than stated now (the matched column explains those)
    tiered = any(hit.explanation.get("tier", STATED) not in ASSERTED for hit in hits)
    if tiered:
        table.add_column("tier", ratio=1)
    for hit in hits:
        ids = [Text(printable(str(getattr(hit, name)), one_line=True)) for name in columns]
        cells = [str(hit.rank), *ids, f"{hit.score:.3f}", highlighted(hit)]
        if why:
            cells.append(Text(printable(str(hit.explanation.get("summary", "")))))
        if tiered:
            cells.append(Text(printable(trigger_words(hit))))
        table.add_row(*cells)
    if tiers:
        table.caption = "tiers: " + " · ".join(t.line(level) for t in tiers)
    elif not hits:
        table.caption = f"no matches: {empty_reason}" if empty_reason else "no matches"
    return table


def json_record(
    qid: str, query: str, level: Level, method: str, hits: Sequence[Hit], empty_reason: str = "",
    tiers: Sequence[TierCount] = (),
) -> dict[str, Any]:
    """One query's results as a JSON-ready dict (with ``no_hits_reason`` when there are none,
    and the units per tier, ``tiers``, where the method ranks by tiers)."""
    record: dict[str, Any] = {
        "qid": qid,
        "query": query,
        "level": level,
        "method": method,
        "hits": [hit.to_dict() for hit in hits],
    }
    if tiers:
        record["tiers"] = [t.to_dict() for t in tiers]
    if not hits and empty_reason:
        record["no_hits_reason"] = empty_reason
    return record


def json_text(record: dict[str, Any], *, lines: bool) -> str:
    """A JSON document (indented) or a JSON line (for batches)."""
    return json.dumps(record, ensure_ascii=False, indent=None if lines else 2)


def trec_lines(qid: str, hits: Sequence[Hit], tag: str) -> list[str]:
    """TREC run lines ``qid Q0 docid rank score tag`` (docid: the id at the hit's level)."""
    return [run_line(qid, hit.id, hit.rank, hit.score, tag) for hit in hits]
