"""Concept polarity as a hard filter on any retriever (``--polarity present|absent|any|query``).

The query's concepts are found by the lexicon annotator; a hit is kept only if its unit
(sentence, report, visit or patient) has a finding of every query concept with the wanted
polarity in the index's findings table: "any" means mentioned at all, "query" the polarity
the query states ("no pneumothorax": absent). The wrapped retriever is asked for more hits
until ``top`` survive or it has no more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.errors import ClinsearchError
from clinsearch.hit import Hit
from clinsearch.units import UNIT_KEYS, Level

if TYPE_CHECKING:
    from clinsearch.index import Index

POLARITY_FILTERS = ("present", "absent", "any", "query")
SEARCH_POLARITIES = ("query", "any", "present", "absent")
FINDINGS_FILE = "findings.parquet"


class PolarityFilter:
    """Wraps a retriever: only units with the query's concepts at the wanted polarity remain."""

    def __init__(self, index: Index, base: Any, polarity: str) -> None:
        if polarity not in POLARITY_FILTERS:
            raise ClinsearchError(
                f"unknown polarity {polarity!r}; choose one of {', '.join(POLARITY_FILTERS)}"
            )
        path = index.generation.path / FINDINGS_FILE
        if not path.is_file():
            raise ClinsearchError(
                f"{index.path}: this index has no findings table, needed by --polarity;"
                " rebuild it with the findings component"
            )
        self.base = base
        self.polarity = polarity
        self.findings = pq.read_table(
            path,
            columns=["sentence_id", "report_id", "visit_id", "patient_id", "concept", "polarity"],
        )
        from clinsearch.annotate.annotator import annotator_for

        # the lexicon the findings were made with, so query and index concepts agree
        self.annotator = annotator_for(index.config.options.get("findings", {}).get("lexicon"))

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` that pass the filter."""
        return self.search_many([query], level, top)[0]

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """Filter each query's hits, fetching deeper while too few pass."""
        return [self._search(query, level, top) for query in queries]

    def query_concepts(self, query: str) -> dict[str, str]:
        """The lexicon concepts mentioned in the query, each with the polarity it states."""
        concepts: dict[str, str] = {}
        for finding in self.annotator.annotate(query):
            concepts.setdefault(finding.concept, finding.polarity)
        if not concepts:
            raise ClinsearchError(
                f"--polarity needs a lexicon concept in the query; none found in {query!r}"
            )
        return concepts

    def allowed_units(self, concepts: dict[str, str], level: Level) -> set[tuple[str, ...]]:
        """Units at ``level`` holding every concept with the wanted polarity."""
        columns = UNIT_KEYS[level]
        allowed: set[tuple[str, ...]] | None = None
        for concept, stated in concepts.items():
            mask = pc.equal(self.findings.column("concept"), concept)
            if self.polarity != "any":
                wanted = stated if self.polarity == "query" else self.polarity
                mask = pc.and_(mask, pc.equal(self.findings.column("polarity"), wanted))
            rows = self.findings.filter(mask)
            units = set(zip(*(rows.column(c).to_pylist() for c in columns), strict=True))
            allowed = units if allowed is None else allowed & units
        return allowed or set()

    def _search(self, query: str, level: Level, top: int) -> list[Hit]:
        """Ask the wrapped retriever for 4x more hits each round until ``top`` pass."""
        allowed = self.allowed_units(self.query_concepts(query), level)
        columns = UNIT_KEYS[level]
        depth = 4 * top
        while True:
            hits = self.base.search(query, level, depth)
            kept = [h for h in hits if tuple(getattr(h, c) for c in columns) in allowed]
            if len(kept) >= top or len(hits) < depth:
                break
            depth *= 4
        return [
            replace(hit, rank=rank, explanation=hit.explanation | {"polarity": self.polarity})
            for rank, hit in enumerate(kept[:top], start=1)
        ]


def polarity_options(method: str, polarity: str) -> dict[str, str]:
    """Map a search polarity (--polarity) onto concept search's own mode and the filter
    every method takes."""
    if polarity not in SEARCH_POLARITIES:
        raise ClinsearchError(
            f"unknown polarity {polarity!r}; choose one of {', '.join(SEARCH_POLARITIES)}"
        )
    if polarity == "query":
        return {}
    native = {"polarity": "any"} if method == "concept" else {}
    if method == "concept" and polarity == "any":
        return native
    return native | {"polarity_filter": polarity}
