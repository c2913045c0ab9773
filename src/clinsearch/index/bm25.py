"""The ``bm25`` component: tantivy BM25 indexes over sentences and over whole reports.

Text is split into words, lower-cased, stripped of stopwords and stemmed (Snowball English).
The default stopword list is Lucene's English list without the negation cues "no" and "not",
which carry meaning in clinical text ("no effusion"). Each tantivy document stores the integer
report key (and, for sentences, the sentence index) as fast fields for aggregation, so a hit is
mapped to its sentence, report, visit and patient without reading stored documents.

Generations share segments: ``add`` hard-links the previous generation's tantivy files and
writes new segments beside them; ``delete`` hard-links them and adds tantivy deletion bitsets
(``.del`` files). tantivy never writes into an existing file (new segments, new ``.del`` files,
``meta.json`` replaced by rename), so the previous generation keeps answering as before.
BM25 statistics are index-wide, so adds give the scores of a fresh build; deleted documents
still count in them until a merge rebuilds the indexes (see ``BM25Component.delete``).

Hits are ordered by (score, report key, sentence index), the same however documents lie in
segments. tantivy breaks score ties by (segment, document), so every write leaves each index
*key-ordered* where it can: ``key_order.json`` records each tantivy segment's smallest and
largest keys and whether its documents are in key order (tantivy's background merges
concatenate small segments by size, not by key), and ``meta.json`` lists the segments in key
order. The leading segments whose documents precede all others in key order are the *ordered
prefix*: when the documents tied at the cut of a search start there, tantivy's top hits are
already in key order. Otherwise (or for an index written before this record) the search fetches
every hit tied at the cut and sorts them by keys.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import tantivy
from tantivy import Filter, TextAnalyzer, TextAnalyzerBuilder, Tokenizer

from clinsearch.atomic import atomic_path
from clinsearch.index.component import Change, Generation
from clinsearch.index.links import link_tree
from clinsearch.progress import track

if TYPE_CHECKING:
    from clinsearch.index.component import CoreRows

NAME = "bm25"
FOLDER = "lexical"  # its folder in a generation, named as before so existing indexes open
TOKENIZER = "clinsearch_text"
LUCENE_ENGLISH_STOPWORDS = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
)  # fmt: skip
NEGATION_CUES = frozenset({"no", "not"})
DEFAULT_STOPWORDS = tuple(w for w in LUCENE_ENGLISH_STOPWORDS if w not in NEGATION_CUES)
GRANULARITIES = ("sentences", "reports")
_WRITER_HEAP = 128_000_000
_MAX_TOKEN_CHARS = 40
_LOCK_FILES = frozenset({".tantivy-meta.lock", ".tantivy-writer.lock"})
# A delete rebuilds the indexes (exact BM25 statistics, no deleted terms left) when the index
# holds at most this many sentences, or when more than this fraction of documents is deleted.
MERGE_BELOW_SENTENCES = 200_000
MAX_DELETED_FRACTION = 0.05
_TIE_MARGIN = 16  # extra hits fetched so that documents tied at the cut can be ordered
ORDER_FILE = "key_order.json"


@dataclass(frozen=True, slots=True)
class Analyzer:
    """The text analysis shared by indexing, querying and highlighting."""

    stemmer: str | None = "english"
    stopwords: tuple[str, ...] = DEFAULT_STOPWORDS

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> Analyzer:
        """Build from options: ``stemmer`` (a Snowball language or None), ``stopwords``."""
        return cls(
            stemmer=options.get("stemmer", "english"),
            stopwords=tuple(options.get("stopwords", DEFAULT_STOPWORDS)),
        )

    def to_options(self) -> dict[str, Any]:
        """The options that rebuild this analyzer (recorded in the manifest)."""
        return {"stemmer": self.stemmer, "stopwords": list(self.stopwords)}

    def tantivy(self) -> TextAnalyzer:
        """The tantivy analyzer: words, long-token removal, lower case, stopwords, stemming."""
        builder = (
            TextAnalyzerBuilder(Tokenizer.simple())
            .filter(Filter.remove_long(_MAX_TOKEN_CHARS))
            .filter(Filter.lowercase())
            .filter(Filter.custom_stopword(list(self.stopwords)))
        )
        if self.stemmer:
            builder = builder.filter(Filter.stemmer(self.stemmer))
        return builder.build()


@dataclass(frozen=True, slots=True)
class Ranked:
    """Top hits of one tantivy search, best first, with the keys needed to place them."""

    scores: np.ndarray  # float32
    report_keys: np.ndarray  # int64
    sentence_indexes: np.ndarray | None  # int64, sentence granularity only
    exhausted: bool  # every matching document is in these hits


class BM25Component:
    """Builds and updates a generation's two tantivy indexes, ``lexical/{sentences,reports}``.

    Options: ``stemmer`` and ``stopwords`` (the analyzer), ``merge_below_sentences`` and
    ``max_deleted_fraction`` (when a delete rebuilds the indexes rather than only marking).
    """

    name = NAME

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.analyzer = Analyzer.from_options(options)
        self.merge_below = int(options.get("merge_below_sentences", MERGE_BELOW_SENTENCES))
        self.max_deleted = float(options.get("max_deleted_fraction", MAX_DELETED_FRACTION))

    def build(self, gen: Generation) -> dict[str, Any]:
        """Index every sentence and every report of the generation."""
        return self._rebuild(gen)

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Link the previous indexes' files and add the new reports' documents (new segments)."""
        link_tree(prev.path / FOLDER, gen.path / FOLDER, skip=_LOCK_FILES)
        for granularity in GRANULARITIES:
            folder = gen.path / FOLDER / granularity
            batches = _batches(gen, granularity, change.report_keys)
            self._commit(folder, _documents(batches, granularity), gen.progress, granularity)
        return self._info(gen)

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Link the previous indexes' files and mark the removed reports' documents deleted.

        Deleted documents still count in tantivy's BM25 statistics (document count, document
        frequencies, mean length) until they are merged away, so scores drift from a fresh
        build's. To keep BM25 exact where it is cheap and the drift bounded where it is not,
        the delete rebuilds both indexes when the index holds at most ``merge_below_sentences``
        sentences or when more than ``max_deleted_fraction`` of the documents are deleted.
        """
        if _counts(prev.path / FOLDER / "sentences")[0] <= self.merge_below:
            return self._rebuild(gen)
        link_tree(prev.path / FOLDER, gen.path / FOLDER, skip=_LOCK_FILES)
        removed = list(change.report_keys)
        for granularity in GRANULARITIES:
            folder = gen.path / FOLDER / granularity
            index = _open(folder, self.analyzer)
            writer = index.writer(heap_size=_WRITER_HEAP, num_threads=1)
            writer.delete_documents_by_query(
                tantivy.Query.term_set_query(index.schema, "report_key", removed)
            )
            writer.commit()
            writer.wait_merging_threads()
            _order_segments(folder, granularity, self.analyzer)
        live, deleted = _counts(gen.path / FOLDER / "sentences")
        if deleted > self.max_deleted * (live + deleted):
            shutil.rmtree(gen.path / FOLDER)  # only this generation's links: prev keeps its files
            return self._rebuild(gen)
        return self._info(gen)

    def merge(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """After a merge of core segments: when ``change`` names reports to erase, rebuild both
        indexes from the generation's tables (which leave deleted reports out): one segment
        each, exact BM25 statistics, no term or posting left of a deleted report. A merge
        that only regroups core segments links the previous files (tantivy merges its own
        segments as it writes, and its deletion marks stay).

        tantivy-py exposes no merge call (only ``garbage_collect_files`` and
        ``wait_merging_threads``), so rebuilding is how deleted reports are erased.
        """
        if not change.report_keys:
            link_tree(prev.path / FOLDER, gen.path / FOLDER, skip=_LOCK_FILES)
            return self._info(gen)
        return self._rebuild(gen)

    def open(self, gen: Generation) -> BM25Searcher:
        """A searcher over the generation's indexes."""
        return BM25Searcher(gen.path / FOLDER, self.analyzer)

    def check(self, gen: Generation, core: CoreRows, entry: Mapping[str, Any]) -> list[str]:
        """Problems: live BM25 documents that are not exactly the reports and the sentences,
        counts (live and deleted) that differ from the manifest's, or a key order record
        that is not the segments' (which would let tied hits come in the wrong order)."""
        searcher = self.open(gen)
        problems = []
        for granularity in GRANULARITIES:
            keys, indexes = searcher.all_keys(granularity)
            folder = gen.path / FOLDER / granularity
            if granularity == "reports":
                agree = np.array_equal(np.sort(keys), np.sort(core.report_keys))
            else:
                agree = core.same_sentences(keys, indexes)
            if not agree:
                problems.append(f"{folder}: {len(keys)} BM25 documents do not match the"
                                f" {granularity} table ({len(core.report_keys)} reports,"
                                f" {len(core.sentence_keys)} sentences)")
            problems += _order_problems(folder, searcher._searchers[granularity], granularity)
            counts = (("documents", "live", len(keys)), ("deleted", "deleted", _counts(folder)[1]))
            for field, label, found in counts:
                recorded = entry.get(field, {}).get(granularity)
                if recorded != found:
                    problems.append(f"{folder}: {found} {label} documents, the manifest says"
                                    f" {recorded}")
        return problems

    def _rebuild(self, gen: Generation) -> dict[str, Any]:
        """Write both indexes anew from the generation's tables (its live reports)."""
        for granularity in GRANULARITIES:
            folder = gen.path / FOLDER / granularity
            _create(folder, granularity)
            batches = _batches(gen, granularity, None)
            self._commit(folder, _documents(batches, granularity), gen.progress, granularity)
        return self._info(gen)

    def _commit(
        self,
        folder: Path,
        documents: Iterable[tantivy.Document],
        progress: bool,
        granularity: str,
    ) -> None:
        """Add ``documents`` (in key order) in new segments and commit; tantivy's merge policy
        may merge small segments in the background, and the write waits for those merges.
        The segments are then listed in key order."""
        writer = _open(folder, self.analyzer).writer(heap_size=_WRITER_HEAP, num_threads=1)
        for doc in track(documents, f"indexing {granularity} (BM25)", enabled=progress):
            writer.add_document(doc)
        writer.commit()
        writer.wait_merging_threads()
        _order_segments(folder, granularity, self.analyzer)

    def _info(self, gen: Generation) -> dict[str, Any]:
        """The manifest entry: live and deleted document counts, the analyzer settings."""
        counts = {g: _counts(gen.path / FOLDER / g) for g in GRANULARITIES}
        return {
            "documents": {g: live for g, (live, _) in counts.items()},
            "deleted": {g: deleted for g, (_, deleted) in counts.items()},
            "analyzer": self.analyzer.to_options(),
        }


