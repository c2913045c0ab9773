"""A benchmark: queries with their kinds and the qrels that judge them; written as TSV + TREC."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.exports import export_folder, open_export
from clinsearch.jsonl import write_json_lines
from clinsearch.query_file import Query, write_queries
from clinsearch.trec import Qrels, write_qrels

PHRASE_ORDER = ("severity", "temporal", "laterality", "location")
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


def write_benchmark(directory: str | Path, bench: Benchmark, force: bool = False) -> list[Path]:
    """Write ``queries.tsv`` and ``qrels.txt`` into the export folder ``directory`` (created if
    missing; files replaced only if ``force``); returns their paths."""
    folder = export_folder(Path(directory))
    paths = [folder / QUERIES_FILE, folder / QRELS_FILE]
    write_queries(paths[0], bench.queries, force=force)
    write_qrels(paths[1], bench.qrels, force=force)
    return paths


def words(text: str) -> set[str]:
    """Lowercase word set, for comparing phrasings."""
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def phrase(name: str, values: tuple[tuple[str, str], ...]) -> str:
    """A finding phrased naturally: severity, temporal, laterality, location, then the name,
    dropping values the name already says ("left lower lobe opacity", "mild cardiomegaly")."""
    rank = {c: i for i, c in enumerate(PHRASE_ORDER)}
    ordered = sorted(values, key=lambda cv: (rank.get(cv[0], len(rank)), cv[1]))
    kept = [v for _, v in ordered if not words(v) <= words(name)]
    return " ".join(dict.fromkeys([*kept, name]))


def write_split(directory: str | Path, split: dict[str, tuple[int, int]], force: bool = False
                ) -> Path:
    """Write ``split.tsv``: finding, fold, labelled entries (the 2-fold unseen-query setup)."""
    path = Path(directory) / "split.tsv"
    rows = ["finding\tfold\tentries", *(f"{n}\t{f}\t{e}" for n, (f, e) in split.items())]
    with open_export(path, force=force) as out:
        out.writelines(row + "\n" for row in rows)
    return path


def write_passages(path: str | Path, passages: list[Report], force: bool = False) -> Path:
    """Write passages as a JSONL corpus (id, text, patient_id, visit_id, type, date if set), an
    export of report text (private, replaced only if ``force``)."""
    fields = ("id", "text", "patient_id", "visit_id", "type", "date")
    write_json_lines(
        path, ({f: getattr(p, f) for f in fields if getattr(p, f)} for p in passages), force=force)
    return Path(path)
