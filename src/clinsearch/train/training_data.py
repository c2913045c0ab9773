"""From an index directory to training data: weak labels, (entity, section) queries, BM25 negatives.

These are the functions the ``clinsearch train`` commands call; they do the I/O (open the index,
read a labels file) around the pure builders of the other modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from clinsearch.errors import InputError
from clinsearch.index import IndexStore
from clinsearch.search.session import session_for
from clinsearch.train.batching import TrainingQuery, training_queries
from clinsearch.train.crossencoder import Retrieve
from clinsearch.train.labelfile import read_labels
from clinsearch.train.labels import DEFAULT_TYPES, LabelSet, build_labels
from clinsearch.train.sections import section_queries
from clinsearch.train.sources import index_sentences

Source = Literal["findings", "sections"]


def labels_from_index(
    index_dir: str | Path,
    *,
    types: tuple[str, ...] = DEFAULT_TYPES,
    with_modifiers: bool = True,
    min_matches: int = 1,
    progress: bool = True,
) -> LabelSet:
    """Weak labels ("M" / "no M" queries and their sentences) for every sentence of an index."""
    sentences = index_sentences(IndexStore.open(index_dir), progress=progress)
    return build_labels(
        sentences, types=types, with_modifiers=with_modifiers, min_matches=min_matches
    )


def sentence_texts(index: IndexStore) -> dict[str, str]:
    """Every sentence's text by id."""
    lookup = index.lookup
    return dict(zip(lookup.sentence_ids, lookup.sentence_texts, strict=True))


def training_data(
    index_dir: str | Path,
    *,
    labels_file: Path | None = None,
    source: Source = "findings",
    phrasings: bool = True,
    types: tuple[str, ...] = DEFAULT_TYPES,
    progress: bool = True,
) -> tuple[list[TrainingQuery], dict[str, str]]:
    """Training queries and the texts they match, from a labels file, findings or sections."""
    index = IndexStore.open(index_dir)
    if source == "sections":
        return section_queries(index_sentences(index, progress=progress), types=types)
    if labels_file is None:
        labels = build_labels(index_sentences(index, progress=progress), types=types)
        return training_queries(labels.queries, phrasings=phrasings), labels.texts
    queries = read_labels(labels_file)
    texts = sentence_texts(index)
    for number, query in enumerate(queries, start=1):
        missing = [i for i in query.sentence_ids if i not in texts]
        if missing:
            raise InputError(
                f"sentence id {missing[0]!r} is not in the index {index_dir}",
                file=labels_file,
                line=number,
                field="sentences",
            )
    wanted = {i for q in queries for i in q.sentence_ids}
    return training_queries(queries, phrasings=phrasings), {i: texts[i] for i in wanted}


def bm25_retriever(index: IndexStore) -> Retrieve:
    """``retrieve(query, k)``: the ids of the index's ``k`` best sentences by BM25."""

    session = session_for(index)

    def retrieve(query: str, k: int) -> list[str]:
        return [hit.id for hit in session.search(query, level="sentence", top=k, method="bm25")]

    return retrieve