class BM25Searcher:
    """BM25 search over the sentence and report indexes of one generation."""

    def __init__(self, folder: Path, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._text_analyzer = analyzer.tantivy()
        self._indexes = {g: self._open_read_only(folder / g, analyzer) for g in GRANULARITIES}
        self._searchers = {g: index.searcher() for g, index in self._indexes.items()}
        self._ordered_prefix = {g: _ordered_prefix(folder / g, self._searchers[g], g)
                                for g in GRANULARITIES}

    def _open_read_only(self, folder: Path, analyzer: Analyzer) -> tantivy.Index:
        """Open a tantivy index to search it, also where the folder is not writable.

        tantivy takes a lock file in the index folder even to read; in a read-only folder the
        index is opened through a private folder of links to its files instead.
        """
        try:
            return _open(folder, analyzer)
        except ValueError as exc:
            if "Lockfile" not in str(exc):
                raise
        shadow = Path(tempfile.mkdtemp(prefix="clinsearch-readonly-"))
        weakref.finalize(self, shutil.rmtree, shadow, True)
        for entry in folder.iterdir():
            if not entry.name.endswith(".lock"):
                (shadow / entry.name).symlink_to(entry.resolve())
        return _open(shadow, analyzer)

    def num_docs(self, granularity: str) -> int:
        """How many live documents an index holds."""
        return self._searchers[granularity].num_docs

    def all_keys(self, granularity: str) -> tuple[np.ndarray, np.ndarray | None]:
        """Report keys (and, for sentences, sentence indexes) of every live document."""
        searcher = self._searchers[granularity]
        result = searcher.search(tantivy.Query.all_query(), limit=max(searcher.num_docs, 1))
        addresses = [address for _, address in result.hits]
        keys = np.asarray(searcher.fast_field_values("report_key", addresses), np.int64)
        if granularity != "sentences":
            return keys, None
        return keys, np.asarray(searcher.fast_field_values("index", addresses), np.int64)

    def terms(self, query: str) -> list[str]:
        """The query's terms after analysis (repeats kept: they weigh more, as in Lucene)."""
        return self._text_analyzer.analyze(query)

    def search(
        self,
        granularity: str,
        terms: Sequence[str],
        limit: int,
        within_reports: Iterable[int] | None = None,
        require_all: bool = False,
    ) -> Ranked:
        """The ``limit`` best documents for the OR of ``terms`` (``require_all``: the AND),
        optionally within some reports."""
        if not terms:
            empty = np.empty(0, np.int64)
            return Ranked(np.empty(0, np.float32), empty, empty, True)
        index = self._indexes[granularity]
        occur = tantivy.Occur.Must if require_all else tantivy.Occur.Should
        query = tantivy.Query.boolean_query(
            [(occur, tantivy.Query.term_query(index.schema, "text", t)) for t in terms]
        )
        if within_reports is not None:
            restrict = tantivy.Query.term_set_query(
                index.schema, "report_key", list(within_reports)
            )
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, query), (tantivy.Occur.Must, restrict)]
            )
        return self._ranked(granularity, query, max(limit, 1))

    def _ranked(self, granularity: str, query: tantivy.Query, limit: int) -> Ranked:
        """The ``limit`` best documents for ``query`` ordered by (score desc, report key,
        sentence index): the same order however the documents lie in segments."""
        searcher, prefix = self._searchers[granularity], self._ordered_prefix[granularity]
        limit = max(1, min(limit, searcher.num_docs))  # tantivy allocates ``limit`` slots
        hits = searcher.search(query, limit=limit + 1, count=False).hits if prefix else None
        if hits is None or (len(hits) > limit and hits[limit][0] >= hits[limit - 1][0]
                            and hits[limit][1].segment_ord >= prefix):
            # tied at the cut, and tantivy may have preferred a tied document of a later key
            hits = _hits_through_ties(searcher, query, limit)
        addresses = [address for _, address in hits]
        scores = np.fromiter((score for score, _ in hits), np.float32, len(addresses))
        report_keys, indexes = _doc_keys(searcher, granularity, addresses)
        exhausted = len(hits) <= limit
        if granularity == "sentences":
            order = np.lexsort((indexes, report_keys, -scores))[:limit]
            return Ranked(scores[order], report_keys[order], indexes[order], exhausted)
        order = np.lexsort((report_keys, -scores))[:limit]
        return Ranked(scores[order], report_keys[order], None, exhausted)

    def matches(self, text: str, terms: Iterable[str]) -> list[tuple[int, int, str]]:
        """(start, end, term) of each word in ``text`` whose analysed form is one of ``terms``."""
        wanted = set(terms)
        tokens = self._text_analyzer.pre_tokenize(text).tokens
        return [(t.char_offset_from, t.char_offset_to, t.text) for t in tokens if t.text in wanted]


