"""When a term matches a finding: the one definition, shared by cohorts and the polarity filter.

A ``FindingSpec`` names the findings a term stands for: any of its concepts, any of its
polarities, carrying all its modifier values, and for each anatomy site named with it either a
finding of the site in the same sentence or the site's word as a modifier. Which concepts a
term expands to (the concept alone, or with its descendants) is the caller's choice, made when
the spec is built. ``FindingMatcher`` answers a spec with the sentences (in the shared sentence
numbering) or the units that hold such a finding, by DuckDB over the findings table.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa

from clinsearch.annotate.finding import CONTEXTS
from clinsearch.duck import connect
from clinsearch.index.unit_map import UnitMap
from clinsearch.sql_dialect import DUCKDB, Bind, Dialect, in_list
from clinsearch.units import Level


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

    ``findings`` needs ``sentence_id``, ``concept``, ``polarity`` and ``modifiers`` (modifier
    records with a ``value``, or the values themselves), and may have ``context`` (flags; a
    table without it holds asserted findings only); ``sentence_ids`` gives the shared
    sentence numbering (sentence ``i`` is ``sentence_ids[i]``).
    """

    def __init__(self, findings: pa.Table,
                 sentence_ids: list[str] | np.ndarray | pa.ChunkedArray) -> None:
        if not isinstance(sentence_ids, pa.ChunkedArray):
            sentence_ids = pa.chunked_array([pa.array(list(sentence_ids), pa.string())])
        numbering = pa.table({"sentence_id": sentence_ids.cast(pa.string()),
                              "sentence": pa.array(np.arange(len(sentence_ids)), pa.int64())})
        self.con = connect({"findings": findings, "numbering": numbering})
        self._local = threading.local()
        modifiers = findings.schema.field("modifiers").type
        values = "x.modifiers"
        if pa.types.is_struct(modifiers.value_type):
            values = "list_transform(x.modifiers, lambda m: m.value)"
        context = ("coalesce(x.context, [])" if "context" in findings.schema.names
                   else "[]::VARCHAR[]")
        self.con.execute(
            "CREATE TABLE f AS SELECT n.sentence, x.concept, x.polarity,"
            f" coalesce({values}, []) AS mods, {context} AS ctx"
            " FROM findings x JOIN numbering n USING (sentence_id)"
            " ORDER BY x.concept, x.polarity, n.sentence"
        )
        self.con.unregister("findings")
        self.con.unregister("numbering")

    def sentences(self, spec: FindingSpec) -> np.ndarray:
        """Numbers of the sentences holding a finding that matches ``spec`` (one per finding)."""
        where, params = spec.where()
        got = self._cursor().execute(f"SELECT sentence FROM f WHERE {where}", params).fetchnumpy()
        return np.asarray(got["sentence"], dtype=np.int64)

    def unit_mask(self, spec: FindingSpec, level: Level, units: UnitMap) -> np.ndarray:
        """A boolean mask over the ``level`` units holding a finding that matches ``spec``."""
        mask = np.zeros(units.size(level), dtype=bool)
        mask[units.of(level, "sentence", self.sentences(spec))] = True
        return mask

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor (one DuckDB connection is not safe across threads)."""
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = self.con.cursor()
        return cursor
