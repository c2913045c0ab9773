"""Run cohort queries over loaded cohort arrays: exact counts, member ids, evidence, CSV export."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clinsearch.exports import csv_cell, open_export
from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.evaluator import Evaluator, Resolver, TextReader
from clinsearch.search.cohort.sql import ID_COLUMNS
from clinsearch.search.cohort.syntax import Node, parse
from clinsearch.units import Level, check_level

ResolverFor = Callable[[str], Resolver]  # the term resolver for one query text

COUNT_LEVELS: tuple[Level, ...] = ("patient", "visit", "report")


@dataclass(frozen=True, slots=True)
class Member:
    """A unit in the cohort with one evidence sentence (empty when only negations matched)."""

    ids: tuple[str, ...]  # the unit's ID_COLUMNS values
    report_id: str
    sentence_id: str
    term: str
    section: str
    sentence: str


class CohortEngine:
    """Parses and evaluates cohort queries against one index's cohort arrays."""

    def __init__(self, arrays: CohortArrays, resolver_for: ResolverFor,
                 read_text: TextReader | None = None) -> None:
        """``read_text``: how text matches are found (see ``Evaluator``)."""
        self.arrays = arrays
        self._resolver_for = resolver_for
        self._read_text = read_text

    def _prepare(self, query: str) -> tuple[Evaluator, Node]:
        """The query's tree and an evaluator for it (its memos shared by every level)."""
        tree = parse(query)
        return Evaluator(self.arrays, self._resolver_for(query), self._read_text), tree

    def _evaluate(self, query: str, level: Level) -> tuple[Evaluator, Node, np.ndarray]:
        check_level(level)
        evaluator, tree = self._prepare(query)
        return evaluator, tree, evaluator.units(tree, level)

    def count(self, query: str, level: Level) -> int:
        """How many ``level`` units match ``query``, exactly."""
        return int(self._evaluate(query, level)[2].sum())

    def counts(self, query: str) -> dict[Level, int]:
        """Exact counts of matching patients, visits and reports (the query evaluated at each);
        one evaluator serves the three, so each term is looked up once."""
        evaluator, tree = self._prepare(query)
        return {level: int(evaluator.units(tree, level).sum()) for level in COUNT_LEVELS}

    def ids(self, query: str, level: Level) -> list[tuple[str, ...]]:
        """The ``ID_COLUMNS`` of each ``level`` unit matching ``query``, sorted."""
        mask = self._evaluate(query, level)[2]
        return sorted(self._shown(level, np.flatnonzero(mask)))

    def members(self, query: str, level: Level) -> list[Member]:
        """Matching ``level`` units, each with its earliest evidence sentence, sorted by ids."""
        evaluator, tree, mask = self._evaluate(query, level)
        best = self._best_evidence(evaluator, tree, level, mask)
        units = np.flatnonzero(mask)
        evidenced = [k for k in units.tolist() if k in best]
        shown = dict(zip(evidenced, self.arrays.shown_sentences(
            np.array([best[k][0] for k in evidenced], dtype=np.int64)), strict=True))
        out = []
        for k, ids in zip(units.tolist(), self._shown(level, units), strict=True):
            if k not in shown:
                out.append(Member(ids, "", "", "", "", ""))
                continue
            report_id, sentence_id, section, text = shown[k]
            out.append(Member(ids, report_id, sentence_id, best[k][1], section, text))
        out.sort(key=lambda m: m.ids)
        return out

    def _best_evidence(self, evaluator: Evaluator, tree: Node, level: Level,
                       mask: np.ndarray) -> dict[int, tuple[int, str]]:
        """Per matching unit: its earliest evidence sentence and the term it matched."""
        c = self.arrays
        sources_list = evaluator.evidence(tree, level)
        parts = []
        for source_no, ev in enumerate(sources_list):
            s = ev.sentences
            for scope, scope_mask in ev.within:
                s = s[scope_mask[c.sentence_units(scope, s)]]
            s = s[mask[c.sentence_units(level, s)]]
            parts.append(np.stack([s, np.full(len(s), source_no)]))
        if not parts:
            return {}
        sentences, sources = np.concatenate(parts, axis=1)
        units = c.sentence_units(level, sentences)
        order = np.lexsort((sources, c.evidence_rank(sentences), units))
        first = np.ones(len(order), dtype=bool)
        first[1:] = units[order][1:] != units[order][:-1]
        return {int(units[i]): (int(sentences[i]), sources_list[int(sources[i])].label)
                for i in order[first]}

    def _shown(self, level: Level, uids: np.ndarray) -> list[tuple[str, ...]]:
        """The ID_COLUMNS values of the units ``uids`` of ``level`` (read for these only)."""
        c = self.arrays
        reports = c.sentence_report[uids] if level == "sentence" else c.first_report[level][uids]
        columns = [c.values.sentences("id", uids) if col == "sentence_id"
                   else c.values.reports(col.removeprefix("report_"), reports)
                   for col in ID_COLUMNS[level]]
        return [tuple(str(v) for v in row) for row in zip(*columns, strict=True)]


def members_csv_rows(members: list[Member], level: Level) -> Iterator[list[str]]:
    """The cohort CSV's rows: a header, then one row per member with its evidence; cells are
    neutralised against formula injection (see ``csv_cell``)."""
    yield [*ID_COLUMNS[level], "evidence_report_id", "evidence_sentence_id", "matched", "section",
           "evidence_sentence"]
    for m in members:
        row = [*m.ids, m.report_id, m.sentence_id, m.term, m.section, m.sentence]
        yield [csv_cell(cell) for cell in row]


def write_members_csv(members: list[Member], level: Level, path: Path, force: bool = False
                      ) -> None:
    """Write the cohort to ``path`` as CSV through ``open_export`` (atomic, private, never
    overwriting unless ``force``)."""
    with open_export(path, force=force, newline="") as out:
        csv.writer(out).writerows(members_csv_rows(members, level))
