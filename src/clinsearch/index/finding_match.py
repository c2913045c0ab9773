"""When a term matches a finding: the one definition, shared by cohorts and the polarity filter.

A ``FindingSpec`` names the findings a term stands for: any of its concepts, any of its
polarities, carrying all its modifier values, and for each anatomy site named with it either a
finding of the site in the same sentence or the site's word as a modifier. Which concepts a
term expands to (the concept alone, or with its descendants) is the caller's choice, made when
the spec is built. ``FindingMatcher`` answers a spec with the sentences (in the shared sentence
numbering) or the units that hold such a finding, by DuckDB over the findings of the spec's
concepts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from clinsearch.annotate.finding import CONTEXTS
from clinsearch.duck import connect
from clinsearch.index.unit_map import UnitMap, dictionary_codes
from clinsearch.sql_dialect import DUCKDB, Bind, Dialect, in_list
from clinsearch.units import Level

SentenceRows = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (report keys, indexes) -> rows


@dataclass(frozen=True, slots=True)
class FindingSpec:
    """The findings rows a term matches: any concept, any polarity, all the modifiers."""

    label: str  # shown as the matched term in exports, e.g. "disease|present|pneumonia"
    concepts: tuple[str, ...]  # e.g. the concept and its descendants
    polarities: tuple[str, ...]
    modifiers: tuple[str, ...] = ()  # modifier values the finding must carry
    # Anatomy named with the finding ("rib fracture"): per site, its concepts (with descendants)
    # and words; the sentence must mention one of the concepts, or the finding carry a word
    # as a modifier.
    sites: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    # Context flags (annotate.finding.CONTEXTS) admitted besides asserted findings; None: any.
    contexts: tuple[str, ...] | None = ()
    # Flags the finding must carry ("context:historical" in a cohort query); "any": none needed.
    required_context: tuple[str, ...] = ()

    def where(self) -> tuple[str, list[object]]:
        """The SQL condition (with its parameters) over the matcher's ``f`` relation."""
        params: list[object] = []

        def bind(value: object) -> str:
            params.append(value)
            return "?"

        return self.condition(DUCKDB, bind, "f", "sentence"), params

    def condition(self, dialect: Dialect, bind: Bind, table: str, key: str) -> str:
        """The condition over ``table`` (columns concept, polarity, mods, ctx and ``key``, the
        sentence) selecting the findings rows that match; values go through ``bind``."""
        sql = (f"{in_list('concept', self.concepts, bind)}"
               f" AND {in_list('polarity', self.polarities, bind)}")
        flags = [c for c in self.required_context if c != "any"]
        excluded = [c for c in CONTEXTS if self.contexts is not None and c not in self.contexts]
        if flags:
            sql += " AND " + dialect.has_all.format("ctx", dialect.array_of(flags, bind))
        elif excluded and not self.required_context:  # asserted, plus the admitted contexts
            sql += " AND NOT " + dialect.has_any.format("ctx", dialect.array_of(excluded, bind))
        if self.modifiers:
            sql += " AND " + dialect.has_all.format("mods", dialect.array_of(self.modifiers, bind))
        for concepts, words in self.sites:
            near = f"SELECT {key} FROM {table} WHERE {in_list('concept', concepts, bind)}"
            sql += (f" AND ({dialect.has_any.format('mods', dialect.array_of(words, bind))}"
                    f" OR {key} IN ({near}))")
        return sql


