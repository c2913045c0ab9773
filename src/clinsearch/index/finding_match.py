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
from collections.abc import Callable
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
        self._concepts, codes = dictionary_codes(findings.column("concept"))
        self._code_of = {c: i for i, c in enumerate(self._concepts)}
        if len(self._concepts) <= np.iinfo(np.uint16).max:
            codes = codes.astype(np.uint16)  # sorted by radix sort, in linear time
        self._order = np.argsort(codes, kind="stable")
        self._starts = np.concatenate([[0], np.cumsum(np.bincount(codes,
                                                                  minlength=len(self._concepts)))])
        names = findings.schema.names
        self._columns = {"concept": findings.column("concept"),
                         "polarity": findings.column("polarity")}
        if "context" in names:
            self._columns["context"] = findings.column("context")
        self._modifiers = findings.column("modifiers") if "modifiers" in names else None
        self._read_modifiers = read_modifiers
        self._lock = threading.Lock()
        self._local = threading.local()

    def sentences(self, spec: FindingSpec) -> np.ndarray:
        """Numbers of the sentences holding a finding that matches ``spec`` (one per finding)."""
        concepts = {*spec.concepts, *(c for site, _ in spec.sites for c in site)}
        codes = sorted(self._code_of[c] for c in concepts if c in self._code_of)
        rows = np.sort(np.concatenate(
            [np.empty(0, np.int64),
             *(self._order[self._starts[c]:self._starts[c + 1]] for c in codes)]))
        taken = {name: column.take(rows) for name, column in self._columns.items()}
        context = "coalesce(x.context, [])" if "context" in taken else "[]::VARCHAR[]"
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
                "WITH f AS (SELECT x.sentence, x.concept::VARCHAR AS concept,"
                f" x.polarity::VARCHAR AS polarity, coalesce({values}, []) AS mods,"
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