def _schema(granularity: str) -> tantivy.Schema:
    """Text plus integer keys: ``report_key`` (indexed, for deletes) and the sentence index."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=False, tokenizer_name=TOKENIZER)
    builder.add_unsigned_field("report_key", indexed=True, fast=True)
    if granularity == "sentences":
        builder.add_unsigned_field("index", fast=True)
    return builder.build()


def _create(folder: Path, granularity: str) -> None:
    """A new, empty tantivy index in ``folder``."""
    folder.mkdir(parents=True)
    tantivy.Index(_schema(granularity), path=str(folder))


def _open(folder: Path, analyzer: Analyzer) -> tantivy.Index:
    """An existing tantivy index, with our analyzer registered."""
    index = tantivy.Index.open(str(folder))
    index.register_tokenizer(TOKENIZER, analyzer.tantivy())
    return index


def _batches(gen: Generation, granularity: str, keys: Sequence[int] | None) -> Iterable[Any]:
    """The generation's sentence or report rows (of the reports ``keys``, or all) to index."""
    if granularity == "sentences":
        return gen.sentence_batches(keys, ["report_key", "index", "text"])
    return gen.report_batches(keys, ["key", "text"])


def _documents(batches: Iterable[Any], granularity: str) -> Iterable[tantivy.Document]:
    """tantivy documents from Parquet batches of sentences or reports."""
    key_column = "report_key" if granularity == "sentences" else "key"
    for batch in batches:
        texts = batch.column("text").to_pylist()
        keys = batch.column(key_column).to_pylist()
        indexes = batch.column("index").to_pylist() if granularity == "sentences" else None
        for row, (text, key) in enumerate(zip(texts, keys, strict=True)):
            doc = tantivy.Document()
            doc.add_text("text", text)
            doc.add_unsigned("report_key", key)
            if indexes is not None:
                doc.add_unsigned("index", indexes[row])
            yield doc


