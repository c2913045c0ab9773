"""The ``findings`` component: every sentence's findings as one Parquet table per generation.

``findings.parquet`` holds one row per finding: where it is (report key, sentence id and index,
report, visit, patient, section), what it is (concept, name, type, polarity, context flags,
modifiers, pattern) and its words (``start``/``end`` are offsets into the report text, like the
sentences table's). ``add`` annotates only the added reports' sentences and keeps the previous
rows; ``delete`` drops the deleted reports' rows; nothing is re-annotated.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.annotate.finding import Finding
from clinsearch.errors import ClinsearchError
from clinsearch.index.component import Change, Generation
from clinsearch.index.finding_match import FindingMatcher
from clinsearch.progress import progress_bar, track

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.index.integrity import CoreRows

NAME = "findings"
FINDINGS_FILE = "findings.parquet"
LONG_SENTENCES = "clinsearch.long_sentences"  # table metadata: sentences annotated in pieces
_JOB_BATCHES = 4  # spaCy batches per annotation job sent to a worker
_CACHE_TEXTS = 200_000  # distinct sentence texts remembered (well above the texts in flight)
SENTENCE_COLUMNS = [
    "report_key", "id", "report_id", "visit_id", "patient_id", "index", "section", "start", "text"
]  # fmt: skip
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
    ]
)


class FindingsComponent:
    """Annotates sentences with the lexicon's findings and keeps the table in step with changes.

    Sentences stream from the sentences table in chunks; distinct texts not seen recently are
    annotated on the generation's workers (an identical sentence is annotated once while it
    stays in a bounded cache) and the rows are appended to ``findings.parquet`` chunk by chunk,
    so memory does not grow with the corpus. Options: ``lexicon`` (a lexicon YAML path; default
    the shipped chest X-ray lexicon) and ``batch_size`` (sentences per spaCy batch; a job sent
    to a worker is four batches).
    """

    name = NAME

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.lexicon = options.get("lexicon")
        self.batch_size = int(options.get("batch_size", 256))

    def build(self, gen: Generation) -> dict[str, Any]:
        """Annotate every sentence of the generation."""
        return self.build_from(gen, self._annotated(gen, None))

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """The previous findings plus those of the added reports' sentences."""
        return self.add_from(prev, gen, change, self._annotated(gen, change.report_keys))

    def build_from(self, gen: Generation, tables: Iterable[pa.Table]) -> dict[str, Any]:
        """Write findings computed elsewhere (e.g. by Spark executors), in report-key order."""
        return _write(gen.path, tables, self.lexicon)

    def add_from(
        self, prev: Generation, gen: Generation, change: Change, tables: Iterable[pa.Table]
    ) -> dict[str, Any]:
        """The previous findings plus the added reports' findings computed elsewhere."""
        return _write(gen.path, chain(_previous(prev.path), tables), self.lexicon)

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """The previous findings without those of the deleted reports."""
        return _write(gen.path, _previous(prev.path, change.report_keys), self.lexicon)

    def open(self, gen: Generation) -> FindingsTable:
        """The query-time reader of the generation's findings."""
        return FindingsTable(gen.path)

    def check(self, gen: Generation, core: CoreRows, entry: Mapping[str, Any]) -> list[str]:
        """Problems: findings whose sentence is not in the sentences table, a wrong count."""
        table = FindingsTable(gen.path).table(["report_key", "sentence_index"])
        keys = table.column("report_key").to_numpy()
        indexes = table.column("sentence_index").to_numpy()
        problems = []
        if unknown := core.unknown_sentences(keys, indexes):
            problems.append(f"{gen.path / FINDINGS_FILE}: {unknown} finding(s) point at sentences"
                            " that are not in the sentences table")
        if entry.get("findings") != table.num_rows:
            problems.append(f"{gen.path / FINDINGS_FILE}: {table.num_rows} findings, the manifest"
                            f" says {entry.get('findings')}")
        return problems

    def _annotated(
        self, gen: Generation, report_keys: Collection[int] | None
    ) -> Iterator[pa.Table]:
        """The findings of the sentences of ``report_keys`` (all when None), chunk by chunk;
        each table's metadata says how many of its new texts were annotated in pieces."""
        keys = None if report_keys is None else list(report_keys)
        total = (pq.ParquetFile(gen.sentences_path).metadata.num_rows if keys is None
                 else sum(b.num_rows for b in gen.sentence_batches(keys, ["report_key"])))
        size = self.batch_size * _JOB_BATCHES
        chunks = _chunks(gen.sentence_batches(keys, SENTENCE_COLUMNS), size)
        cache = _TextCache(_CACHE_TEXTS)
        jobs = ((chunk, cache.claim(s["text"] for s in chunk)) for chunk in chunks)
        lexicon = str(self.lexicon) if self.lexicon else None
        annotate = partial(annotate_texts, lexicon, self.batch_size)
        done = gen.workers.map(annotate, jobs, send=lambda job: job[1])
        with progress_bar("finding extraction", total, enabled=gen.progress) as advance:
            for (chunk, texts), (results, long_count) in done:
                cache.store(texts, results)
                rows = [_row(sentence, finding) for sentence in chunk
                        for finding in cache.get(sentence["text"], self._annotate_one)]
                table = pa.Table.from_pylist(rows, schema=FINDINGS_SCHEMA)
                yield table.replace_schema_metadata({LONG_SENTENCES: str(long_count)})
                advance(len(chunk))

    def _annotate_one(self, text: str) -> list[Finding]:
        """Findings of one text, here (for a text that left the cache before it was used)."""
        return annotate_texts(str(self.lexicon) if self.lexicon else None, 1, [text])[0][0]


