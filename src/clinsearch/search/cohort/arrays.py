"""The corpus as integer-coded arrays for cohort evaluation, loaded once from an index generation.

Units are numbered as the index numbers them (``index.unit_map``: sentence and report rows,
visits, patients). "Rows" are the sentences (row i is sentence i) followed by the reports that
have no sentence, so that every report counts in the corpus even when empty. Opening reads
the unit map only; report type and date and sentence section are read (as dictionary codes) on
the first query that filters on them or shows evidence, ids and texts for the rows a query
shows, and texts are searched only for a ``text:`` filter (``RowValues``). Finding lookups go
to the findings service (``index.finding_match``: the postings of the term's concepts);
everything else is numpy over these arrays.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clinsearch.annotate.explain_findings import trigger_words
from clinsearch.annotate.finding import Trigger
from clinsearch.duck import connect
from clinsearch.index.finding_match import (
    FindingMatcher,
    FindingSpec,
    TableFindings,
    finding_matcher,
)
from clinsearch.index.findings import FindingsTable
from clinsearch.index.unit_map import UnitMap, dictionary_codes
from clinsearch.search.cohort.syntax import Filter, fold
from clinsearch.units import LEVELS, Level

if TYPE_CHECKING:
    import duckdb

    from clinsearch.index import IndexStore
    from clinsearch.index.row_lookup import Column


FilterColumn = Literal["type", "date", "section"]
# what ``RowValues.findings`` gives: enough to find the finding a sentence was counted for
FINDING_COLUMNS = ("sentence_id", "start", "concept", "polarity", "context", "trigger")


class RowValues(Protocol):
    """The strings of the rows a query shows, and the sentences holding a phrase."""

    def reports(self, column: str, rows: np.ndarray) -> list[str]:
        """``column`` (``id``, ``patient_id`` or ``visit_id``) of the report ``rows``."""
        ...

    def sentences(self, column: str, rows: np.ndarray) -> list[str]:
        """``column`` (``id`` or ``text``) of the sentence ``rows``."""
        ...

    def containing(self, phrase: str) -> np.ndarray:
        """The sentence rows whose text contains ``phrase`` (case-insensitive)."""
        ...

    def findings(self, rows: np.ndarray, ids: list[str], concepts: list[str]) -> pa.Table:
        """``FINDING_COLUMNS`` of the findings of ``concepts`` in the sentence ``rows`` (whose
        ids are ``ids``)."""
        ...


class StoredRows:
    """``RowValues`` of an index generation: ids and texts from its row lookup (the row groups
    holding the rows asked for), phrases by DuckDB over its sentences files (deleted reports
    left out), the phrase a bound parameter."""

    def __init__(self, index: IndexStore) -> None:
        self.lookup, self.generation = index.lookup, index.generation
        lookup = self.lookup
        self._columns: dict[str, dict[str, Column]] = {
            "reports": {"id": lookup.report_ids, "patient_id": lookup.patient_ids,
                        "visit_id": lookup.visit_ids},
            "sentences": {"id": lookup.sentence_ids, "text": lookup.sentence_texts},
        }
        self._local = threading.local()

    def reports(self, column: str, rows: np.ndarray) -> list[str]:
        return self._columns["reports"][column].take(rows)

    def sentences(self, column: str, rows: np.ndarray) -> list[str]:
        return self._columns["sentences"][column].take(rows)

    def findings(self, rows: np.ndarray, ids: list[str], concepts: list[str]) -> pa.Table:
        keys = self.lookup.report_keys[self.lookup.sentence_reports(rows)]
        table = FindingsTable(self.generation).table(
            list(FINDING_COLUMNS), report_keys=keys, filters=[("concept", "in", concepts)])
        return table.filter(pc.is_in(table.column("sentence_id"), pa.array(ids, pa.string())))

    def containing(self, phrase: str) -> np.ndarray:
        cursor: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cursor is None:  # one connection per thread: a connection is not thread-safe
            cursor = self._local.cursor = connect({"sentences": self.generation.rows("sentences")})
        got = cursor.execute('SELECT report_key, "index" FROM sentences'
                             " WHERE contains(lower(text), ?)", [phrase.lower()]).fetchnumpy()
        return self.lookup.sentence_rows(np.asarray(got["report_key"], np.int64),
                                        np.asarray(got["index"], np.int64))


class ArrowRows:
    """``RowValues`` of in-memory tables with the index's column names (tests, benchmarks)."""

    def __init__(self, reports: pa.Table, sentences: pa.Table, findings: pa.Table) -> None:
        self._tables = {"reports": reports, "sentences": sentences, "findings": findings}
        self._text = connect({"s": pa.table({
            "sentence": pa.array(np.arange(sentences.num_rows), pa.int64()),
            "text": sentences.column("text")})})
        self._lock = threading.Lock()

    def reports(self, column: str, rows: np.ndarray) -> list[str]:
        return self._tables["reports"].column(column).take(pa.array(rows, pa.int64())).to_pylist()

    def sentences(self, column: str, rows: np.ndarray) -> list[str]:
        return self._tables["sentences"].column(column).take(
            pa.array(rows, pa.int64())).to_pylist()

    def findings(self, rows: np.ndarray, ids: list[str], concepts: list[str]) -> pa.Table:
        table = self._tables["findings"]
        table = table.filter(pc.and_(pc.is_in(table.column("sentence_id"),
                                              pa.array(ids, pa.string())),
                                     pc.is_in(table.column("concept"), pa.array(concepts))))
        return pa.table({c: table.column(c) if c in table.schema.names  # a column left out:
                         else pa.nulls(table.num_rows) for c in FINDING_COLUMNS})  # none known

    def containing(self, phrase: str) -> np.ndarray:
        with self._lock:
            got = self._text.execute("SELECT sentence FROM s WHERE contains(lower(text), ?)",
                                     [phrase.lower()]).fetchnumpy()
        return np.asarray(got["sentence"], dtype=np.int64)


