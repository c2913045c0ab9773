"""The ``findings`` component: every sentence's findings, one Parquet table per segment.

``findings.parquet`` (in each segment folder) holds one row per finding: where it is (report
key, sentence id and index, report, visit, patient, section), what it is (concept, name, type,
polarity, context flags, modifiers, pattern), its words (``start``/``end`` are offsets into
the report text, like the sentences table's) and, for a finding not present or in a context,
its ``trigger`` (the cue's rule, category, words and offsets, or the section that gave the
context). A section's meaning (``annotate.context_rules.section_contexts``) is applied here,
per row, so a sentence's cached annotation serves every section. Files written before the
trigger existed have no such column: it reads as null (``FindingsTable.table``). ``add``
annotates only the new segments' sentences; ``delete`` writes nothing (the segments' findings
are linked, the marks hide the deleted reports' rows); a merge concatenates the merged
segments' rows without deleted ones.
Nothing is ever re-annotated.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from functools import cached_property, partial
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clinsearch.annotate.finding import Finding, section_flag, section_flags
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.index.component import Change, Generation, Segment, without_keys
from clinsearch.index.conclusion import apply_conclusion
from clinsearch.index.finding_match import FindingMatcher, SentenceRows, TableFindings
from clinsearch.progress import progress_bar, track

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.annotate.context_rules import Conclusion
    from clinsearch.index.component import CoreRows

NAME = "findings"
FINDINGS_FILE = "findings.parquet"
LONG_SENTENCES = "clinsearch.long_sentences"  # table metadata: sentences annotated in pieces
_JOB_BATCHES = 4  # spaCy batches per annotation job sent to a worker
# Distinct sentence texts remembered: the repeated ones of an archive (templates) stay in, the
# one-off texts pass through (more held much memory in one-off texts for hardly more hits).
_CACHE_TEXTS = 50_000
_ROW_GROUP = 16_384  # findings rows per Parquet row group (a report's findings read as one)
_SENTENCE_FIELDS = {  # findings column: the sentences column it repeats
    "report_key": "report_key", "sentence_id": "id", "sentence_index": "index",
    "report_id": "report_id", "visit_id": "visit_id", "patient_id": "patient_id",
    "section": "section",
}  # fmt: skip
_FOUND_FIELDS = ("concept", "name", "type", "polarity", "context", "pattern", "text")
SENTENCE_COLUMNS = [
    "report_key", "id", "report_id", "visit_id", "patient_id", "index", "section", "start", "text"
]  # fmt: skip
TRIGGER_TYPE = pa.struct(
    [
        ("rule", pa.string()),
        ("category", pa.string()),
        ("text", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
    ]
)
SECTION_RULE, SECTION_CATEGORY = "section", "SECTION"  # the trigger of a section's context
MODIFIER_TYPE = pa.struct(
    [
        ("category", pa.string()),
        ("value", pa.string()),
        ("text", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
    ]
)
FINDINGS_SCHEMA = pa.schema(
    [
        ("report_key", pa.int64()),
        ("sentence_id", pa.string()),
        ("sentence_index", pa.int32()),
        ("report_id", pa.string()),
        ("visit_id", pa.string()),
        ("patient_id", pa.string()),
        ("section", pa.string()),
        ("concept", pa.string()),
        ("name", pa.string()),
        ("type", pa.string()),
        ("polarity", pa.string()),
        ("context", pa.list_(pa.string())),
        ("modifiers", pa.list_(MODIFIER_TYPE)),
        ("pattern", pa.string()),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("text", pa.string()),
        ("trigger", TRIGGER_TYPE),
    ]
)


class FindingsComponent:
    """Annotates sentences with the lexicon's findings and keeps the table in step with changes.

    Sentences stream from the sentences table in chunks; distinct texts not seen recently are
    annotated on the generation's workers (an identical sentence is annotated once while it
    stays in a bounded cache) and the rows are appended to ``findings.parquet`` chunk by chunk,
    so memory does not grow with the corpus. Options: ``lexicon`` (a lexicon YAML path; default
    the shipped chest X-ray lexicon), ``batch_size`` (sentences per spaCy batch; a job sent
    to a worker is four batches) and ``section_context`` (section name -> context flag or
    ``none``: changes the shipped section meanings).
    """

    name = NAME

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.lexicon = options.get("lexicon")
        self.batch_size = int(options.get("batch_size", 256))
        self._section_context = options.get("section_context")
        for name, flag in (self._section_context or {}).items():  # checked now, read later
            section_flag(str(flag), lambda m, n=name: InputError(m, field=f"section context {n}"))

    @cached_property
    def sections(self) -> dict[str, str]:
        """Section name -> context flag, read when sentences are annotated (the rule file is
        not parsed, nor medspaCy imported, by an index opened only to search)."""
        from clinsearch.annotate.context_rules import section_contexts

        return section_contexts(self._section_context)

    @cached_property
    def conclusion(self) -> Conclusion | None:
        """How a report's conclusion reads its findings (the shipped rules'), read when
        sentences are annotated."""
        from clinsearch.annotate.context_rules import conclusion

        return conclusion()

    def build(self, gen: Generation) -> dict[str, Any]:
        """Annotate every sentence of the generation."""
        return self.build_from(gen, self._annotated(gen, None))

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Annotate the sentences of the added reports (the new segments)."""
        return self.add_from(prev, gen, change, self._annotated(gen, change.report_keys))

    def build_from(self, gen: Generation, tables: Iterable[pa.Table]) -> dict[str, Any]:
        """Write findings computed elsewhere (e.g. by Spark executors), in report-key order."""
        return self._entry(gen, _write(gen, gen.segments, tables))

    def add_from(
        self, prev: Generation, gen: Generation, change: Change, tables: Iterable[pa.Table]
    ) -> dict[str, Any]:
        """Write the added reports' findings computed elsewhere into the new segments."""
        return self._entry(gen, _write(gen, gen.new_segments(prev), tables))

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Nothing to write: the deletion marks hide the deleted reports' findings."""
        return self._entry(gen, 0)

    def merge(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Each merged segment's findings: its sources' rows without deleted reports' rows."""
        dropped = np.union1d(prev.deleted_keys(), np.asarray(change.report_keys, np.int64))
        for segment in gen.new_segments(prev):
            sources = [prev.segment_path(s) / FINDINGS_FILE for s in prev.segments
                       if segment.first_key <= s.first_key <= segment.last_key]
            _write(gen, [segment], _rows_kept(sources, dropped))
        return self._entry(gen, 0)

    def open(self, gen: Generation) -> FindingsTable:
        """The query-time reader of the generation's findings."""
        return FindingsTable(gen)

    def check(self, gen: Generation, core: CoreRows, entry: Mapping[str, Any]) -> list[str]:
        """Problems: findings whose sentence is not in the sentences table, a wrong count."""
        findings = FindingsTable(gen)
        table = findings.table(["report_key", "sentence_index"])
        keys = table.column("report_key").to_numpy()
        indexes = table.column("sentence_index").to_numpy()
        problems = []
        where = gen.path / NAME  # the logical table, stored per segment
        if unknown := core.unknown_sentences(keys, indexes):
            problems.append(f"{where}: {unknown} finding(s) point at sentences that are not in"
                            " the sentences table")
        if entry.get("findings") != table.num_rows:
            problems.append(f"{where}: {table.num_rows} findings, the manifest says"
                            f" {entry.get('findings')}")
        return problems

    def _entry(self, gen: Generation, long_sentences: int) -> dict[str, Any]:
        """The manifest entry: live findings, the lexicon, and the sentences of this change
        annotated in pieces."""
        from clinsearch.annotate.lexicon import Lexicon

        lexicon = Lexicon.load(str(self.lexicon) if self.lexicon else None)
        return {
            "findings": FindingsTable(gen).table(["report_key"]).num_rows,
            "lexicon": lexicon.name,
            "lexicon_version": lexicon.version,
            "concepts": len(lexicon.concepts),
            "long_sentences": long_sentences,
        }

    def _annotated(
        self, gen: Generation, report_keys: Collection[int] | None
    ) -> Iterator[pa.Table]:
        """The findings of the sentences of ``report_keys`` (all when None), chunk by chunk;
        each table's metadata says how many of its new texts were annotated in pieces."""
        keys = None if report_keys is None else list(report_keys)
        total = (sum(s.sentences for s in gen.segments) if keys is None
                 else sum(b.num_rows for b in gen.sentence_batches(keys, ["report_key"])))
        size = self.batch_size * _JOB_BATCHES
        chunks = _chunks(gen.sentence_batches(keys, SENTENCE_COLUMNS), size)
        cache = _TextCache(_CACHE_TEXTS)
        jobs = ((chunk, texts, cache.claim(texts))
                for chunk in chunks for texts in [chunk.column("text").to_pylist()])
        lexicon = str(self.lexicon) if self.lexicon else None
        annotate = partial(annotate_texts, lexicon, self.batch_size)
        done = gen.workers.map(annotate, jobs, send=lambda job: job[2])
        with progress_bar("finding extraction", total, enabled=gen.progress) as advance:
            for (chunk, texts, claimed), (results, long_count) in done:
                cache.store(claimed, results)
                found = [cache.get(text, self._annotate_one) for text in texts]
                yield findings_table(chunk, found, long_count, self.sections, self.conclusion)
                advance(chunk.num_rows)
        # Each worker holds a spaCy pipeline and its vocabulary (large for a large corpus): stop
        # them now, so that the components built next (concept postings) have that memory; they
        # start again if anything else needs them.
        gen.workers.close()

    def _annotate_one(self, text: str) -> tuple[FoundRow, ...]:
        """Findings of one text, here (for a text that left the cache before it was used)."""
        return annotate_texts(str(self.lexicon) if self.lexicon else None, 1, [text])[0][0]


class FoundRow(NamedTuple):
    """A finding as its table row needs it: offsets relative to its sentence, pattern rendered
    (computed once per distinct text, in the worker that annotated it)."""

    concept: str
    name: str
    type: str
    polarity: str
    context: list[str]
    modifiers: list[tuple[str, str, str, int, int]]  # category, value, text, start, end
    pattern: str
    start: int
    end: int
    text: str
    trigger: tuple[str, str, str, int | None, int | None] | None  # rule, category, text, start, end


def found_rows(findings: Iterable[Finding]) -> tuple[FoundRow, ...]:
    """The rows of a sentence's findings (see ``FoundRow``)."""
    return tuple(
        FoundRow(f.concept, f.name, f.type, f.polarity, list(f.context),
                 [(m.category, m.value, m.text, m.start, m.end) for m in f.modifiers],
                 f.pattern, f.start, f.end, f.text,
                 None if f.trigger is None else (f.trigger.rule, f.trigger.category,
                                                  f.trigger.text, f.trigger.start, f.trigger.end))
        for f in findings
    )


def annotate_texts(
    lexicon: str | None, batch_size: int, texts: list[str]
) -> tuple[list[tuple[FoundRow, ...]], int]:
    """The finding rows of each text, and how many texts were too long to annotate in one piece
    (runs in a worker process: the annotator is built once there)."""
    from clinsearch.annotate.annotator import annotator_for  # spaCy loads only when needed

    annotator = annotator_for(lexicon)
    before = annotator.long_sentences
    results = [found_rows(f) for f in annotator.annotate_many(texts, batch_size=batch_size)]
    return results, annotator.long_sentences - before


def annotate_sentences(
    sentences: pa.Table, annotator: Annotator, batch_size: int, progress: bool = False,
    sections: Mapping[str, str] | None = None, conclusion: Conclusion | None = None,
) -> pa.Table:
    """The findings table of sentences (``SENTENCE_COLUMNS`` of the sentences table, whole
    reports), with the context flags ``sections`` gives (section name -> flag) and the reading
    of each report's ``conclusion``; its metadata says how many sentences were too long to
    annotate in one piece."""
    long_before = annotator.long_sentences
    results = track(
        annotator.annotate_many(sentences.column("text").to_pylist(), batch_size=batch_size),
        "finding extraction",
        total=sentences.num_rows,
        enabled=progress,
    )
    found = [found_rows(findings) for findings in results]
    return findings_table(sentences, found, annotator.long_sentences - long_before, sections or {},
                          conclusion)


def findings_table(
    sentences: pa.Table, found: list[tuple[FoundRow, ...]], long_sentences: int,
    sections: Mapping[str, str], conclusion: Conclusion | None = None,
) -> pa.Table:
    """The findings table rows of sentences (``SENTENCE_COLUMNS``, whole reports) and each
    one's found rows, built column by column: the sentence columns are taken, offsets shifted
    into the report, a finding in a section ``sections`` names gets that section's context flag
    (and, when nothing else made it other than present, the section as its trigger), and a
    report's ``conclusion`` reads the findings it governs (``index.conclusion``)."""
    at = [i for i, rows in enumerate(found) for _ in rows]
    flat = [row for rows in found for row in rows]
    where = pa.array(at, type=pa.int64())
    base = sentences.column("start").take(where).to_pylist()
    columns: dict[str, Any] = {
        name: sentences.column(column).take(where) for name, column in _SENTENCE_FIELDS.items()
    }
    columns |= {name: [getattr(row, name) for row in flat] for name in _FOUND_FIELDS}
    columns["modifiers"] = [
        [{"category": c, "value": v, "text": t, "start": b + s, "end": b + e}
         for c, v, t, s, e in row.modifiers]
        for b, row in zip(base, flat, strict=True)
    ]
    columns["start"] = [b + row.start for b, row in zip(base, flat, strict=True)]
    columns["end"] = [b + row.end for b, row in zip(base, flat, strict=True)]
    columns["trigger"] = [_trigger_row(row.trigger, b) for b, row in zip(base, flat, strict=True)]
    if sections:
        _apply_sections(columns, sections)
    if conclusion is not None:
        apply_conclusion(columns, sentences, conclusion)
    table = pa.Table.from_pydict({name: columns[name] for name in FINDINGS_SCHEMA.names},
                                 schema=FINDINGS_SCHEMA)
    return table.replace_schema_metadata({LONG_SENTENCES: str(long_sentences)})


def _trigger_row(trigger: tuple[str, str, str, int | None, int | None] | None,
                 base: int) -> dict[str, Any] | None:
    """A trigger as its table value, offsets shifted into the report by ``base``."""
    if trigger is None:
        return None
    rule, category, text, start, end = trigger
    return {"rule": rule, "category": category, "text": text,
            "start": None if start is None else base + start,
            "end": None if end is None else base + end}


def _apply_sections(columns: dict[str, Any], sections: Mapping[str, str]) -> None:
    """Give each finding in a section ``sections`` names that section's context flag."""
    names = columns["section"].to_pylist()
    for i, (name, flag) in enumerate(zip(names, section_flags(sections, names), strict=True)):
        if flag is None or flag in columns["context"][i]:
            continue
        columns["context"][i] = sorted([*columns["context"][i], flag])
        if columns["trigger"][i] is None:
            columns["trigger"][i] = {"rule": SECTION_RULE, "category": SECTION_CATEGORY,
                                     "text": name, "start": None, "end": None}


def conformed(table: pa.Table) -> pa.Table:
    """``table`` with the findings columns it lacks (files written before them) as nulls."""
    for field in FINDINGS_SCHEMA:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table


class _TextCache:
    """Recently annotated sentence texts and their findings, bounded, least recently used out.

    ``claim`` returns the distinct texts of a chunk that are neither cached nor already sent to
    a worker, so that identical sentences are annotated once.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._findings: OrderedDict[str, tuple[FoundRow, ...]] = OrderedDict()
        self._claimed: set[str] = set()

    def claim(self, texts: Iterable[str]) -> list[str]:
        """The texts to annotate: new ones, each once."""
        wanted = []
        for text in texts:
            if text in self._findings:
                self._findings.move_to_end(text)
            elif text not in self._claimed:
                self._claimed.add(text)
                wanted.append(text)
        return wanted

    def store(self, texts: list[str], results: list[tuple[FoundRow, ...]]) -> None:
        """Remember annotated texts, dropping the least recently used beyond capacity."""
        for text, findings in zip(texts, results, strict=True):
            self._claimed.discard(text)
            self._findings[text] = findings
        while len(self._findings) > self.capacity:
            self._findings.popitem(last=False)

    def get(
        self, text: str, annotate: Callable[[str], tuple[FoundRow, ...]]
    ) -> tuple[FoundRow, ...]:
        """The findings of ``text`` (annotated here if it was dropped meanwhile)."""
        found = self._findings.get(text)
        return found if found is not None else annotate(text)


def _chunks(batches: Iterable[pa.RecordBatch], size: int) -> Iterator[pa.Table]:
    """Sentence rows (a report's rows adjacent) in tables of whole reports, of about ``size``
    rows: a chunk ends before the report that reaches ``size`` (a report's conclusion reads its
    other sections), unless that report is all of it."""
    pending: pa.Table | None = None
    for batch in batches:
        table = pa.Table.from_batches([batch]) if pending is None else pa.concat_tables(
            [pending, pa.Table.from_batches([batch])])
        while table.num_rows >= size:
            keys = table.column("report_key").to_numpy()
            cut = _report_start(keys, size - 1) or _report_end(keys, size - 1)
            if cut == len(keys):  # one report fills what there is: wait for its end
                break
            yield table.slice(0, cut)
            table = table.slice(cut)
        pending = table
    if pending is not None and pending.num_rows:
        yield pending


def _report_start(keys: np.ndarray, row: int) -> int:
    """The first row of the report of ``row`` (a report's rows are adjacent)."""
    while row > 0 and keys[row - 1] == keys[row]:
        row -= 1
    return row


def _report_end(keys: np.ndarray, row: int) -> int:
    """The row after the last one of the report of ``row``."""
    key = keys[row]
    while row < len(keys) and keys[row] == key:
        row += 1
    return row


def _rows_kept(files: list[Path], dropped: np.ndarray) -> Iterator[pa.Table]:
    """Findings files' rows, batch by batch, without those of the ``dropped`` report keys."""
    for path in files:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65_536):
            yield pa.Table.from_batches([without_keys(batch, "report_key", dropped)])


class FindingsTable:
    """The findings service: the one reader of a generation's findings table (its segments'
    files read as one table, deleted reports' rows left out).

    Read it whole (``table``), query it with DuckDB (``sql``, the table registered as
    ``findings``), or ask which sentences and units hold a finding matching a term
    (``matcher``: ``index.finding_match``; an index with concept postings answers from those,
    ``finding_matcher``).
    """

    def __init__(self, gen: Generation) -> None:
        self.generation = gen
        missing = [path for path in gen.files(NAME) if not path.is_file()]
        if missing:
            raise ClinsearchError(f"{missing[0]}: findings table is missing; rebuild the index")

    @classmethod
    def optional(cls, gen: Generation) -> FindingsTable | None:
        """The findings table of a generation, or None when it has none."""
        return cls(gen) if gen.has(NAME) else None

    def table(
        self, columns: list[str] | None = None, report_keys: Collection[int] | None = None,
        filters: list[tuple[str, str, Any]] | None = None,
    ) -> pa.Table:
        """The live findings as a pyarrow Table (optionally only some columns, only the
        findings of ``report_keys``, or rows by pyarrow filters). A column that segments
        written before it existed lack (``trigger``) reads as null in their rows."""
        table = self.generation.table(NAME, columns, report_keys, filters, schema=FINDINGS_SCHEMA)
        return table if columns is None else table.select(columns)

    def sql(self, query: str, params: list[object] | None = None) -> pa.Table:
        """Run a DuckDB query (with ``?`` parameters) in which the table is named ``findings``."""
        from clinsearch.duck import connect

        con = connect({"findings": self.generation.rows(NAME)})
        try:
            return con.sql(query, params=params).to_arrow_table()
        finally:
            con.close()

    def matcher(self, sentence_rows: SentenceRows) -> FindingMatcher:
        """Which sentences hold a matching finding, from this table (numbered by
        ``sentence_rows`` from (report keys, sentence indexes), e.g. ``RowLookup.sentence_rows``;
        ``finding_match.finding_matcher`` prefers an index's concept postings). Reads integer
        keys and dictionary codes; modifiers only when a term needs them."""
        return FindingMatcher(TableFindings(
            self.generation.table(
                NAME, ["report_key", "sentence_index", "concept", "polarity", "context"],
                dictionary=["concept", "polarity"]),
            sentence_rows,
            lambda: self.generation.table(NAME, ["modifiers"]).column("modifiers"),
        ))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Rows as dictionaries."""
        yield from self.table().to_pylist()


def _write(gen: Generation, segments: Sequence[Segment], tables: Iterable[pa.Table]) -> int:
    """Write findings given in report-key order into the findings files of ``segments`` (each
    row into the segment whose key range holds it; every segment gets a file); returns how
    many of the texts were annotated in pieces (from the tables' metadata)."""
    ends = np.array([s.last_key for s in segments], np.int64)
    files = _SegmentFiles([gen.segment_path(s) / FINDINGS_FILE for s in segments])
    long_sentences = 0
    try:
        for given in tables:
            long_sentences += int((given.schema.metadata or {}).get(LONG_SENTENCES.encode(), 0))
            table = conformed(given).select(FINDINGS_SCHEMA.names).cast(FINDINGS_SCHEMA)
            at = np.searchsorted(ends, table.column("report_key").to_numpy(), side="left")
            bounds = np.searchsorted(at, np.arange(len(segments) + 1), side="left")
            if bounds[-1] != table.num_rows:
                raise ClinsearchError("findings of reports outside the segments being written")
            for number, (start, stop) in enumerate(pairwise(bounds)):
                if stop > start:
                    files.write(number, table.slice(start, stop - start))
    except BaseException:
        files.close(complete=False)
        raise
    files.close()
    return long_sentences


class _SegmentFiles:
    """The findings files of segments, written one after another (rows come in key order):
    one file open at a time, rows gathered into row groups of ``_ROW_GROUP`` rows (a chunk of
    annotated sentences holds a few hundred findings: written as they come, a 1M-report build
    had thousands of tiny row groups, their metadata held in memory until each file closed)."""

    def __init__(self, paths: list[Path]) -> None:
        self._paths = paths
        self._opened = 0  # files opened so far
        self._writer: pq.ParquetWriter | None = None
        self._pending: list[pa.Table] = []
        self._rows = 0

    def write(self, number: int, rows: pa.Table) -> None:
        """Append rows to file ``number`` (never one before the open one: ClinsearchError, as
        those rows would land in the wrong segment's file)."""
        if number < self._opened - 1:
            raise ClinsearchError("findings not given in report-key order")
        while self._opened <= number:
            self._next()
        self._pending.append(rows)
        self._rows += rows.num_rows
        if self._rows >= _ROW_GROUP:
            self._flush()

    def close(self, complete: bool = True) -> None:
        """Finish the open file and (when ``complete``) write every file not opened yet."""
        while complete and self._opened < len(self._paths):
            self._next()
        if complete:
            self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _next(self) -> None:
        """Finish the open file, open the next one."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
        self._writer = pq.ParquetWriter(self._paths[self._opened], FINDINGS_SCHEMA)
        self._opened += 1

    def _flush(self) -> None:
        """Write the gathered rows as one row group."""
        if self._pending and self._writer is not None:
            self._writer.write_table(pa.concat_tables(self._pending), row_group_size=_ROW_GROUP)
        self._pending, self._rows = [], 0
