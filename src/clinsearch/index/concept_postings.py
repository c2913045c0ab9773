"""Concept postings: each concept, and each of its ancestors, to the findings that mention it.

A finding of ``lobar_pneumonia`` is posted under ``lobar_pneumonia`` (depth 0), ``pneumonia``
(depth 1) and so on up the lexicon's hierarchy (the paper's synonym-expanded index, with
synonyms already folded into concept ids by the annotator). Each segment's postings are derived
from its findings table when the segment is written (``concepts/`` in the segment folder):
finding rows sorted by key, depth and row with a key table of offsets, and beside each posting
the fields ranking needs as fixed-width arrays (sentence code, pattern code, context bits), so
that a lookup reads one contiguous slice of each; per finding, its pattern code and the offsets
of the finding and its modifiers (for the few rows a query shows); a small table of the
segment's distinct patterns; per modifier value, the reports that state it.

``ConceptIndex`` opens a generation by reading the key and pattern tables only (the arrays are
memory-mapped ``.npy`` files, no pickle): a lookup reads the postings of one key and the
fields of those rows, and leaves deleted reports' findings out by their report key.
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
from clinsearch.arrow_numbers import arrow_of, strings_of
from clinsearch.errors import ClinsearchError
from clinsearch.index.component import Change, Generation, Segment, sentence_codes, sentence_parts
from clinsearch.index.finding_match import SentenceRows, relation
from clinsearch.index.findings import FINDINGS_FILE
from clinsearch.index.unit_map import dictionary_codes

NAME = "concepts"
KEYS_FILE = "keys.parquet"  # key, start, count into the postings
PATTERNS_FILE = "patterns.parquet"  # per pattern code: pattern, concept, name, polarity, modifiers
VALUES_FILE = "values.parquet"  # per modifier value code: value, start, count into mention keys
# Arrays (.npy): postings by key, depth, row; per finding row; per modifier of a finding; per
# (modifier value, report) pair.
POSTING_ARRAYS = ("rows", "depths", "sentences", "patterns", "contexts")
FINDING_ARRAYS = ("finding_patterns", "starts", "ends", "modifier_offsets")
MODIFIER_ARRAYS = ("modifier_starts", "modifier_ends", "modifier_values")
MENTION_ARRAYS = ("mention_keys",)
ARRAYS = POSTING_ARRAYS + FINDING_ARRAYS + MODIFIER_ARRAYS + MENTION_ARRAYS
FILES = (KEYS_FILE, PATTERNS_FILE, VALUES_FILE, *(f"{a}.npy" for a in ARRAYS))
_READ_COLUMNS = ["report_key", "sentence_index", "concept", "pattern", "context", "start", "end",
                 "modifiers", "name", "polarity"]


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
        """Problems: missing files, postings or fields that disagree with their segment's
        findings or with the key, pattern and value tables, totals that differ from the
        manifest's."""
        problems, whole = [], []
        for segment in gen.segments:
            folder = gen.segment_path(segment) / NAME
            if missing := _missing(folder):
                problems.append(f"{folder / missing}: missing; rebuild the index")
                continue
            findings = pq.ParquetFile(gen.segment_path(segment) / FINDINGS_FILE).metadata.num_rows
            problems += _segment_problems(folder, findings)
            whole.append(folder)
        totals = _totals(whole)
        if (entry.get("postings"), entry.get("keys")) != (totals["postings"], totals["keys"]):
            problems.append(f"{gen.path / NAME}: {totals['postings']} postings under"
                            f" {totals['keys']} keys, the manifest says {entry.get('postings')}"
                            f" under {entry.get('keys')}")
        return problems

    def _write(self, gen: Generation, segments: Iterable[Segment]) -> dict[str, Any]:
        """Write the postings of ``segments``; the manifest entry: postings stored and distinct
        keys over all segments (as one build of the same findings would count them)."""
        for segment in segments:
            write_postings(gen.segment_path(segment), self.hierarchy)
        return _totals([gen.segment_path(segment) / NAME for segment in gen.segments])


