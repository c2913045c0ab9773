"""When a term matches a finding: the one definition, shared by cohorts and the polarity filter.

A ``FindingSpec`` names the findings a term stands for: any of its concepts, any of its
polarities, carrying all its modifier values, and for each anatomy site named with it either a
finding of the site in the same sentence or the site's word as a modifier. Which concepts a
term expands to (the concept alone, or with its descendants) is the caller's choice, made when
the spec is built. ``FindingMatcher`` answers a spec with the sentences (in the shared sentence
numbering) that hold such a finding, by DuckDB over the findings of the spec's concepts, which
it gets from the concept postings (an index's) or from a findings table.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow as pa

from clinsearch.annotate.finding import CONTEXTS
from clinsearch.arrow_numbers import arrow_of, numpy_of, strings_of
from clinsearch.duck import connect
from clinsearch.index.unit_map import dictionary_codes
from clinsearch.sql_dialect import DUCKDB, Bind, Dialect, in_list

if TYPE_CHECKING:
    import duckdb

    from clinsearch.index import IndexStore

SentenceRows = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (report keys, indexes) -> rows
KEPT_ANSWERS = 1024  # a matcher keeps at most this many answers ...
KEPT_SENTENCES = 4_000_000  # ... holding at most this many sentence numbers (32 MB)


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

    def narrowed(self, flags: tuple[str, ...]) -> FindingSpec:
        """This spec with ``flags`` required too (a cohort's ``context:`` filter)."""
        if not flags:
            return self
        return replace(self, required_context=tuple(sorted({*self.required_context, *flags})))

    def admits(self, concept: str, polarity: str, context: Iterable[str]) -> bool:
        """Whether one finding meets this spec's concept, polarity and context parts, as
        ``condition`` reads them (modifiers and sites aside): which finding of a matched
        sentence it was counted for."""
        if concept not in self.concepts or polarity not in self.polarities:
            return False
        flags = {c for c in self.required_context if c != "any"}
        if flags:
            return flags <= set(context)
        if self.required_context or self.contexts is None:
            return True
        return not set(context) & (set(CONTEXTS) - set(self.contexts))

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


class FindingRows(Protocol):
    """Where a matcher's findings come from: a findings table (``TableFindings``) or the
    concept postings (``index.concept_postings.PostedFindings``)."""

    def relation(self, wanted: Mapping[str, tuple[str, ...] | None], modifiers: bool) -> pa.Table:
        """The findings of the ``wanted`` concepts (each with the polarities admitted; None:
        any) as the ``f`` relation: ``sentence`` (the shared sentence numbering), ``concept``,
        ``polarity``, ``ctx`` (context flags) and ``mods`` (modifier values; empty lists unless
        ``modifiers``)."""
        ...


class FindingMatcher:
    """The sentences holding a finding that matches a spec.

    A spec is answered by DuckDB (``FindingSpec.where``) over the findings of its own concepts
    and its sites' concepts only, which ``rows`` gives; modifiers are gathered only for a spec
    that looks at them (most terms carry no modifier and no site).
    """

    def __init__(self, rows: FindingRows) -> None:
        self.rows = rows
        self._local = threading.local()
        # answers kept for the generation's life (its findings never change): a cohort asks
        # for the same terms in its counts, members and wider tiers, and users rerun cohorts
        self._answers: OrderedDict[FindingSpec, np.ndarray] = OrderedDict()
        self._kept = 0  # sentence numbers held in ``_answers``
        self._lock = threading.Lock()

    def sentences(self, spec: FindingSpec) -> np.ndarray:
        """Numbers of the sentences holding a finding that matches ``spec`` (one per finding,
        sorted; read-only, as the answer is kept for the next asker)."""
        with self._lock:
            if spec in self._answers:
                self._answers.move_to_end(spec)
                return self._answers[spec]
        found = self._query(spec)
        found.flags.writeable = False
        with self._lock:
            if spec not in self._answers and len(found) <= KEPT_SENTENCES:
                self._answers[spec] = found
                self._kept += len(found)
                while self._kept > KEPT_SENTENCES or len(self._answers) > KEPT_ANSWERS:
                    self._kept -= len(self._answers.popitem(last=False)[1])
        return found

    def _query(self, spec: FindingSpec) -> np.ndarray:
        """``sentences`` asked of DuckDB."""
        wanted: dict[str, tuple[str, ...] | None] = dict.fromkeys(spec.concepts, spec.polarities)
        wanted |= {c: None for site, _ in spec.sites for c in site}
        relation = self.rows.relation(wanted, bool(spec.modifiers or spec.sites))
        where, params = spec.where()
        cursor = self._cursor()
        cursor.register("x", relation)
        try:
            got = cursor.execute(
                "WITH f AS (SELECT sentence, concept, polarity, coalesce(mods, []) AS mods,"
                f" coalesce(ctx, []) AS ctx FROM x) SELECT sentence FROM f WHERE {where}",
                params).fetchnumpy()
        finally:
            cursor.unregister("x")
        return np.sort(np.asarray(got["sentence"], dtype=np.int64))

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's connection (one DuckDB connection is not safe across threads, and a
        relation registered on it is its own)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = connect()
        return cursor