def _meta_segments(folder: Path) -> list[dict[str, Any]]:
    """The segments a tantivy index's ``meta.json`` lists, in its order."""
    return json.loads((folder / "meta.json").read_text(encoding="utf-8"))["segments"]


def _counts(folder: Path) -> tuple[int, int]:
    """(live, deleted) documents of a tantivy index, from its ``meta.json``."""
    segments = _meta_segments(folder)
    stored = sum(int(segment["max_doc"]) for segment in segments)
    deleted = sum(int((segment.get("deletes") or {}).get("num_deleted_docs", 0))
                  for segment in segments)
    return stored - deleted, deleted


def _hits_through_ties(searcher: tantivy.Searcher, query: tantivy.Query, limit: int) -> list:
    """At least the ``limit`` best hits (tantivy's order), and every hit tied with the last of
    them: on an index that is not key-ordered, any of the tied documents may come first."""
    fetch = limit + _TIE_MARGIN
    hits = searcher.search(query, limit=fetch, count=False).hits
    while len(hits) == fetch and hits[-1][0] >= hits[limit - 1][0]:
        fetch *= 8  # few, large steps: each one scores the matching documents again
        hits = searcher.search(query, limit=fetch, count=False).hits
    return hits


_READ_CHUNK = 1 << 20  # documents whose keys are read at once when recording a segment