def _totals(folders: Iterable[Path]) -> dict[str, int]:
    """Postings stored and distinct keys over these segments' concept folders (the manifest
    entry)."""
    postings, names = 0, set()
    for folder in folders:
        postings += len(_array(folder, "rows"))
        names.update(pq.ParquetFile(folder / KEYS_FILE).read(["key"]).column(0).to_pylist())
    return {"keys": len(names), "postings": postings}


def _segment_problems(folder: Path, findings: int) -> list[str]:
    """What is wrong with one segment's concept files (``findings``: its findings rows)."""
    a = {name: _array(folder, name) for name in ARRAYS}
    keys = pq.ParquetFile(folder / KEYS_FILE).read().to_pydict()
    patterns = pq.ParquetFile(folder / PATTERNS_FILE).metadata.num_rows
    values = pq.ParquetFile(folder / VALUES_FILE).read().to_pydict()
    problems = []

    def outside(name: str, bound: int) -> bool:
        return bool(len(a[name])) and (int(a[name].min()) < 0 or int(a[name].max()) >= bound)

    if outside("rows", findings):
        problems.append(f"{folder / 'rows.npy'}: rows outside the {findings} findings")
    for name in POSTING_ARRAYS:
        if len(a[name]) != len(a["rows"]):
            problems.append(f"{folder / name}.npy: not one entry per posting")
    ends = [s + n for s, n in zip(keys["start"], keys["count"], strict=True)]
    if sum(keys["count"]) != len(a["rows"]) or any(e > len(a["rows"]) for e in ends):
        problems.append(f"{folder / KEYS_FILE}: offsets do not cover the postings exactly")
    for name in FINDING_ARRAYS:
        if len(a[name]) != findings + (name == "modifier_offsets"):
            problems.append(f"{folder / name}.npy: not one entry per finding")
    for name in ("patterns", "finding_patterns"):
        if outside(name, patterns):
            problems.append(f"{folder / name}.npy: codes outside the {patterns} patterns")
    offsets, modifiers = a["modifier_offsets"], len(a["modifier_values"])
    if len(offsets) and (offsets[0] != 0 or offsets[-1] != modifiers
                         or bool((np.diff(offsets) < 0).any())):
        problems.append(f"{folder / 'modifier_offsets.npy'}: offsets do not cover the modifiers")
    if any(len(a[n]) != modifiers for n in MODIFIER_ARRAYS) or outside(
            "modifier_values", len(values["value"])):
        problems.append(f"{folder / 'modifier_values.npy'}: modifiers disagree with the values")
    if sum(values["count"]) != len(a["mention_keys"]):
        problems.append(f"{folder / VALUES_FILE}: offsets do not cover the mention keys exactly")
    return problems


def _missing(folder: Path) -> str | None:
    """The first of the concept files that a segment's folder lacks, if any."""
    return next((name for name in FILES if not (folder / name).is_file()), None)


def _array(folder: Path, name: str) -> np.ndarray:
    """A memory-mapped array of a segment's concept files (never a pickle)."""
    return np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)


