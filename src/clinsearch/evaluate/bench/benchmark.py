"""A benchmark: queries with their kinds and the qrels that judge them; written as TSV + TREC."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from clinsearch.evaluate.queries import Query, write_queries
from clinsearch.evaluate.trec import Qrels, write_qrels

QUERIES_FILE = "queries.tsv"
QRELS_FILE = "qrels.txt"


@dataclass(frozen=True)
class Benchmark:
    """Queries and their judgements; every query has at least one relevant document."""

    queries: list[Query]
    qrels: Qrels

    def subset(self, qids: set[str]) -> Benchmark:
        """The benchmark restricted to ``qids`` (order kept)."""
        return Benchmark(
            [q for q in self.queries if q.qid in qids],
            Qrels({q: d for q, d in self.qrels.grades.items() if q in qids}),
        )

    def summary(self) -> str:
        """One line: queries per kind and relevant judgements."""
        kinds = Counter(q.kind for q in self.queries)
        relevant = sum(g > 0 for docs in self.qrels.grades.values() for g in docs.values())
        parts = ", ".join(f"{n} {k}" for k, n in kinds.items())
        return f"{len(self.queries)} queries ({parts}), {relevant} relevant judgements"


def write_benchmark(directory: str | Path, bench: Benchmark) -> list[Path]:
    """Write ``queries.tsv`` and ``qrels.txt`` into ``directory``; returns their paths."""
    directory = Path(directory)
    paths = [directory / QUERIES_FILE, directory / QRELS_FILE]
    write_queries(paths[0], bench.queries)
    write_qrels(paths[1], bench.qrels)
    return paths