class CohortArrays:
    """Level hierarchy, filter columns and the findings of one index generation, as arrays."""

    def __init__(self, units: UnitMap, columns: Callable[[FilterColumn], pa.ChunkedArray],
                 values: RowValues, findings: FindingMatcher) -> None:
        """``units`` numbers sentences and reports by row (the shared numbering; a report's
        sentences lie together, in index order); ``columns`` reads a filter column on its first
        use: ``type`` and ``date`` with one value per report row, ``section`` one per sentence
        row (plain or dictionary-encoded strings); ``values`` gives the strings shown and
        ``findings`` answers finding specs in the sentence numbering."""
        self.findings, self.values, self.unit_map = findings, values, units
        self._columns = columns
        self.sentence_report = units.sentence_report
        self.size: dict[Level, int] = {u: units.size(u) for u in LEVELS}
        self._sentence_unit: dict[Level, np.ndarray] = {}
        self._unit_ids: dict[Level, dict[str, int]] = {}

    @cached_property
    def _types(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The report type column as codes (``_codes``), read on first use."""
        return _codes(self._columns("type"))

    @cached_property
    def _sections(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The sentence section column as codes (``_codes``), read on first use."""
        return _codes(self._columns("section"))

    @cached_property
    def _dates(self) -> tuple[np.ndarray, np.ndarray]:
        """Each report's date as yyyymmdd (0: none), and its rank in evidence order (the date
        as text, so undated first); read on first use."""
        dates, date_raw = dictionary_codes(self._columns("date"))
        dates = [d or "" for d in dates]
        number = np.array([int(d.replace("-", "")) if d else 0 for d in dates], dtype=np.int64)
        rank = np.unique(np.array(dates, dtype=str), return_inverse=True)[1].reshape(-1)
        return number[date_raw], rank[date_raw]

    @property
    def report_date(self) -> np.ndarray:
        """Each report's date as yyyymmdd (0: none)."""
        return self._dates[0]

    def sentence_units(self, unit: Level, sentences: np.ndarray) -> np.ndarray:
        """The ``unit`` of each of ``sentences``."""
        return self.unit_map.of(unit, "sentence", sentences)

    def sentence_unit(self, unit: Level) -> np.ndarray:
        """The ``unit`` of every sentence (built on first use)."""
        if unit not in self._sentence_unit:
            self._sentence_unit[unit] = self.sentence_units(
                unit, np.arange(len(self.sentence_report)))
        return self._sentence_unit[unit]

    @cached_property
    def first_report(self) -> dict[Level, np.ndarray]:
        """A report of each report, visit and patient, to show the unit's ids."""
        reports = np.arange(self.size["report"])
        out: dict[Level, np.ndarray] = {}
        for unit in ("report", "visit", "patient"):
            first = np.zeros(self.size[unit], dtype=np.int64)
            first[self._of_reports(unit, reports)[::-1]] = reports[::-1]
            out[unit] = first
        return out

    @cached_property
    def _empty_reports(self) -> np.ndarray:
        """The reports without a sentence (the rows after the sentences)."""
        return np.flatnonzero(np.bincount(self.sentence_report, minlength=self.size["report"]) == 0)

    @cached_property
    def row_report(self) -> np.ndarray:
        """The report of each row (the row arrays are built on a query's first filter)."""
        return np.concatenate([self.sentence_report, self._empty_reports])

    @cached_property
    def row_section(self) -> np.ndarray:
        """The section code of each row (-1: a report without sentences); comparing codes is
        much faster than comparing strings."""
        code = self._sections[1]
        return np.concatenate([code, np.full(len(self._empty_reports), -1, code.dtype)])

    @cached_property
    def row_unit(self) -> dict[Level, np.ndarray]:
        """The unit of each row, per unit (-1: no sentence)."""
        empty = self._empty_reports
        out = {u: np.concatenate([self.sentence_unit(u), self._of_reports(u, empty)])
               for u in LEVELS[1:]}
        out["sentence"] = np.concatenate([np.arange(len(self.sentence_report)),
                                          np.full(len(empty), -1)])
        return out

    @classmethod
    def from_index(cls, index: IndexStore) -> CohortArrays:
        """Load an index's live generation: its key columns, its filter columns as dictionary
        codes and its findings service (ids and texts stay on disk until shown)."""
        gen = index.generation

        def column(name: FilterColumn) -> pa.ChunkedArray:
            table = "sentences" if name == "section" else "reports"
            return gen.table(table, [name], dictionary=[name]).column(name)

        return cls(index.lookup.units, column, StoredRows(index), finding_matcher(index))

    @classmethod
    def from_arrow(cls, reports: pa.Table, sentences: pa.Table, findings: pa.Table) -> CohortArrays:
        """Load from in-memory Arrow tables with the index's column names (used by tests)."""
        report_ids = reports.column("id").to_pylist()
        row_of = {rid: row for row, rid in enumerate(report_ids)}
        sentence_report = np.array([row_of[r] for r in sentences.column("report_id").to_pylist()],
                                   dtype=np.int64)
        order = np.lexsort((sentences.column("index").to_numpy(), sentence_report))
        sentences, sentence_report = sentences.take(pa.array(order)), sentence_report[order]
        # Report keys are report rows; a sentence's index is its place in its report.
        first = np.searchsorted(sentence_report, np.arange(len(report_ids)))
        sentence_of = {sid: row for row, sid in enumerate(sentences.column("id").to_pylist())}
        at = np.array([sentence_of[s] for s in findings.column("sentence_id").to_pylist()],
                      dtype=np.int64)
        keyed = findings.append_column("report_key", pa.array(sentence_report[at])).append_column(
            "sentence_index", pa.array(at - first[sentence_report[at]]))
        units = UnitMap.from_ids(sentence_report, reports.column("patient_id"),
                                 reports.column("visit_id"))
        matcher = FindingMatcher(TableFindings(keyed, lambda keys, indexes: first[keys] + indexes))
        tables = {"type": reports, "date": reports, "section": sentences}
        return cls(units, lambda name: tables[name].column(name),
                   ArrowRows(reports, sentences, findings), matcher)

    def _of_reports(self, unit: Level, reports: np.ndarray) -> np.ndarray:
        """The ``unit`` id of each report in ``reports`` (report, visit or patient)."""
        return self.unit_map.of(unit, "report", reports)

    def row_mask(self, filters: tuple[Filter, ...]) -> np.ndarray:
        """Rows satisfying every filter (report type, report date range, sentence section)."""
        report_ok = np.ones(self.size["report"], dtype=bool)
        row_ok = np.ones(len(self.row_report), dtype=bool)
        for flt in filters:
            if flt.key == "context":
                continue  # restricts findings, not rows (``Evaluator.matching``)
            if flt.key == "type":
                types, report_type = self._types[:2]
                report_ok &= report_type == _code(types, flt.value)
            elif flt.key == "section":
                row_ok &= self.row_section == _code(self._sections[0], flt.value)
            else:
                date = self.report_date
                report_ok &= date > 0
                if flt.low:
                    report_ok &= date >= int(flt.low.replace("-", ""))
                if flt.high:
                    report_ok &= date <= int(flt.high.replace("-", ""))
        return row_ok & report_ok[self.row_report]

    def filter_warnings(self, filters: list[Filter]) -> list[str]:
        """Why a filter would select nothing: a type or section no report has (with the
        values that exist), a date range where reports have no date."""
        out = []
        for flt in filters:
            if flt.key in ("type", "section"):
                codes, _, names, raw = self._types if flt.key == "type" else self._sections
                if _code(codes, flt.value) < 0:
                    counts: dict[str, int] = {}
                    for name, n in zip(names.tolist(), np.bincount(raw, minlength=len(names)),
                                       strict=True):
                        counts[name] = counts.get(name, 0) + int(n)
                    shown = ", ".join(f'"{v}" ({n})' for v, n in sorted(counts.items())
                                      if v and n) or "none recorded"
                    out.append(f"{flt.key}:{flt.value!r} matches nothing (compared without case,"
                               f" spaces or punctuation); {flt.key}s in this index: {shown}")
            elif flt.key == "date":
                undated = int((self.report_date == 0).sum())
                if undated:
                    out.append(f"date: {undated:,} of {len(self.report_date):,} reports have no"
                               " date and never match a date filter")
        return out

    def section_names(self) -> list[str]:
        """The distinct sections of the sentences (lower-case, without the empty one)."""
        _, _, names, raw = self._sections
        return sorted({str(s) for s in names[np.unique(raw)] if s})

    def units(self, unit: Level, rows: np.ndarray | None) -> np.ndarray:
        """A boolean mask over ``unit`` ids: those of the selected rows (None: of every row)."""
        if rows is None:
            return np.ones(self.size[unit], dtype=bool)
        mask = np.zeros(self.size[unit], dtype=bool)
        ids = self.row_unit[unit][rows]
        mask[ids[ids >= 0]] = True
        return mask

    def lift(self, mask: np.ndarray, source: Level, target: Level) -> np.ndarray:
        """``target`` units holding (or lying within) a ``source`` unit of ``mask``."""
        if LEVELS.index(source) < LEVELS.index(target):  # finer to coarser: project
            out = np.zeros(self.size[target], dtype=bool)
            out[self.parent(source, target)[np.flatnonzero(mask)]] = True
            return out
        return mask[self.parent(target, source)]  # coarser to finer: broadcast

    def parent(self, unit: Level, above: Level) -> np.ndarray:
        """For each ``unit`` id, the id of the ``above`` unit holding it."""
        if unit == "sentence":
            return self.sentence_unit(above)
        return self._of_reports(above, self.first_report[unit])

    def evidence_rank(self, sentences: np.ndarray) -> np.ndarray:
        """Each of ``sentences``' place in evidence order: report date as text (undated first),
        then report id, then the sentence's place in its report; the ids are read for these
        sentences' reports only."""
        reports = self.sentence_report[sentences]
        distinct, inverse = np.unique(reports, return_inverse=True)
        ids = np.array(self.values.reports("id", distinct), dtype=str)
        id_rank = np.empty(len(distinct), dtype=np.int64)
        id_rank[np.argsort(ids, kind="stable")] = np.arange(len(distinct))
        order = np.lexsort((sentences, id_rank[inverse.reshape(-1)], self._dates[1][reports]))
        rank = np.empty(len(sentences), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return rank

    def shown_sentences(self, sentences: np.ndarray) -> list[tuple[str, str, str, str]]:
        """Report id, sentence id, section and text of each of ``sentences``."""
        report_ids = self.values.reports("id", self.sentence_report[sentences])
        sections = self.sentence_sections(sentences)
        return [(str(r), str(s), section, str(t)) for r, s, section, t in zip(
            report_ids, self.values.sentences("id", sentences), sections,
            self.values.sentences("text", sentences), strict=True)]

    def id_mask(self, column: Literal["id", "patient_id"], ids: Sequence[str]
                ) -> tuple[np.ndarray, list[str]]:
        """The reports named by ``ids`` (report ids, or patient ids: all their reports), as
        a mask over report ids, and the ids that name nothing in this corpus."""
        unit: Level = "report" if column == "id" else "patient"
        if unit not in self._unit_ids:
            shown = self.values.reports(column, self.first_report[unit])
            self._unit_ids[unit] = {str(v): k for k, v in enumerate(shown)}
        known = self._unit_ids[unit]
        mask = np.zeros(self.size[unit], dtype=bool)
        mask[[known[i] for i in ids if i in known]] = True
        missing = [i for i in ids if i not in known]
        return (mask if unit == "report" else self.lift(mask, "patient", "report")), missing

    def report_labels(self, reports: np.ndarray) -> dict[str, list[str]]:
        """Each of ``reports``' date ("" when undated) and type (lower-cased, "" when none)."""
        _, _, type_names, type_raw = self._types
        number = self.report_date[reports]
        dates = [f"{d // 10000:04d}-{d // 100 % 100:02d}-{d % 100:02d}" if d else ""
                 for d in number.tolist()]
        return {"date": dates, "type": [str(t) for t in type_names[type_raw[reports]]]}

    def sentence_sections(self, sentences: np.ndarray) -> list[str]:
        """The section of each of ``sentences`` (lower-cased, "" when none)."""
        _, _, names, raw = self._sections
        return [str(s) for s in names[raw[sentences]]]

    def finding_triggers(self, sentences: np.ndarray, ids: list[str],
                         specs: Sequence[FindingSpec | None]) -> list[str]:
        """For each of ``sentences`` (whose ids are ``ids``), the trigger (cue words, category,
        rule) of its first finding that ``specs`` (one per sentence; None: a text match, no
        finding) admits: what made it other than stated now ("" when stated now, or nothing is
        known)."""
        wanted = [(i, spec) for i, spec in enumerate(specs) if spec is not None]
        out = [""] * len(specs)
        if not wanted:
            return out
        at = [i for i, _ in wanted]
        concepts = sorted({c for _, spec in wanted for c in spec.concepts})
        found: dict[str, list[dict[str, Any]]] = {}
        for row in self.values.findings(sentences[at], [ids[i] for i in at],
                                        concepts).to_pylist():
            found.setdefault(row["sentence_id"], []).append(row)
        for i, spec in wanted:
            mentions = sorted(found.get(ids[i], ()), key=lambda r: r["start"] or 0)
            first = next((r for r in mentions if spec.admits(
                r["concept"], r["polarity"], r["context"] or ())), None)
            if first is not None and first["trigger"] is not None:
                out[i] = trigger_words(Trigger(**first["trigger"]), offsets=False)
        return out

    def finding_sentences(self, spec: FindingSpec) -> np.ndarray:
        """Sentences holding a finding that matches ``spec`` (the findings service's answer)."""
        return self.findings.sentences(spec)

    def text_sentences(self, phrase: str) -> np.ndarray:
        """Sentences whose text contains ``phrase`` (case-insensitive)."""
        return self.values.containing(phrase)


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A filter column as codes: the sorted distinct folded values (``syntax.fold``) and each
    row's code into them, and each distinct stored value lower-cased (missing: "") with each
    row's index into those; the string work is done once per distinct value, not per row."""
    names, raw = dictionary_codes(column)
    lowered = np.array([(v or "").lower() for v in names], dtype=object)
    values, code = np.unique(np.array([fold(v) for v in lowered], dtype=str),
                             return_inverse=True)
    return values, code.reshape(-1).astype(raw.dtype)[raw], lowered, raw


def _code(values: np.ndarray, value: str) -> int:
    """The index of ``value`` in the sorted distinct ``values``, or -1 when absent."""
    i = int(np.searchsorted(values, value))
    return i if i < len(values) and values[i] == value else -1
