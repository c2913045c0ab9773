"""Report filters on any retriever: date range, report type, section and finding context.

A filtered search ranks sentences (or reports, when only report fields are filtered), keeps
those that pass, and lifts them to the requested level as the unfiltered search would: a report
scores as its best passing sentence, a visit and a patient as their best passing report. The
wrapped retriever is asked for more results until ``top`` units pass or it has no more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from clinsearch.errors import ClinsearchError
from clinsearch.hit import Hit
from clinsearch.search.cohort.syntax import fold
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index import IndexStore

CONTEXTS = ("current", "historical", "hypothetical", "indication")
_UNIT_ID = {"sentence": "sentence_id", "report": "report_id", "visit": "visit_id",
            "patient": "patient_id"}


@dataclass(frozen=True, slots=True)
class ReportFilters:
    """What a hit's report and best sentence must satisfy; ``None`` means no restriction.

    ``date_from``/``date_to`` are inclusive ISO dates (reports without a date fail a date
    filter); ``section`` is a section name such as ``impression``; type and section compare as
    cohort filters do, without case, spaces or punctuation (``syntax.fold``); ``context`` keeps
    sentences holding a finding that is ``current`` (no context flag), ``historical``,
    ``hypothetical`` or ``indication``.
    """

    date_from: str | None = None
    date_to: str | None = None
    section: str | None = None
    report_type: str | None = None
    context: str | None = None

    def __post_init__(self) -> None:
        if self.context is not None and self.context not in CONTEXTS:
            raise ClinsearchError(
                f"unknown context {self.context!r}; choose one of {', '.join(CONTEXTS)}"
            )
        for name in ("date_from", "date_to"):
            value = getattr(self, name)
            if value is not None and not _is_iso_date(value):
                raise ClinsearchError(f"{name} must be a date YYYY-MM-DD (got {value!r})")

    @property
    def active(self) -> bool:
        """Whether any filter is set."""
        return any(getattr(self, name) is not None for name in self.__slots__)

    @property
    def per_sentence(self) -> bool:
        """Whether a sentence field (section, context) is filtered."""
        return self.section is not None or self.context is not None


class FilteredRetriever:
    """Wraps a retriever: only sentences and reports that pass ``filters`` count."""

    def __init__(self, index: IndexStore, base: Any, filters: ReportFilters) -> None:
        self.base = base
        self.filters = filters
        self.unit: Level = "sentence" if filters.per_sentence else "report"
        self.allowed = allowed_ids(index, filters, self.unit)

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` whose sentence or report passes."""
        return self.search_many([query], level, top)[0]

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """Filter each query's hits, fetching deeper while too few pass."""
        return [self._search(query, level, top) for query in queries]

    def _search(self, query: str, level: Level, top: int) -> list[Hit]:
        unit = "sentence" if self.unit == "sentence" or level == "sentence" else "report"
        key = _UNIT_ID[unit]
        depth = 4 * top
        while True:
            hits = self.base.search(query, unit, depth)
            kept = _lift([h for h in hits if getattr(h, key) in self.allowed], level, top)
            if len(kept) >= top or len(hits) < depth:
                return kept
            depth *= 4


def _lift(hits: list[Hit], level: Level, top: int) -> list[Hit]:
    """The first (best) hit of each unit of ``level``, re-ranked, at most ``top``."""
    key = _UNIT_ID[level]
    seen: set[tuple[str, ...]] = set()
    out: list[Hit] = []
    for hit in hits:
        unit = (hit.patient_id, getattr(hit, key))
        if unit in seen:
            continue
        seen.add(unit)
        out.append(replace(hit, rank=len(out) + 1, level=level, id=getattr(hit, key)))
        if len(out) == top:
            break
    return out


def allowed_ids(index: IndexStore, filters: ReportFilters, unit: Level) -> set[str]:
    """Ids of the ``unit`` rows (sentences or reports) that pass ``filters``."""
    gen = index.generation
    reports = gen.table("reports", ["id", "type", "date"]).to_pylist()
    wanted_type = None if filters.report_type is None else fold(filters.report_type)
    report_ok = {
        r["id"] for r in reports
        if (wanted_type is None or fold(r["type"] or "") == wanted_type)
        and (filters.date_from is None or (r["date"] or "") >= filters.date_from)
        and (filters.date_to is None or (r["date"] or "9999") <= filters.date_to)
    }  # fmt: skip
    if unit == "report":
        return report_ok
    sentences = gen.table("sentences", ["id", "report_id", "section"])
    wanted_section = None if filters.section is None else fold(filters.section)
    allowed = {
        s["id"] for s in sentences.to_pylist()
        if s["report_id"] in report_ok
        and (wanted_section is None or fold(s["section"] or "") == wanted_section)
    }  # fmt: skip
    if filters.context is not None:
        allowed &= _sentences_with_context(index, filters.context)
    return allowed


def _sentences_with_context(index: IndexStore, context: str) -> set[str]:
    """Sentences holding a finding with context ``context`` ("current": no context flag)."""
    rows = index.component("findings").table(["sentence_id", "context"]).to_pylist()
    if context == "current":
        return {r["sentence_id"] for r in rows if not r["context"]}
    return {r["sentence_id"] for r in rows if context in (r["context"] or ())}


def _is_iso_date(value: str) -> bool:
    """Whether ``value`` is a valid YYYY-MM-DD date."""
    from datetime import date

    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return len(value) == 10