def annotate_texts(
    lexicon: str | None, batch_size: int, texts: list[str]
) -> tuple[list[list[Finding]], int]:
    """The findings of each text, and how many texts were too long to annotate in one piece
    (runs in a worker process: the annotator is built once there)."""
    from clinsearch.annotate.annotator import annotator_for  # spaCy loads only when needed

    annotator = annotator_for(lexicon)
    before = annotator.long_sentences
    results = list(annotator.annotate_many(texts, batch_size=batch_size))
    return results, annotator.long_sentences - before


def annotate_sentences(
    sentences: list[dict[str, Any]], annotator: Annotator, batch_size: int, progress: bool = False
) -> pa.Table:
    """The findings rows of sentence rows (``SENTENCE_COLUMNS`` of the sentences table); the
    table's metadata says how many sentences were too long to annotate in one piece."""
    long_before = annotator.long_sentences
    results = track(
        annotator.annotate_many((s["text"] for s in sentences), batch_size=batch_size),
        "finding extraction",
        total=len(sentences),
        enabled=progress,
    )
    rows = [
        _row(sentence, finding)
        for sentence, findings in zip(sentences, results, strict=True)
        for finding in findings
    ]
    table = pa.Table.from_pylist(rows, schema=FINDINGS_SCHEMA)
    return table.replace_schema_metadata(
        {LONG_SENTENCES: str(annotator.long_sentences - long_before)}
    )


class _TextCache:
    """Recently annotated sentence texts and their findings, bounded, least recently used out.

    ``claim`` returns the distinct texts of a chunk that are neither cached nor already sent to
    a worker, so that identical sentences are annotated once.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._findings: OrderedDict[str, list[Finding]] = OrderedDict()
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

    def store(self, texts: list[str], results: list[list[Finding]]) -> None:
        """Remember annotated texts, dropping the least recently used beyond capacity."""
        for text, findings in zip(texts, results, strict=True):
            self._claimed.discard(text)
            self._findings[text] = findings
        while len(self._findings) > self.capacity:
            self._findings.popitem(last=False)

    def get(self, text: str, annotate: Callable[[str], list[Finding]]) -> list[Finding]:
        """The findings of ``text`` (annotated here if it was dropped meanwhile)."""
        found = self._findings.get(text)
        return found if found is not None else annotate(text)


def _chunks(batches: Iterable[pa.RecordBatch], size: int) -> Iterator[list[dict[str, Any]]]:
    """Sentence rows (dicts) in lists of ``size``."""
    chunk: list[dict[str, Any]] = []
    for batch in batches:
        for row in batch.to_pylist():
            chunk.append(row)
            if len(chunk) == size:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _previous(folder: Path, drop_keys: Collection[int] = ()) -> Iterator[pa.Table]:
    """A previous generation's findings, batch by batch, without the reports in ``drop_keys``."""
    gone = pa.array(sorted(drop_keys), type=pa.int64())
    source = pq.ParquetFile(FindingsTable(folder).path)
    for batch in source.iter_batches(batch_size=65_536):
        kept = batch.filter(pc.invert(pc.is_in(batch.column("report_key"), value_set=gone)))
        yield pa.Table.from_batches([kept])


