"""Sentence-level weak-label benchmark ([Shi2022], section 2.2 and Table 1).

Each asserted finding M of a sentence is a query: "M" when present, "no M" when ruled out; the
sentences carrying that (polarity, finding) are relevant (grade 1), and sentences stating the
opposite polarity of M are judged not relevant (grade 0, the hard negatives bpref sees).
Uncertain and hypothetical mentions ("evaluate for pneumonia") are not labels.
For unseen-query evaluation the findings are split into two folds that share no finding and
hold roughly equal numbers of labelled entries.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clinsearch.annotate.finding import Finding, asserted
from clinsearch.errors import DataError
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.evaluate.separation import Labelled, finding_query
from clinsearch.query_file import Query
from clinsearch.trec import Qrels

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.index import IndexStore

FINDING_TYPES = ("finding", "disease")
POLARITY_KIND = {"present": "positive", "absent": "negative"}


@dataclass(frozen=True)
class WeakBenchmark:
    """All queries, the two folds of non-overlapping findings, and each finding's fold."""

    all: Benchmark
    folds: tuple[Benchmark, Benchmark]
    split: dict[str, tuple[int, int]]  # finding name -> (fold 1 or 2, labelled entries)


def labels(
    findings: Sequence[Finding], types: Sequence[str] = FINDING_TYPES
) -> set[tuple[str, str]]:
    """The (polarity, finding name) labels a sentence's findings assert."""
    return {
        (f.polarity, f.name)
        for f in findings
        if f.polarity in POLARITY_KIND and f.type in types and asserted(f.context)
    }


def split_findings(entries: dict[str, int], seed: int) -> dict[str, int]:
    """Assign each finding to fold 1 or 2 so the folds' entry counts are close.

    Findings are shuffled with ``seed``, then placed largest first on the lighter fold.
    """
    names = sorted(entries)
    random.Random(seed).shuffle(names)
    names.sort(key=lambda n: entries[n], reverse=True)  # stable: shuffled order breaks ties
    load = {1: 0, 2: 0}
    fold = {}
    for name in names:
        target = min(load, key=lambda k: (load[k], k))
        fold[name] = target
        load[target] += entries[name]
    return fold


def weak_benchmark(
    sentences: Iterable[tuple[str, Sequence[Finding]]],
    min_relevant: int = 3,
    types: Sequence[str] = FINDING_TYPES,
    seed: int = 0,
) -> WeakBenchmark:
    """Build the benchmark from ``(sentence id, findings)`` pairs.

    A query needs at least ``min_relevant`` relevant sentences; query ids are ``pos:NAME`` and
    ``neg:NAME`` (spaces as underscores).
    """
    relevant: dict[tuple[str, str], list[str]] = defaultdict(list)
    for sid, findings in sentences:
        for label in sorted(labels(findings, types)):
            relevant[label].append(sid)
    kept = sorted(
        (label for label, sids in relevant.items() if len(sids) >= min_relevant),
        key=lambda lab: (lab[1], lab[0] != "present"),
    )
    if not kept:
        raise DataError(
            f"no finding labels {min_relevant} or more sentences; nothing to query"
        )
    queries, grades = [], {}
    entries: dict[str, int] = defaultdict(int)
    for polarity, name in kept:
        qid = f"{'pos' if polarity == 'present' else 'neg'}:{name.replace(' ', '_')}"
        queries.append(Query(qid, finding_query(name, polarity), POLARITY_KIND[polarity]))
        opposite = relevant.get(("absent" if polarity == "present" else "present", name), [])
        docs = dict.fromkeys(opposite, 0)
        docs.update(dict.fromkeys(relevant[(polarity, name)], 1))
        grades[qid] = docs
        entries[name] += len(relevant[(polarity, name)])
    bench = Benchmark(queries, Qrels(grades))
    fold_of = split_findings(dict(entries), seed)
    name_of = {qid: name for (_, name), qid in zip(kept, grades, strict=True)}
    folds = tuple(
        bench.subset({qid for qid, name in name_of.items() if fold_of[name] == k}) for k in (1, 2)
    )
    split = {name: (fold_of[name], entries[name]) for name in sorted(entries)}
    return WeakBenchmark(bench, (folds[0], folds[1]), split)


def annotate_unique(annotator: Annotator, texts: Sequence[str]) -> list[list[Finding]]:
    """Findings of each text, annotating each distinct text once (reports repeat sentences)."""
    unique = list(dict.fromkeys(texts))
    found = dict(zip(unique, annotator.annotate_many(unique), strict=True))
    return [found[t] for t in texts]


def index_sentence_findings(
    index: IndexStore, annotator: Annotator
) -> Iterator[tuple[str, list[Finding]]]:
    """``(sentence id, findings)`` for every sentence of ``index``, found by ``annotator``."""
    lookup = index.lookup
    yield from zip(
        lookup.sentence_ids, annotate_unique(annotator, lookup.sentence_texts), strict=True
    )


def labelled_triples(
    sentences: Iterable[tuple[str, Sequence[Finding]]], types: Sequence[str] = FINDING_TYPES
) -> list[Labelled]:
    """Distinct (sentence text, finding, polarity) triples, for `separation` ([Shi2022] Table 3)."""
    seen = {
        Labelled(text, name, polarity)
        for text, findings in sentences
        for polarity, name in labels(findings, types)
    }
    return sorted(seen, key=lambda t: (t.sentence, t.finding, t.polarity))