class FindingMatcher:
    """The sentences and units holding a finding that matches a spec, over one findings table.

    ``findings`` needs ``report_key`` and ``sentence_index`` (where the finding is),
    ``concept`` and ``polarity`` (plain or dictionary-encoded strings), may have ``context``
    (flags; a table without it holds asserted findings only) and ``modifiers`` (modifier
    records with a ``value``, or the values themselves). ``sentence_rows`` numbers sentences
    from (report keys, sentence indexes) in the shared numbering (``Store.sentence_rows``).
    Without ``modifiers``, ``read_modifiers`` gives that column (row for row) on the first spec
    that needs it: most terms carry no modifier and no site, and it is the costliest column to
    read. Rows are grouped by concept once, so a spec is answered by DuckDB over the rows of
    its own concepts only, and only those are numbered.
    """

    def __init__(self, findings: pa.Table, sentence_rows: SentenceRows,
                 read_modifiers: Callable[[], pa.ChunkedArray] | None = None) -> None:
        self._report_key = np.asarray(findings.column("report_key").to_numpy(), np.int64)
        self._sentence_index = findings.column("sentence_index").to_numpy()
        self._sentence_rows = sentence_rows
        self._concept, self._concept_code = _Codes.of(findings.column("concept"))
        self._polarity, self._polarity_code = _Codes.of(findings.column("polarity"))
        self._order = np.argsort(self._concept_code, kind="stable")
        self._starts = np.concatenate([[0], np.cumsum(np.bincount(
            self._concept_code, minlength=len(self._concept.values)))])
        names = findings.schema.names
        self._context = findings.column("context") if "context" in names else None
        self._modifiers = findings.column("modifiers") if "modifiers" in names else None
        self._read_modifiers = read_modifiers
        self._lock = threading.Lock()
        self._local = threading.local()

    def _rows(self, spec: FindingSpec) -> np.ndarray:
        """The findings rows the spec's condition can select or look at: those of its concepts
        with one of its polarities, and those of its sites' concepts (a superset, found by
        integer codes)."""
        def of(concepts: Iterable[str]) -> np.ndarray:
            codes = self._concept.codes(concepts)
            return np.concatenate([np.empty(0, np.int64), *(
                self._order[self._starts[c]:self._starts[c + 1]] for c in codes)])

        allowed = np.zeros(len(self._polarity.values), dtype=bool)
        allowed[self._polarity.codes(spec.polarities)] = True
        rows = of(spec.concepts)
        rows = rows[allowed[self._polarity_code[rows]]]
        if not spec.sites:
            return rows
        return np.union1d(rows, of(c for site, _ in spec.sites for c in site))

    def sentences(self, spec: FindingSpec) -> np.ndarray:
        """Numbers of the sentences holding a finding that matches ``spec`` (one per finding)."""
        rows = self._rows(spec)
        taken = {"concept": self._concept.take(self._concept_code, rows),
                 "polarity": self._polarity.take(self._polarity_code, rows)}
        context = "[]::VARCHAR[]"
        if self._context is not None:
            taken["context"] = self._context.take(rows)
            context = "coalesce(x.context, [])"
        values = "[]::VARCHAR[]"
        if spec.modifiers or spec.sites:  # the only conditions that look at modifiers
            modifiers = self._modifier_column()
            taken["modifiers"] = modifiers.take(rows)
            values = "x.modifiers"
            if pa.types.is_struct(modifiers.type.value_type):
                values = "list_transform(x.modifiers, lambda m: m.value)"
        taken["sentence"] = pa.array(np.asarray(self._sentence_rows(
            self._report_key[rows], self._sentence_index[rows]), np.int64))
        where, params = spec.where()
        cursor = self._cursor()
        cursor.register("x", pa.table(taken))
        try:
            got = cursor.execute(
                "WITH f AS (SELECT x.sentence, x.concept, x.polarity,"
                f" coalesce({values}, []) AS mods,"
                f" {context} AS ctx FROM x) SELECT sentence FROM f WHERE {where}",
                params).fetchnumpy()
        finally:
            cursor.unregister("x")
        return np.asarray(got["sentence"], dtype=np.int64)

    def _modifier_column(self) -> pa.ChunkedArray:
        """The modifiers column, read on first use."""
        with self._lock:
            if self._modifiers is None:
                assert self._read_modifiers is not None, "a findings table without modifiers"
                self._modifiers = self._read_modifiers()
            return self._modifiers

    def unit_mask(self, spec: FindingSpec, level: Level, units: UnitMap) -> np.ndarray:
        """A boolean mask over the ``level`` units holding a finding that matches ``spec``."""
        mask = np.zeros(units.size(level), dtype=bool)
        mask[units.of(level, "sentence", self.sentences(spec))] = True
        return mask

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's connection (one DuckDB connection is not safe across threads, and a
        relation registered on it is its own)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = connect()
        return cursor


@dataclass(frozen=True)
class _Codes:
    """A string column's distinct values, to code and decode its rows."""

    values: pa.Array
    code_of: dict[str | None, int]

    @classmethod
    def of(cls, column: pa.ChunkedArray) -> tuple[_Codes, np.ndarray]:
        """The column's values and each row's code (uint16 where they fit: sorted by radix)."""
        values, codes = dictionary_codes(column)
        if len(values) <= np.iinfo(np.uint16).max:
            codes = codes.astype(np.uint16)
        return cls(pa.array(values, pa.string()), {v: i for i, v in enumerate(values)}), codes

    def codes(self, values: Iterable[str]) -> list[int]:
        """The codes of those of ``values`` that occur, sorted."""
        return sorted({self.code_of[v] for v in values if v in self.code_of})

    def take(self, codes: np.ndarray, rows: np.ndarray) -> pa.DictionaryArray:
        """The values of ``rows`` (dictionary-encoded: no string per row)."""
        return pa.DictionaryArray.from_arrays(pa.array(codes[rows].astype(np.int32)), self.values)