class FindingsTable:
    """The findings service: the one reader of a generation's findings table.

    Read it whole (``table``), query it with DuckDB (``sql``, the table registered as
    ``findings``), or ask which sentences and units hold a finding matching a term
    (``matcher``: ``index.finding_match``).
    """

    def __init__(self, folder: Path) -> None:
        self.path = folder / FINDINGS_FILE
        if not self.path.is_file():
            raise ClinsearchError(f"{self.path}: findings table is missing; rebuild the index")

    @classmethod
    def optional(cls, folder: Path) -> FindingsTable | None:
        """The findings table of a generation folder, or None when it has none."""
        return cls(folder) if (folder / FINDINGS_FILE).is_file() else None

    def table(
        self, columns: list[str] | None = None, filters: list[tuple[str, str, Any]] | None = None
    ) -> pa.Table:
        """The findings as a pyarrow Table (optionally only some columns, or rows by filters)."""
        return pq.read_table(self.path, columns=columns, filters=filters, schema=FINDINGS_SCHEMA)

    @property
    def num_rows(self) -> int:
        """How many findings the table holds (from its metadata)."""
        return pq.ParquetFile(self.path).metadata.num_rows

    def register(self, con: duckdb.DuckDBPyConnection, name: str = "findings") -> None:
        """Make the table a relation ``name`` of ``con``, handed over as a dataset (DuckDB never
        sees the path)."""
        import pyarrow.dataset as ds

        con.register(name, ds.dataset(str(self.path), format="parquet"))

    def sql(self, query: str, params: list[object] | None = None) -> pa.Table:
        """Run a DuckDB query (with ``?`` parameters) in which the table is named ``findings``."""
        from clinsearch.duck import connect

        con = connect({"findings": self.path})
        try:
            return con.sql(query, params=params).to_arrow_table()
        finally:
            con.close()

    def matcher(self, sentence_ids: list[str]) -> FindingMatcher:
        """Which sentences (numbered as ``sentence_ids``) and units hold a matching finding."""
        return FindingMatcher(
            self.table(["sentence_id", "concept", "polarity", "modifiers", "context"]), sentence_ids
        )

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Rows as dictionaries."""
        yield from self.table().to_pylist()


def _row(sentence: Mapping[str, Any], f: Finding) -> dict[str, Any]:
    """One table row: a finding located in its sentence and report (offsets into the report)."""
    base = sentence["start"]
    return {
        "report_key": sentence["report_key"],
        "sentence_id": sentence["id"],
        "sentence_index": sentence["index"],
        "report_id": sentence["report_id"],
        "visit_id": sentence["visit_id"],
        "patient_id": sentence["patient_id"],
        "section": sentence["section"],
        "concept": f.concept,
        "name": f.name,
        "type": f.type,
        "polarity": f.polarity,
        "context": list(f.context),
        "modifiers": [
            {
                "category": m.category,
                "value": m.value,
                "text": m.text,
                "start": base + m.start,
                "end": base + m.end,
            }
            for m in f.modifiers
        ],
        "pattern": f.pattern,
        "start": base + f.start,
        "end": base + f.end,
        "text": f.text,
    }


def _write(folder: Path, tables: Iterable[pa.Table], lexicon_path: str | None) -> dict[str, Any]:
    """Write the findings table (given in parts, in order) into a generation folder; returns the
    manifest entry (``long_sentences``: sentences of this change annotated in pieces, from the
    parts' metadata)."""
    from clinsearch.annotate.lexicon import Lexicon

    rows = long_sentences = 0
    with pq.ParquetWriter(folder / FINDINGS_FILE, FINDINGS_SCHEMA) as writer:
        for table in tables:
            writer.write_table(table.select(FINDINGS_SCHEMA.names).cast(FINDINGS_SCHEMA))
            rows += table.num_rows
            long_sentences += int((table.schema.metadata or {}).get(LONG_SENTENCES.encode(), 0))
    lexicon = Lexicon.load(str(lexicon_path) if lexicon_path else None)
    return {
        "findings": rows,
        "lexicon": lexicon.name,
        "lexicon_version": lexicon.version,
        "concepts": len(lexicon.concepts),
        "long_sentences": long_sentences,
    }
