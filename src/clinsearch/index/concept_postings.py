"""Concept postings: each concept, and each of its ancestors, to the findings that mention it.

A finding of ``lobar_pneumonia`` is posted under ``lobar_pneumonia`` (depth 0), ``pneumonia``
(depth 1) and so on up the lexicon's hierarchy (the paper's synonym-expanded index, with
synonyms already folded into concept ids by the annotator). Each segment's postings are derived
from its findings table when the segment is written (``concepts/`` in the segment folder),
sorted by key, depth and row, with a key table of offsets; ``ConceptIndex`` combines the
segments (rows offset per segment, deleted reports' findings left out), so a lookup is a dict
access and an array slice per segment, never a scan of the corpus.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
from clinsearch.index.component import Change, Generation, Segment
from clinsearch.index.findings import FINDINGS_FILE

NAME = "concepts"
POSTINGS_FILE = "postings.parquet"  # finding row in the segment, depth; by key, depth, row
KEYS_FILE = "keys.parquet"  # key, start, count into the postings
# The findings columns search reads (no ids or text: sentences and reports go by key and index).
FINDING_COLUMNS = ("report_key", "sentence_index", "concept", "name", "polarity", "pattern",
                   "start", "end", "modifiers", "context")


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
        return self._write(gen, gen.segments)

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Post the findings of the new segments."""
        return self._write(gen, gen.new_segments(prev))

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Nothing to write: readers leave the deleted reports' findings out."""
        return self._write(gen, ())

    def merge(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Post the findings of the merged segments (the findings component wrote them)."""
        return self._write(gen, gen.new_segments(prev))

    def open(self, gen: Generation) -> ConceptIndex:
        """The query-time reader."""
        return ConceptIndex.open(gen)

    def check(self, gen: Generation, core: object, entry: Mapping[str, Any]) -> list[str]:
        """Problems: postings that point outside their segment's findings or disagree with the
        key offsets, totals that differ from the manifest's."""
        problems, postings, names = [], 0, set()
        for segment in gen.segments:
            folder = gen.segment_path(segment)
            findings = pq.ParquetFile(folder / FINDINGS_FILE).metadata.num_rows
            rows = pq.read_table(folder / NAME / POSTINGS_FILE, columns=["row"]).column("row")
            keys = pq.read_table(folder / NAME / KEYS_FILE).to_pydict()
            if len(rows) and (pc.max(rows).as_py() >= findings or pc.min(rows).as_py() < 0):
                problems.append(f"{folder / NAME / POSTINGS_FILE}: rows outside the {findings}"
                                " findings")
            ends = [s + n for s, n in zip(keys["start"], keys["count"], strict=True)]
            if sum(keys["count"]) != len(rows) or any(e > len(rows) for e in ends):
                problems.append(f"{folder / NAME / KEYS_FILE}: offsets do not cover the postings"
                                " exactly")
            postings += len(rows)
            names.update(keys["key"])
        if (entry.get("postings"), entry.get("keys")) != (postings, len(names)):
            problems.append(f"{gen.path / NAME}: {postings} postings under {len(names)} keys, the"
                            f" manifest says {entry.get('postings')} under {entry.get('keys')}")
        return problems

    def _write(self, gen: Generation, segments: Iterable[Segment]) -> dict[str, Any]:
        """Write the postings of ``segments``; the manifest entry: postings stored and distinct
        keys over all segments (as one build of the same findings would count them)."""
        for segment in segments:
            write_postings(gen.segment_path(segment), self.hierarchy)
        postings, names = 0, set()
        for segment in gen.segments:
            folder = gen.segment_path(segment) / NAME
            postings += pq.ParquetFile(folder / POSTINGS_FILE).metadata.num_rows
            names.update(pq.ParquetFile(folder / KEYS_FILE).read(["key"]).column("key").to_pylist())
        return {"keys": len(names), "postings": postings}


def write_postings(folder: Path, hierarchy: Hierarchy) -> dict[str, Any]:
    """Write ``concepts/{postings,keys}.parquet`` for the findings table of a segment folder."""
    out = folder / NAME
    out.mkdir(exist_ok=True)
    column = pq.ParquetFile(folder / FINDINGS_FILE).read(["concept"]).column("concept")
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


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Dictionary-code a column (codes in order of first appearance): int64 codes per row and
    the first row of each code."""
    coded = pc.dictionary_encode(column).combine_chunks()
    codes = coded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    first = np.zeros(len(coded.dictionary), dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes))[::-1]
    return codes, first


@dataclass(frozen=True, slots=True)
class Posting:
    """The findings posted under a key: row numbers into the findings table, and depths."""

    rows: np.ndarray  # int64
    depths: np.ndarray  # int16: 0 for the concept itself, 1 for a child concept, ...


@dataclass(frozen=True, slots=True)
class _SegmentPostings:
    """One segment's postings, rows already numbered in the combined findings table."""

    rows: np.ndarray  # int64, sorted by key, depth, row
    depths: np.ndarray  # int16
    keys: dict[str, tuple[int, int]]  # key: (start, count)

    def slice(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        """Rows and depths posted under ``key``."""
        start, count = self.keys.get(key, (0, 0))
        return self.rows[start : start + count], self.depths[start : start + count]


class ConceptIndex:
    """Loaded postings plus the findings table they point into, with patterns, sentences and
    reports dictionary-coded (sentences by report key and sentence index, no id strings)."""

    def __init__(self, findings: pa.Table, segments: list[_SegmentPostings]) -> None:
        from clinsearch.index.integrity import sentence_codes  # integrity imports the components

        self.findings = findings
        self._segments = segments
        keys = findings.column("report_key").to_numpy()
        indexes = findings.column("sentence_index").to_numpy()
        self.sentence_code, first = _codes(pa.chunked_array([sentence_codes(keys, indexes)]))
        # Report key and sentence index of each sentence code (a store row is one lookup away).
        self.sentence_keys, self.sentence_indexes = keys[first], indexes[first]
        self.report_code, first = _codes(findings.column("report_key"))
        self.report_keys = keys[first]
        self.pattern_code, first = _codes(findings.column("pattern"))
        self.patterns: list[str] = findings.column("pattern").take(pa.array(first)).to_pylist()
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
    def open(cls, gen: Generation) -> ConceptIndex:
        """Load a generation's findings and each segment's postings, leaving the deleted
        reports' findings out."""
        dropped = pa.array(gen.deleted_keys(), pa.int64())
        tables, segments, offset = [], [], 0
        for segment in gen.segments:
            folder = gen.segment_path(segment)
            stored = pq.ParquetFile(folder / FINDINGS_FILE).read(list(FINDING_COLUMNS))
            postings = pq.ParquetFile(folder / NAME / POSTINGS_FILE).read()
            keys = pq.ParquetFile(folder / NAME / KEYS_FILE).read().to_pydict()
            rows = postings.column("row").to_numpy().astype(np.int64)
            depths = postings.column("depth").to_numpy().astype(np.int16)
            counts = np.asarray(keys["count"], np.int64)
            if len(dropped):
                kept = pc.invert(pc.is_in(stored.column("report_key"), value_set=dropped))
                stored = stored.filter(kept)
                keep = kept.to_numpy(zero_copy_only=False)
                new_row = np.cumsum(keep) - 1
                valid = keep[rows]
                owner = np.repeat(np.arange(len(counts)), counts)
                counts = np.bincount(owner[valid], minlength=len(counts))
                rows, depths = new_row[rows[valid]], depths[valid]
            starts = np.cumsum(counts) - counts
            segments.append(_SegmentPostings(
                rows + offset, depths,
                {k: (int(st), int(n)) for k, st, n in zip(keys["key"], starts, counts,
                                                          strict=True) if n},
            ))
            tables.append(stored)
            offset += stored.num_rows
        return cls(pa.concat_tables(tables), segments)

    def lookup(self, concept: str, *, exact: bool = False) -> Posting:
        """Findings of ``concept`` and its descendants (only the concept itself when ``exact``),
        by depth then row, as one build's postings would be."""
        slices = [s.slice(concept) for s in self._segments]
        rows = np.concatenate([r for r, _ in slices])
        depths = np.concatenate([d for _, d in slices])
        if len(self._segments) > 1:
            order = np.argsort(depths, kind="stable")  # rows already rise within each depth
            rows, depths = rows[order], depths[order]
        if exact:
            keep = depths == 0
            rows, depths = rows[keep], depths[keep]
        return Posting(rows, depths)