def write_postings(folder: Path, hierarchy: Hierarchy) -> dict[str, Any]:
    """Write ``concepts/`` (postings, per-finding fields, patterns, modifier values) for the
    findings table of a segment folder, reading it batch by batch."""
    out = folder / NAME
    out.mkdir(exist_ok=True)
    source = pq.ParquetFile(folder / FINDINGS_FILE)
    n = source.metadata.num_rows
    row_type = np.int32 if n < 2**31 else np.int64
    fields = {"sentences": np.empty(n, np.int64), "finding_patterns": np.empty(n, np.int32),
              "contexts": np.empty(n, np.int8), "starts": np.empty(n, np.int32),
              "ends": np.empty(n, np.int32), "modifier_offsets": np.zeros(n + 1, np.int64)}
    concepts, concept_ids, patterns, pattern_ids, value_ids = (
        np.empty(n, np.int32), _RunningCodes(), [], _RunningCodes(), _RunningCodes())
    modifiers: dict[str, list[np.ndarray]] = {k: [] for k in MODIFIER_ARRAYS}
    mentions: list[tuple[np.ndarray, np.ndarray]] = []
    at = 0
    for batch in source.iter_batches(columns=_READ_COLUMNS):
        end = at + batch.num_rows
        keys = batch.column("report_key").to_numpy()
        indexes = batch.column("sentence_index").to_numpy()
        try:
            fields["sentences"][at:end] = sentence_codes(keys, indexes)
        except ClinsearchError as exc:
            raise ClinsearchError(f"{folder / FINDINGS_FILE}: {exc}") from None
        fields["contexts"][at:end] = context_bits(batch.column("context"))
        fields["starts"][at:end] = batch.column("start").to_numpy(zero_copy_only=False)
        fields["ends"][at:end] = batch.column("end").to_numpy(zero_copy_only=False)
        concepts[at:end] = concept_ids.encode(batch.column("concept"))[0]
        codes, new = pattern_ids.encode(batch.column("pattern"))
        fields["finding_patterns"][at:end] = codes
        for row in new.tolist():  # a new pattern: concept, name, polarity, modifiers of its first
            first = batch.slice(row, 1).to_pylist()[0]
            mods = tuple(Modifier(**m) for m in first["modifiers"])
            patterns.append({k: first[k] for k in ("pattern", "concept", "name", "polarity")}
                            | {"modifiers": modifier_values(mods)})
        mods = batch.column("modifiers")
        counts = pc.list_value_length(mods).fill_null(0).to_numpy(zero_copy_only=False)
        flat = pc.list_flatten(mods)
        base = fields["modifier_offsets"][at]
        fields["modifier_offsets"][at + 1 : end + 1] = base + np.cumsum(counts)
        value_codes = value_ids.encode(flat.field("value"))[0]
        modifiers["modifier_starts"].append(flat.field("start").to_numpy(zero_copy_only=False))
        modifiers["modifier_ends"].append(flat.field("end").to_numpy(zero_copy_only=False))
        modifiers["modifier_values"].append(value_codes)
        mentions.append((value_codes, np.repeat(keys, counts)))
        at = end
    rows, depths, key_table = _postings(concepts, concept_ids.values, hierarchy, row_type)
    sentences, contexts = fields.pop("sentences"), fields.pop("contexts")
    if fields["modifier_offsets"][-1] < 2**31:
        fields["modifier_offsets"] = fields["modifier_offsets"].astype(np.int32)
    posted = {"rows": rows, "depths": depths, "sentences": sentences[rows],
              "patterns": fields["finding_patterns"][rows], "contexts": contexts[rows]}
    for name, values in (fields | posted).items():
        np.save(out / f"{name}.npy", values, allow_pickle=False)
    for name, parts in modifiers.items():
        dtype = np.int32
        np.save(out / f"{name}.npy", np.concatenate([np.zeros(0, dtype), *parts]).astype(dtype),
                allow_pickle=False)
    mention_keys, value_table = _mentions(mentions, value_ids.values)
    np.save(out / "mention_keys.npy", mention_keys, allow_pickle=False)
    pq.write_table(value_table, out / VALUES_FILE)
    pq.write_table(pa.Table.from_pylist(patterns, schema=_PATTERN_SCHEMA), out / PATTERNS_FILE)
    pq.write_table(key_table, out / KEYS_FILE)
    return {"keys": key_table.num_rows, "postings": len(rows)}


_PATTERN_SCHEMA = pa.schema([("pattern", pa.string()), ("concept", pa.string()),
                             ("name", pa.string()), ("polarity", pa.string()),
                             ("modifiers", pa.list_(pa.string()))])