def finding_matcher(index: IndexStore) -> FindingMatcher:
    """The matcher of an index's live generation: over its concept postings (only the postings
    of a spec's concepts are read), or its findings table when it has no ``concepts``
    component."""
    sentence_rows = index.lookup.sentence_rows
    if "concepts" in index.config.components:
        return FindingMatcher(index.component("concepts").findings(sentence_rows))
    return index.component("findings").matcher(sentence_rows)


def relation(sentences: np.ndarray, concept: pa.Array, polarity: pa.Array,
             context: pa.Array | pa.ChunkedArray | None,
             modifiers: pa.Array | pa.ChunkedArray | None) -> pa.Table:
    """The ``f`` relation of ``FindingRows.relation`` (missing context or modifiers: empty)."""
    empty = pa.ListArray.from_arrays(arrow_of(np.zeros(len(sentences) + 1, np.int32)),
                                     pa.nulls(0, pa.string()))
    return pa.table({"sentence": arrow_of(np.asarray(sentences, np.int64)), "concept": concept,
                     "polarity": polarity, "ctx": empty if context is None else context,
                     "mods": empty if modifiers is None else modifiers})


class TableFindings:
    """``FindingRows`` of one findings table, grouped by concept once.

    ``findings`` needs ``report_key`` and ``sentence_index`` (where the finding is),
    ``concept`` and ``polarity`` (plain or dictionary-encoded strings), may have ``context``
    (flags; a table without it holds asserted findings only) and ``modifiers`` (modifier
    records with a ``value``, or the values themselves). ``sentence_rows`` numbers sentences
    from (report keys, sentence indexes) in the shared numbering (``RowLookup.sentence_rows``).
    Without ``modifiers``, ``read_modifiers`` gives that column (row for row) on the first
    request that needs it: it is the costliest column to read.
    """

    def __init__(self, findings: pa.Table, sentence_rows: SentenceRows,
                 read_modifiers: Callable[[], pa.ChunkedArray] | None = None) -> None:
        self._report_key = np.asarray(numpy_of(findings.column("report_key")), np.int64)
        self._sentence_index = numpy_of(findings.column("sentence_index"))
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

    def relation(self, wanted: Mapping[str, tuple[str, ...] | None], modifiers: bool) -> pa.Table:
        """See ``FindingRows.relation``; rows are found by integer codes."""
        parts = [np.empty(0, np.int64)]
        for concept, polarities in wanted.items():
            for code in self._concept.codes([concept]):
                rows = self._order[self._starts[code]:self._starts[code + 1]]
                if polarities is not None:
                    allowed = np.zeros(len(self._polarity.values), dtype=bool)
                    allowed[self._polarity.codes(polarities)] = True
                    rows = rows[allowed[self._polarity_code[rows]]]
                parts.append(rows)
        rows = np.sort(np.concatenate(parts))
        values = None
        if modifiers:
            values = _modifier_values(self._modifier_column().take(rows))
        return relation(
            self._sentence_rows(self._report_key[rows], self._sentence_index[rows]),
            self._concept.take(self._concept_code, rows),
            self._polarity.take(self._polarity_code, rows),
            None if self._context is None else self._context.take(rows), values)

    def _modifier_column(self) -> pa.ChunkedArray:
        """The modifiers column, read on first use."""
        with self._lock:
            if self._modifiers is None:
                assert self._read_modifiers is not None, "a findings table without modifiers"
                self._modifiers = self._read_modifiers()
            return self._modifiers


def _modifier_values(column: pa.ChunkedArray) -> pa.Array:
    """A modifiers column (records with a ``value``, or values) as lists of values."""
    lists = column.combine_chunks() if column.num_chunks else pa.array([], column.type)
    if not pa.types.is_struct(lists.type.value_type):
        return lists
    return pa.ListArray.from_arrays(lists.offsets, lists.values.field("value"),
                                    mask=lists.is_null())


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
        return cls(strings_of(values), {v: i for i, v in enumerate(values)}), codes

    def codes(self, values: Iterable[str]) -> list[int]:
        """The codes of those of ``values`` that occur, sorted."""
        return sorted({self.code_of[v] for v in values if v in self.code_of})

    def take(self, codes: np.ndarray, rows: np.ndarray) -> pa.DictionaryArray:
        """The values of ``rows`` (dictionary-encoded: no string per row)."""
        return pa.DictionaryArray.from_arrays(arrow_of(codes[rows].astype(np.int32)), self.values)
