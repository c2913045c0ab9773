"""Concept postings: each concept, and each of its ancestors, to the findings that mention it.

A finding of ``lobar_pneumonia`` is posted under ``lobar_pneumonia`` (depth 0), ``pneumonia``
(depth 1) and so on up the lexicon's hierarchy (the paper's synonym-expanded index, with
synonyms already folded into concept ids by the annotator). The postings are derived from the
generation's findings table whenever it changes, sorted by key, with a key table of
offsets, so a lookup is one dict access and an array slice, never a scan of the corpus.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.annotate.finding import CONTEXTS, Modifier, modifier_values
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.duck import connect
from clinsearch.index.component import Change, Generation
from clinsearch.index.findings import FindingsTable

NAME = "concepts"
POSTINGS_FILE = "postings.parquet"  # finding row, depth; sorted by key, depth, row
KEYS_FILE = "keys.parquet"  # key, start, count into the postings
FINDING_COLUMNS = ("sentence_id", "report_id", "visit_id", "patient_id", "concept", "name", "type",
                   "polarity", "pattern", "start", "end", "text", "modifiers", "context")


class ConceptComponent:
    """Index component writing the concept postings of a generation from its findings table.

    Option ``lexicon``: the lexicon file whose hierarchy is used (default: the shipped one);
    give the same one as the ``findings`` component. Option ``term_model``: a term encoder
    folder that concept search uses by default (read at search time, not at build time).
    """

    name = NAME

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.lexicon_path: str | None = (options or {}).get("lexicon")

    @cached_property
    def hierarchy(self) -> Hierarchy:
        """The concept hierarchy of the configured lexicon."""
        from clinsearch.annotate.lexicon import Lexicon

        return Hierarchy.from_lexicon(Lexicon.load(self.lexicon_path))

    def build(self, gen: Generation) -> dict[str, Any]:
        """Post every finding of the generation under its concept and the concept's ancestors."""
        return write_postings(gen.path, self.hierarchy)

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Re-derive the postings from the new generation's findings (row numbers shift)."""
        return write_postings(gen.path, self.hierarchy)

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Re-derive the postings from the new generation's findings (row numbers shift)."""
        return write_postings(gen.path, self.hierarchy)

    def open(self, gen: Generation) -> ConceptIndex:
        """The query-time reader."""
        return ConceptIndex.open(gen.path)

    def check(self, gen: Generation, core: object, entry: Mapping[str, Any]) -> list[str]:
        """Problems: postings that point outside the findings table or disagree with the keys."""
        findings = FindingsTable(gen.path).num_rows
        rows = pq.read_table(gen.path / NAME / POSTINGS_FILE, columns=["row"]).column("row")
        keys = pq.read_table(gen.path / NAME / KEYS_FILE).to_pydict()
        folder = gen.path / NAME
        problems = []
        if len(rows) and (pc.max(rows).as_py() >= findings or pc.min(rows).as_py() < 0):
            problems.append(f"{folder / POSTINGS_FILE}: rows outside the {findings} findings")
        ends = [s + n for s, n in zip(keys["start"], keys["count"], strict=True)]
        if sum(keys["count"]) != len(rows) or any(e > len(rows) for e in ends):
            problems.append(f"{folder / KEYS_FILE}: offsets do not cover the postings exactly")
        if (entry.get("postings"), entry.get("keys")) != (len(rows), len(keys["key"])):
            problems.append(f"{folder}: {len(rows)} postings under {len(keys['key'])} keys, the"
                            f" manifest says {entry.get('postings')} under {entry.get('keys')}")
        return problems


def write_postings(gen_path: Path, hierarchy: Hierarchy) -> dict[str, Any]:
    """Write ``concepts/{postings,keys}.parquet`` for the generation's findings table."""
    out = gen_path / NAME
    out.mkdir(exist_ok=True)
    column = FindingsTable(gen_path).table(["concept"]).column("concept")
    rows = pa.table({"concept": column, "row": pa.array(range(len(column)), pa.int64())})
    with connect({"f": rows}) as db:
        concepts = [r[0] for r in db.execute("SELECT DISTINCT concept FROM f").fetchall()]
        expansion = pa.Table.from_pylist(
            [{"concept": c, "key": a, "depth": d}
             for c in concepts for a, d in hierarchy.ancestors(c).items()],
            schema=pa.schema([("concept", pa.string()), ("key", pa.string()),
                              ("depth", pa.int16())]),
        )
        db.register("expansion", expansion)
        db.execute(
            "CREATE TABLE p AS SELECT e.key, e.depth, f.row"
            " FROM f JOIN expansion e USING (concept)"
        )
        postings = db.sql("SELECT row, depth FROM p ORDER BY key, depth, row").to_arrow_table()
        keys = db.sql(
            "SELECT key, (sum(n) OVER (ORDER BY key) - n)::BIGINT AS start, n AS count"
            " FROM (SELECT key, count(*)::BIGINT AS n FROM p GROUP BY key) ORDER BY key"
        ).to_arrow_table()
    pq.write_table(postings, out / POSTINGS_FILE)
    pq.write_table(keys, out / KEYS_FILE)
    return {"keys": keys.num_rows, "postings": postings.num_rows}