class _RunningCodes:
    """Dense codes for the distinct strings of a column read batch by batch, in order of first
    appearance over all batches."""

    def __init__(self) -> None:
        self.ids: dict[str | None, int] = {}
        self.values: list[str | None] = []

    def encode(self, column: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """Codes per row (int32), and the rows where a value appears for the first time."""
        local, indices = dictionary_codes(column)
        first = np.full(len(local), len(indices), np.int64)
        np.minimum.at(first, indices, np.arange(len(indices)))
        new = []
        for i, value in enumerate(local):
            if value not in self.ids:
                self.ids[value] = len(self.values)
                self.values.append(value)
                new.append(int(first[i]))
        mapping = np.array([self.ids[v] for v in local], np.int32)
        return mapping[indices], np.sort(np.array(new, np.int64))


def _postings(concepts: np.ndarray, names: list[str], hierarchy: Hierarchy, row_type: type
              ) -> tuple[np.ndarray, np.ndarray, pa.Table]:
    """Finding rows and depths by key, depth, row, and the key table (key, start, count)."""
    order = np.argsort(concepts, kind="stable").astype(row_type)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(concepts, minlength=len(names)))])
    under: dict[str, dict[int, list[int]]] = {}  # key: depth: concept codes
    for code, concept in enumerate(names):
        for key, depth in hierarchy.ancestors(concept).items():
            if depth > np.iinfo(np.int8).max:  # depths are stored as int8
                raise ClinsearchError(f"concept {concept!r} lies {depth} levels below {key!r};"
                                      " the concept hierarchy may be at most 127 levels deep")
            under.setdefault(key, {}).setdefault(depth, []).append(code)
    rows, depths, table = [], [], {"key": [], "start": [], "count": []}
    start = 0
    for key in sorted(under):
        table["key"].append(key)
        table["start"].append(start)
        for depth in sorted(under[key]):
            found = np.concatenate([order[bounds[c] : bounds[c + 1]] for c in under[key][depth]])
            if len(under[key][depth]) > 1:
                found.sort()
            rows.append(found)
            depths.append(np.full(len(found), depth, np.int8))
            start += len(found)
        table["count"].append(start - table["start"][-1])
    schema = pa.schema([("key", pa.string()), ("start", pa.int64()), ("count", pa.int64())])
    return (np.concatenate([np.zeros(0, row_type), *rows]),
            np.concatenate([np.zeros(0, np.int8), *depths]),
            pa.Table.from_pydict(table, schema=schema))


def _mentions(parts: list[tuple[np.ndarray, np.ndarray]], values: list[str]
              ) -> tuple[np.ndarray, pa.Table]:
    """Per modifier value code, the sorted distinct report keys stating it; and the value table
    (value, start, count into those keys)."""
    codes = np.concatenate([np.zeros(0, np.int32), *(c for c, _ in parts)]).astype(np.int64)
    keys = np.concatenate([np.zeros(0, np.int64), *(k for _, k in parts)])
    order = np.lexsort((keys, codes))
    codes, keys = codes[order], keys[order]
    fresh = np.r_[True, (codes[1:] != codes[:-1]) | (keys[1:] != keys[:-1])] if len(keys) else (
        np.zeros(0, bool))
    codes, keys = codes[fresh], keys[fresh]
    counts = np.bincount(codes, minlength=len(values))
    starts = np.cumsum(counts) - counts
    table = pa.table({"value": pa.array(values, pa.string()), "start": pa.array(starts, pa.int64()),
                      "count": pa.array(counts, pa.int64())})
    return keys, table


