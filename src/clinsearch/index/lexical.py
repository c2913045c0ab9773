"""The ``lexical`` component: tantivy BM25 indexes over sentences and over whole reports.

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
still count in them until a merge rebuilds the indexes (see ``LexicalComponent.delete``).
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

from clinsearch.index.component import Change, Generation
from clinsearch.index.links import link_tree
from clinsearch.progress import track

if TYPE_CHECKING:
    from clinsearch.index.integrity import CoreRows

NAME = "lexical"
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
    total: int  # how many documents matched in all

    @property
    def exhausted(self) -> bool:
        """Whether every matching document is in these hits."""
        return len(self.scores) >= self.total


class LexicalComponent:
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
        link_tree(prev.path / NAME, gen.path / NAME, skip=_LOCK_FILES)
        for granularity in GRANULARITIES:
            index = _open(gen.path / NAME / granularity, self.analyzer)
            batches = _batches(gen, granularity, change.report_keys)
            self._commit(index, _documents(batches, granularity), gen.progress, granularity)
        return self._info(gen)

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        """Link the previous indexes' files and mark the removed reports' documents deleted.

        Deleted documents still count in tantivy's BM25 statistics (document count, document
        frequencies, mean length) until they are merged away, so scores drift from a fresh
        build's. To keep BM25 exact where it is cheap and the drift bounded where it is not,
        the delete rebuilds both indexes when the index holds at most ``merge_below_sentences``
        sentences or when more than ``max_deleted_fraction`` of the documents are deleted.
        """
        if _counts(prev.path / NAME / "sentences")[0] <= self.merge_below:
            return self._rebuild(gen)
        link_tree(prev.path / NAME, gen.path / NAME, skip=_LOCK_FILES)
        removed = list(change.report_keys)
        for granularity in GRANULARITIES:
            index = _open(gen.path / NAME / granularity, self.analyzer)
            writer = index.writer(heap_size=_WRITER_HEAP, num_threads=1)
            writer.delete_documents_by_query(
                tantivy.Query.term_set_query(index.schema, "report_key", removed)
            )
            writer.commit()
            writer.wait_merging_threads()
        live, deleted = _counts(gen.path / NAME / "sentences")
        if deleted > self.max_deleted * (live + deleted):
            shutil.rmtree(gen.path / NAME)  # only this generation's links: prev keeps its files
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
            link_tree(prev.path / NAME, gen.path / NAME, skip=_LOCK_FILES)
            return self._info(gen)
        return self._rebuild(gen)

    def open(self, gen: Generation) -> LexicalSearcher:
        """A searcher over the generation's indexes."""
        return LexicalSearcher(gen.path / NAME, self.analyzer)

    def check(self, gen: Generation, core: CoreRows, entry: Mapping[str, Any]) -> list[str]:
        """Problems: live BM25 documents that are not exactly the reports and the sentences,
        or counts (live and deleted) that differ from the manifest's."""
        searcher = self.open(gen)
        problems = []
        for granularity in GRANULARITIES:
            keys, indexes = searcher.all_keys(granularity)
            folder = gen.path / NAME / granularity
            if granularity == "reports":
                agree = np.array_equal(np.sort(keys), np.sort(core.report_keys))
            else:
                agree = core.same_sentences(keys, indexes)
            if not agree:
                problems.append(f"{folder}: {len(keys)} BM25 documents do not match the"
                                f" {granularity} table ({len(core.report_keys)} reports,"
                                f" {len(core.sentence_keys)} sentences)")
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
            index = _create(gen.path / NAME / granularity, granularity, self.analyzer)
            batches = _batches(gen, granularity, None)
            self._commit(index, _documents(batches, granularity), gen.progress, granularity)
        return self._info(gen)

    def _commit(
        self,
        index: tantivy.Index,
        documents: Iterable[tantivy.Document],
        progress: bool,
        granularity: str,
    ) -> None:
        """Add ``documents`` in new segments and commit; tantivy's merge policy may merge
        small segments in the background, and the write waits for those merges."""
        writer = index.writer(heap_size=_WRITER_HEAP, num_threads=1)
        for doc in track(documents, f"indexing {granularity} (BM25)", enabled=progress):
            writer.add_document(doc)
        writer.commit()
        writer.wait_merging_threads()

    def _info(self, gen: Generation) -> dict[str, Any]:
        """The manifest entry: live and deleted document counts, the analyzer settings."""
        counts = {g: _counts(gen.path / NAME / g) for g in GRANULARITIES}
        return {
            "documents": {g: live for g, (live, _) in counts.items()},
            "deleted": {g: deleted for g, (_, deleted) in counts.items()},
            "analyzer": self.analyzer.to_options(),
        }


class LexicalSearcher:
    """BM25 search over the sentence and report indexes of one generation."""

    def __init__(self, folder: Path, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._text_analyzer = analyzer.tantivy()
        self._indexes = {g: self._open_read_only(folder / g, analyzer) for g in GRANULARITIES}
        self._searchers = {g: index.searcher() for g, index in self._indexes.items()}

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
    ) -> Ranked:
        """The ``limit`` best documents for the OR of ``terms``, optionally within some reports."""
        if not terms:
            empty = np.empty(0, np.int64)
            return Ranked(np.empty(0, np.float32), empty, empty, 0)
        index = self._indexes[granularity]
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(index.schema, "text", t))
                for t in terms
            ]
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
        sentence index): the same order however the documents lie in segments.

        tantivy breaks ties by segment and document order, which differ between an index grown
        by adds and a fresh build; so hits are fetched until a lower score closes the ties at
        the cut, then sorted by keys.
        """
        searcher = self._searchers[granularity]
        fetch = limit + _TIE_MARGIN
        result = searcher.search(query, limit=fetch, count=True)
        hits, total = result.hits, result.count
        while limit < len(hits) < total and hits[-1][0] >= hits[limit - 1][0]:
            fetch *= 8  # few, large steps: each one scores the matching documents again
            hits = searcher.search(query, limit=fetch, count=False).hits
        addresses = [address for _, address in hits]
        scores = np.fromiter((score for score, _ in hits), np.float32, len(addresses))
        report_keys = np.asarray(searcher.fast_field_values("report_key", addresses), np.int64)
        if granularity == "sentences":
            indexes = np.asarray(searcher.fast_field_values("index", addresses), np.int64)
            order = np.lexsort((indexes, report_keys, -scores))[:limit]
            return Ranked(scores[order], report_keys[order], indexes[order], total)
        order = np.lexsort((report_keys, -scores))[:limit]
        return Ranked(scores[order], report_keys[order], None, total)

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


def _create(folder: Path, granularity: str, analyzer: Analyzer) -> tantivy.Index:
    """A new, empty tantivy index in ``folder``."""
    folder.mkdir(parents=True)
    index = tantivy.Index(_schema(granularity), path=str(folder))
    index.register_tokenizer(TOKENIZER, analyzer.tantivy())
    return index


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


def _counts(folder: Path) -> tuple[int, int]:
    """(live, deleted) documents of a tantivy index, from its ``meta.json``."""
    segments = json.loads((folder / "meta.json").read_text(encoding="utf-8"))["segments"]
    stored = sum(int(segment["max_doc"]) for segment in segments)
    deleted = sum(int((segment.get("deletes") or {}).get("num_deleted_docs", 0))
                  for segment in segments)
    return stored - deleted, deleted