@dataclass(frozen=True, slots=True)
class KeyRange:
    """The smallest and largest (report key, sentence index) of a tantivy segment, and whether
    its documents are in strictly increasing key order (deleted documents included)."""

    first: tuple[int, int]
    last: tuple[int, int]
    in_order: bool

    def to_dict(self) -> dict[str, Any]:
        """The record in ``key_order.json``."""
        return {"first": list(self.first), "last": list(self.last), "in_order": self.in_order}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KeyRange:
        """A record read from ``key_order.json``."""
        return cls(tuple(data["first"]), tuple(data["last"]), bool(data["in_order"]))


def _order_segments(folder: Path, granularity: str, analyzer: Analyzer) -> None:
    """After a commit: record each tantivy segment's key range in ``key_order.json`` (reading
    the keys of segments not recorded yet) and list the segments in ``meta.json`` in key order
    (both files replaced, never changed in place: earlier generations link the old ones)."""
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    known = _recorded_ranges(folder)
    searcher = _open(folder, analyzer).searcher()
    ranges = {
        segment["segment_id"]: known.get(segment["segment_id"])
        or _key_range(searcher, granularity, ordinal, int(segment["max_doc"]))
        for ordinal, segment in enumerate(meta["segments"])
    }
    meta["segments"].sort(key=lambda segment: ranges[segment["segment_id"]].first)
    record = {"segments": {sid: r.to_dict() for sid, r in ranges.items()}}
    for name, data in ((ORDER_FILE, record), ("meta.json", meta)):
        with atomic_path(folder / name) as tmp:
            tmp.write_text(json.dumps(data), encoding="utf-8")