def context_bits(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per row of a list-of-strings context column: its flags as bits of CONTEXTS (int8)."""
    counts = pc.list_value_length(column).fill_null(0).to_numpy(zero_copy_only=False)
    coded = pc.dictionary_encode(pc.list_flatten(column))
    if isinstance(coded, pa.ChunkedArray):
        coded = coded.combine_chunks()
    bit = {c: 1 << i for i, c in enumerate(CONTEXTS)}
    bits = np.array([bit.get(v, 0) for v in coded.dictionary.to_pylist()], np.int8)
    flags = bits[coded.indices.to_numpy(zero_copy_only=False).astype(np.int64)]
    out = np.zeros(len(counts), dtype=np.int8)
    np.bitwise_or.at(out, np.repeat(np.arange(len(counts)), counts), flags)
    return out


@dataclass(frozen=True, slots=True)
class Posting:
    """The findings posted under a key, with the fields ranking needs of each."""

    rows: np.ndarray  # int64: finding rows (segment offset + row in its findings table)
    depths: np.ndarray  # int16: 0 for the concept itself, 1 for a child concept, ...
    sentences: np.ndarray  # int64 sentence codes (``sentence_codes``)
    patterns: np.ndarray  # int64 pattern codes of the concept index
    contexts: np.ndarray  # int8 context bits (1 << CONTEXTS.index(flag)); 0: asserted


class _SegmentPostings:
    """One segment's memory-mapped concept files; rows are numbered from ``offset``."""

    def __init__(self, folder: Path, offset: int, pattern_map: np.ndarray,
                 values: dict[str, tuple[int, int]], value_map: np.ndarray) -> None:
        self.folder, self.offset = folder, offset
        keys = pq.ParquetFile(folder / KEYS_FILE).read().to_pydict()
        self.keys = {k: (s, n) for k, s, n in zip(keys["key"], keys["start"], keys["count"],
                                                  strict=True)}
        self.pattern_map, self.values, self.value_map = pattern_map, values, value_map
        self.findings = len(self.array("finding_patterns"))

    def array(self, name: str) -> np.ndarray:
        """One of the segment's arrays, memory-mapped on first use."""
        found: np.ndarray | None = self.__dict__.get(name)
        if found is None:
            found = self.__dict__[name] = _array(self.folder, name)
        return found

    def slice(self, key: str, exact: bool) -> list[np.ndarray]:
        """The postings under ``key`` (depth 0 only when ``exact``): local rows, depths,
        sentence codes, local pattern codes and context bits, each one contiguous read."""
        start, count = self.keys.get(key, (0, 0))
        depths = np.array(self.array("depths")[start : start + count], np.int16)
        if exact:
            count = int(np.searchsorted(depths, 1))
            depths = depths[:count]
        return [np.array(self.array(name)[start : start + count], dtype) if name != "depths"
                else depths for name, dtype in _POSTED]


_POSTED = (("rows", np.int64), ("depths", np.int16), ("sentences", np.int64),
           ("patterns", np.int32), ("contexts", np.int8))


@dataclass(frozen=True, slots=True)
class StoredPattern:
    """One distinct finding pattern of the postings: its text and what it states."""

    text: str  # e.g. "disease|present|lobar pneumonia|right"
    concept: str
    name: str
    polarity: str
    modifiers: tuple[str, ...]


class ConceptIndex:
    """A generation's concept postings: per segment, keys and patterns read, arrays mapped."""

    def __init__(self, folders: list[Path], dropped: np.ndarray) -> None:
        self.dropped = dropped  # deleted report keys, sorted
        codes: dict[str, int] = {}
        self.patterns: list[StoredPattern] = []  # by pattern code
        self._mentions: dict[str, np.ndarray] = {}
        self._segments: list[_SegmentPostings] = []
        value_codes: dict[str, int] = {}
        offset = 0
        for folder in folders:
            table = pq.ParquetFile(folder / PATTERNS_FILE).read().to_pydict()
            local = []
            for i, pattern in enumerate(table["pattern"]):
                if pattern not in codes:
                    codes[pattern] = len(self.patterns)
                    self.patterns.append(StoredPattern(
                        pattern, table["concept"][i], table["name"][i], table["polarity"][i],
                        tuple(table["modifiers"][i])))
                local.append(codes[pattern])
            values = pq.ParquetFile(folder / VALUES_FILE).read().to_pydict()
            spans = {v: (s, n) for v, s, n in zip(values["value"], values["start"],
                                                  values["count"], strict=True)}
            value_map = np.array([value_codes.setdefault(v, len(value_codes))
                                  for v in values["value"]], np.int64)
            segment = _SegmentPostings(folder, offset, np.array(local, np.int64), spans, value_map)
            self._segments.append(segment)
            offset += segment.findings
        self.modifier_names = list(value_codes)
        self._offsets = np.array([s.offset for s in self._segments], np.int64)

    @classmethod
    def open(cls, gen: Generation) -> ConceptIndex:
        """Read each segment's key, pattern and value tables; a segment written by an older
        clinsearch (no such files) is refused with the remedy."""
        folders = [gen.segment_path(s) / NAME for s in gen.segments]
        for folder in folders:
            if missing := _missing(folder):
                raise ClinsearchError(f"{folder}: concept postings of an older clinsearch (no"
                                      f" {missing}); rebuild the index")
        return cls(folders, gen.deleted_keys())

    def lookup(self, concept: str, *, exact: bool = False, ordered: bool = True) -> Posting:
        """Findings of ``concept`` and its descendants (only the concept itself when ``exact``),
        by depth then row, as one build's postings would be (``ordered=False``: segment by
        segment, each by depth then row, for callers that order them otherwise); deleted
        reports left out."""
        parts = []
        for segment in self._segments:
            columns = segment.slice(concept, exact)
            if not len(columns[0]):
                continue
            if len(self.dropped):
                keep = ~np.isin(sentence_parts(columns[2])[0], self.dropped)
                columns = [c[keep] for c in columns]
            rows, depths, sentences, patterns, contexts = columns
            parts.append((rows + segment.offset, depths, sentences, segment.pattern_map[patterns],
                          contexts))
        if not parts:
            empty = np.zeros(0, np.int64)
            return Posting(empty, np.zeros(0, np.int16), empty, empty, np.zeros(0, np.int8))
        columns = [np.concatenate(c) for c in zip(*parts, strict=True)]
        if ordered and len(parts) > 1 and not exact:  # exact: depth 0 alone, rows rise
            order = np.argsort(columns[1], kind="stable")  # rows already rise within each depth
            columns = [c[order] for c in columns]
        return Posting(*columns)

    def mentions(self, value: str) -> np.ndarray:
        """Sorted report keys with a finding that carries modifier ``value`` (deleted reports'
        keys included: callers test live reports' keys against them)."""
        if value not in self._mentions:
            parts = [np.zeros(0, np.int64)]
            for segment in self._segments:
                start, count = segment.values.get(value, (0, 0))
                parts.append(np.asarray(segment.array("mention_keys")[start : start + count]))
            self._mentions[value] = np.unique(np.concatenate(parts))
        return self._mentions[value]

    def findings(self, sentence_rows: SentenceRows) -> PostedFindings:
        """The findings of concepts as a finding matcher reads them (``index.finding_match``),
        sentences numbered by ``sentence_rows``."""
        return PostedFindings(self, sentence_rows)

    def modifier_lists(self, rows: np.ndarray) -> pa.ListArray:
        """The modifier values of each finding of ``rows``, in the finding's order (as its
        findings row lists them)."""
        rows = np.asarray(rows, np.int64)
        at = np.searchsorted(self._offsets, rows, side="right") - 1
        order = np.argsort(at, kind="stable")
        counts, codes = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for i in np.unique(at).tolist():
            segment = self._segments[i]
            local = rows[order][at[order] == i] - segment.offset
            offsets = segment.array("modifier_offsets")
            first = np.asarray(offsets[local], np.int64)
            count = np.asarray(offsets[local + 1], np.int64) - first
            flat = np.repeat(first - (np.cumsum(count) - count), count) + np.arange(count.sum())
            counts.append(count)
            codes.append(segment.value_map[np.asarray(segment.array("modifier_values")[flat])])
        values = strings_of(self.modifier_names).take(arrow_of(np.concatenate(codes)))
        offsets = np.concatenate([[0], np.cumsum(np.concatenate(counts))]).astype(np.int32)
        lists = pa.ListArray.from_arrays(arrow_of(offsets), values)
        return lists.take(arrow_of(np.argsort(order)))

    def _locate(self, row: int) -> tuple[_SegmentPostings, int]:
        """The segment holding finding ``row`` and the row within it."""
        segment = self._segments[int(np.searchsorted(self._offsets, row, side="right")) - 1]
        return segment, row - segment.offset

    def pattern_of(self, row: int) -> int:
        """The pattern code of finding ``row``."""
        segment, local = self._locate(row)
        return int(segment.pattern_map[segment.array("finding_patterns")[local]])

    def spans(self, row: int) -> list[tuple[int, int, str | None]]:
        """Offsets in the report text of finding ``row`` (label None) and of its modifiers
        (labelled by modifier value)."""
        segment, local = self._locate(row)
        out: list[tuple[int, int, str | None]] = [
            (int(segment.array("starts")[local]), int(segment.array("ends")[local]), None)]
        first, last = (int(i) for i in segment.array("modifier_offsets")[local : local + 2])
        names = [self.modifier_names[int(segment.value_map[v])]
                 for v in segment.array("modifier_values")[first:last]]
        out += [(int(s), int(e), name) for s, e, name in zip(
            segment.array("modifier_starts")[first:last],
            segment.array("modifier_ends")[first:last], names, strict=True)]
        return out


def context_flags(bits: int) -> tuple[str, ...]:
    """The context flags of a finding's context bits."""
    return tuple(c for i, c in enumerate(CONTEXTS) if bits & (1 << i))


def flag_bits(flags: Iterable[str]) -> int:
    """The context bits of a set of context flags (``context_flags`` reversed)."""
    return sum(1 << CONTEXTS.index(c) for c in set(flags))


class PostedFindings:
    """``FindingRows`` (``index.finding_match``) from the concept postings: each concept's own
    findings (depth 0, deleted reports left out) with their polarity from their pattern, their
    context flags from their bits (the bits hold every flag of ``CONTEXTS``, the only ones a
    spec names) and their modifier values from the per-finding arrays; nothing is read for the
    other concepts."""

    def __init__(self, index: ConceptIndex, sentence_rows: SentenceRows) -> None:
        self.index, self._sentence_rows = index, sentence_rows
        polarities = [p.polarity for p in index.patterns]
        self._polarity_names = list(dict.fromkeys(polarities))
        code = {p: i for i, p in enumerate(self._polarity_names)}
        self._polarity_of = np.array([code[p] for p in polarities], np.int32)
        flags = [context_flags(bits) for bits in range(1 << len(CONTEXTS))]  # per context bits
        self._contexts = pa.ListArray.from_arrays(
            arrow_of(np.cumsum([0, *map(len, flags)]).astype(np.int32)),
            strings_of([f for each in flags for f in each]))

    def relation(self, wanted: Mapping[str, tuple[str, ...] | None], modifiers: bool) -> pa.Table:
        """See ``FindingRows.relation``."""
        columns: list[list[np.ndarray]] = [[np.zeros(0, dtype)] for dtype in (
            np.int64, np.int32, np.int8, np.int32, np.int64)]
        for code, (concept, polarities) in enumerate(wanted.items()):
            posting = self.index.lookup(concept, exact=True)
            patterns: np.ndarray = posting.patterns
            keep: slice | np.ndarray = slice(None)
            if polarities is not None:  # by pattern first: one pass over the postings
                admitted = np.array([p in polarities for p in self._polarity_names], bool)
                keep = admitted[self._polarity_of][patterns]
                patterns = patterns[keep]
            kept = (posting.sentences[keep], self._polarity_of[patterns],
                    posting.contexts[keep], np.full(len(patterns), code, np.int32),
                    posting.rows[keep] if modifiers else np.zeros(0, np.int64))
            for column, values in zip(columns, kept, strict=True):
                column.append(values)
        sentences, polarity, contexts, concept, rows = (np.concatenate(c) for c in columns)
        keys, indexes = sentence_parts(sentences)
        return relation(
            self._sentence_rows(keys, indexes),
            pa.DictionaryArray.from_arrays(arrow_of(concept), strings_of(list(wanted))),
            pa.DictionaryArray.from_arrays(arrow_of(polarity), strings_of(self._polarity_names)),
            self._contexts.take(arrow_of(contexts.astype(np.int64))),
            self.index.modifier_lists(rows) if modifiers else None)