def context_bits(column: pa.ChunkedArray) -> np.ndarray:
    """Per row of a list-of-strings context column: its flags as bits of CONTEXTS (int8)."""
    lists = column.combine_chunks()
    counts = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)
    values = lists.flatten().to_pylist()
    bit = {c: 1 << i for i, c in enumerate(CONTEXTS)}
    flags = np.array([bit.get(v, 0) for v in values], dtype=np.int8)
    owner = np.repeat(np.arange(len(counts)), counts)
    out = np.zeros(len(counts), dtype=np.int8)
    np.bitwise_or.at(out, owner, flags)
    return out


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Dictionary-code a string column: int64 codes per row and the distinct values."""
    coded = pc.dictionary_encode(column).combine_chunks()
    codes = coded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return codes, coded.dictionary.to_pylist()


@dataclass(frozen=True, slots=True)
class Posting:
    """The findings posted under a key: row numbers into the findings table, and depths."""

    rows: np.ndarray  # int64
    depths: np.ndarray  # int16: 0 for the concept itself, 1 for a child concept, ...


class ConceptIndex:
    """Loaded postings plus the findings table they point into, with patterns dictionary-coded."""

    def __init__(self, findings: pa.Table, rows: np.ndarray, depths: np.ndarray,
                 keys: dict[str, tuple[int, int]]) -> None:
        self.findings = findings
        self._rows = rows
        self._depths = depths
        self._keys = keys
        self.pattern_code, self.patterns = _codes(findings.column("pattern"))
        self.sentence_code, self.sentence_ids = _codes(findings.column("sentence_id"))
        self.report_code, self.report_ids = _codes(findings.column("report_id"))
        first = np.zeros(len(self.patterns), dtype=np.int64)
        first[self.pattern_code[::-1]] = np.arange(len(self.pattern_code))[::-1]
        # Per distinct pattern (from its first finding): concept id, name, polarity, modifiers.
        firsts = findings.select(["concept", "name", "polarity", "modifiers"]).take(pa.array(first))
        self.pattern_concept: list[str] = firsts.column("concept").to_pylist()
        self.pattern_name: list[str] = firsts.column("name").to_pylist()
        self.pattern_polarity = np.array(firsts.column("polarity").to_pylist(), dtype=object)
        self.pattern_modifiers: list[tuple[str, ...]] = [
            tuple(modifier_values(tuple(Modifier(**m) for m in mods)))
            for mods in firsts.column("modifiers").to_pylist()
        ]
        # Where each finding and its modifiers are (offsets into the report text), for marking.
        self.start = findings.column("start").to_numpy()
        self.end = findings.column("end").to_numpy()
        mods = findings.column("modifiers").combine_chunks()
        self.modifier_offsets = mods.offsets.to_numpy()
        self.modifier_start = mods.values.field("start").to_numpy(zero_copy_only=False)
        self.modifier_end = mods.values.field("end").to_numpy(zero_copy_only=False)
        self.modifier_value = mods.values.field("value").to_pylist()
        # Context flags of each finding as bits (1 << CONTEXTS.index(flag)); 0: asserted.
        self.context_bits = context_bits(findings.column("context"))

    def context_of(self, row: int) -> tuple[str, ...]:
        """The context flags of finding ``row``."""
        bits = int(self.context_bits[row])
        return tuple(c for i, c in enumerate(CONTEXTS) if bits & (1 << i))

    @classmethod
    def open(cls, gen_path: Path) -> ConceptIndex:
        """Load a generation's postings and findings."""
        findings = FindingsTable(gen_path).table(list(FINDING_COLUMNS))
        postings = pq.read_table(gen_path / NAME / POSTINGS_FILE)
        keys = pq.read_table(gen_path / NAME / KEYS_FILE).to_pydict()
        offsets = {k: (s, n) for k, s, n in zip(keys["key"], keys["start"], keys["count"],
                                                strict=True)}
        return cls(
            findings,
            postings.column("row").to_numpy().astype(np.int64),
            postings.column("depth").to_numpy().astype(np.int16),
            offsets,
        )

    def lookup(self, concept: str, *, exact: bool = False) -> Posting:
        """Findings of ``concept`` and its descendants (only the concept itself when ``exact``)."""
        start, count = self._keys.get(concept, (0, 0))
        rows = self._rows[start : start + count]
        depths = self._depths[start : start + count]
        if exact:
            keep = depths == 0
            rows, depths = rows[keep], depths[keep]
        return Posting(rows, depths)