def _key_range(
    searcher: tantivy.Searcher, granularity: str, ordinal: int, documents: int
) -> KeyRange:
    """The key range of segment ``ordinal``, read from its fast fields."""
    pairs = []
    in_order = True
    for start in range(0, documents, _READ_CHUNK):
        addresses = [tantivy.DocAddress(ordinal, doc)
                     for doc in range(start, min(start + _READ_CHUNK, documents))]
        keys, indexes = _doc_keys(searcher, granularity, addresses)
        step = np.diff(keys)
        in_order &= bool(np.all((step > 0) | ((step == 0) & (np.diff(indexes) > 0))))
        order = np.lexsort((indexes, keys))
        low, high = order[0], order[-1]
        chunk = [(int(keys[0]), int(indexes[0])), (int(keys[-1]), int(indexes[-1])),
                 (int(keys[low]), int(indexes[low])), (int(keys[high]), int(indexes[high]))]
        in_order &= not pairs or pairs[-1][1] < chunk[0]
        pairs.append(chunk)
    if not pairs:
        return KeyRange((0, 0), (0, 0), False)
    return KeyRange(min(c[2] for c in pairs), max(c[3] for c in pairs), in_order)


def _order_problems(folder: Path, searcher: tantivy.Searcher, granularity: str) -> list[str]:
    """Where ``key_order.json`` (if any: indexes written before it have none) differs from the
    segments' keys read anew, or ``meta.json`` lists recorded segments out of key order."""
    recorded = _recorded_ranges(folder)
    if not recorded:
        return []
    segments = _meta_segments(folder)
    problems = [
        f"{folder}: tantivy segment {segment['segment_id']} has key range {found}, {ORDER_FILE}"
        f" says {recorded.get(segment['segment_id'])}"
        for ordinal, segment in enumerate(segments)
        if (found := _key_range(searcher, granularity, ordinal, int(segment["max_doc"])))
        != recorded.get(segment["segment_id"])
    ]
    firsts = [r.first for segment in segments if (r := recorded.get(segment["segment_id"]))]
    if firsts != sorted(firsts):
        problems.append(f"{folder}: meta.json does not list the segments in key order")
    return problems


def _recorded_ranges(folder: Path) -> dict[str, KeyRange]:
    """The key ranges recorded in ``key_order.json`` (none for an index written before it)."""
    path = folder / ORDER_FILE
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))["segments"]
    return {sid: KeyRange.from_dict(record) for sid, record in data.items()}


def _ordered_prefix(folder: Path, searcher: tantivy.Searcher, granularity: str) -> int:
    """How many leading segments of the searcher (``meta.json``'s order) hold documents in
    strictly increasing (report key, sentence index) order, each segment's before the next's,
    and all before any document of the later segments: there, tantivy's tie-break (segment,
    document) is the keys' order. 0 for an index without ``key_order.json``.

    The first document of each segment in order is checked against the record (the searcher
    numbers segments as ``meta.json`` lists them)."""
    recorded = _recorded_ranges(folder)
    segments = _meta_segments(folder)
    ranges = [recorded.get(segment["segment_id"]) for segment in segments]
    if any(r is None for r in ranges) or searcher.num_segments != len(ranges):
        return 0
    known = [r for r in ranges if r is not None]
    later_first = [min((r.first for r in known[i:]), default=None) for i in range(len(known) + 1)]
    prefix = 0
    for i, r in enumerate(known):
        if not r.in_order or (i and known[i - 1].last >= r.first):
            break
        if later_first[i + 1] is None or r.last < later_first[i + 1]:
            prefix = i + 1
    keys, indexes = _doc_keys(searcher, granularity,
                              [tantivy.DocAddress(ordinal, 0) for ordinal in range(prefix)])
    found = list(zip(keys.tolist(), indexes.tolist(), strict=True))
    return prefix if found == [r.first for r in known[:prefix]] else 0


def _doc_keys(searcher: tantivy.Searcher, granularity: str, addresses: list[Any]
              ) -> tuple[np.ndarray, np.ndarray]:
    """Report keys and sentence indexes (zeros for reports) of documents, from fast fields."""
    keys = np.asarray(searcher.fast_field_values("report_key", addresses), np.int64)
    indexes = (np.asarray(searcher.fast_field_values("index", addresses), np.int64)
               if granularity == "sentences" else np.zeros_like(keys))
    return keys, indexes
