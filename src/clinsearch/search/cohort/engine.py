"""Run cohort queries over loaded cohort arrays: exact counts, member ids, evidence, CSV export."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clinsearch.exports import csv_cell, open_export
from clinsearch.index.finding_match import FindingSpec
from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.evaluator import Evaluator, Resolver, TextReader
from clinsearch.search.cohort.sql import ID_COLUMNS
from clinsearch.search.cohort.syntax import Bundles, Node, parse
from clinsearch.search.cohort.width import check_wide
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
    trigger: str = ""  # what made the matched finding other than stated now (cue, rule)


# a unit's earliest evidence: sentence row, the term it matched, that term's findings (None: text)
Evidence = tuple[int, str, FindingSpec | None]


@dataclass(frozen=True)
class Scope:
    """What a query may name and where it looks: the term bundles ``bundle:NAME`` reads, the
    reports it is restricted to (a mask over report ids; None: every report), and how many
    reports each of its filter expressions must select (0: any number; ``cohort.width``)."""

    bundles: Bundles = field(default_factory=dict)
    reports: np.ndarray | None = None
    min_filter_reports: int = 0


EVERYWHERE = Scope()


class CohortEngine:
    """Parses and evaluates cohort queries against one index's cohort arrays."""

    def __init__(self, arrays: CohortArrays, resolver_for: ResolverFor,
                 read_text: TextReader | None = None) -> None:
        """``read_text``: how text matches are found (see ``Evaluator``)."""
        self.arrays = arrays
        self._resolver_for = resolver_for
        self._read_text = read_text

    def _prepare(self, query: str, scope: Scope = EVERYWHERE) -> tuple[Evaluator, Node]:
        """The query's tree and an evaluator for it (its memos shared by every level)."""
        tree = parse(query, scope.bundles)
        evaluator = Evaluator(self.arrays, self._resolver_for(query), scope.reports,
                              self._read_text)
        if scope.min_filter_reports:
            check_wide(evaluator, tree, query, scope.min_filter_reports)
        return evaluator, tree

    def _evaluate(self, query: str, level: Level, scope: Scope = EVERYWHERE
                  ) -> tuple[Evaluator, Node, np.ndarray]:
        check_level(level)
        evaluator, tree = self._prepare(query, scope)
        return evaluator, tree, evaluator.units(tree, level)

    def count(self, query: str, level: Level, scope: Scope = EVERYWHERE) -> int:
        """How many ``level`` units match ``query``, exactly."""
        return int(self._evaluate(query, level, scope)[2].sum())

    def counts(self, query: str, scope: Scope = EVERYWHERE,
               levels: tuple[Level, ...] = COUNT_LEVELS) -> dict[Level, int]:
        """Exact counts of matching patients, visits and reports (or ``levels``: the query
        evaluated at each); one evaluator serves them all, so each term is looked up once."""
        return {level: int(mask.sum()) for level, mask in self.sets(query, scope, levels).items()}

    def sets(self, query: str, scope: Scope = EVERYWHERE,
             levels: tuple[Level, ...] = COUNT_LEVELS) -> dict[Level, np.ndarray]:
        """The matching units at each of ``levels``, as masks over their ids (what ``counts``
        counts)."""
        evaluator, tree = self._prepare(query, scope)
        return {level: evaluator.units(tree, level) for level in levels}

    def ids(self, query: str, level: Level, scope: Scope = EVERYWHERE) -> list[tuple[str, ...]]:
        """The ``ID_COLUMNS`` of each ``level`` unit matching ``query``, sorted."""
        mask = self._evaluate(query, level, scope)[2]
        return sorted(self._shown(level, np.flatnonzero(mask)))

    def report_mask(self, query: str, scope: Scope = EVERYWHERE) -> np.ndarray:
        """The reports matching ``query``, as a mask over report ids."""
        return self._evaluate(query, "report", scope)[2]

    def evidence_sentences(self, query: str, scope: Scope = EVERYWHERE) -> np.ndarray:
        """Every sentence that is evidence for a matching report (positive terms' matches
        within the matching reports), sorted and distinct."""
        evaluator, tree, mask = self._evaluate(query, "report", scope)
        found = self._evidence(evaluator, tree, "report", mask)
        return np.unique(np.concatenate([np.empty(0, np.int64), *(s for _, s, _ in found)]))

    def members(self, query: str, level: Level, scope: Scope = EVERYWHERE) -> list[Member]:
        """Matching ``level`` units, each with its earliest evidence sentence, sorted by ids."""
        units, ids, best = self._matching(query, level, scope)
        out = self._members(units.tolist(), ids, best)
        out.sort(key=lambda m: m.ids)
        return out

    def member_page(self, query: str, level: Level, scope: Scope, offset: int, limit: int,
                    order: Callable[[tuple[str, ...]], Any]) -> tuple[int, list[Member]]:
        """How many ``level`` units match, and those ``offset`` to ``offset + limit`` in the
        ``order`` of their ids (ties by ids, as ``members`` sorted by ``order``), the evidence
        sentences and triggers read for these alone (a page of a large cohort)."""
        units, ids, best = self._matching(query, level, scope)
        page = sorted(range(len(ids)), key=lambda i: (order(ids[i]), ids[i]))
        page = page[offset : offset + limit]
        return len(ids), self._members([int(units[i]) for i in page], [ids[i] for i in page],
                                       best)

    def _matching(self, query: str, level: Level, scope: Scope
                  ) -> tuple[np.ndarray, list[tuple[str, ...]], dict[int, Evidence]]:
        """The matching ``level`` units, their ids and each one's best evidence."""
        evaluator, tree, mask = self._evaluate(query, level, scope)
        best = self._best_evidence(evaluator, tree, level, mask)
        units = np.flatnonzero(mask)
        return units, self._shown(level, units), best

    def _members(self, units: list[int], ids: list[tuple[str, ...]],
                 best: dict[int, Evidence]) -> list[Member]:
        """The members of ``units`` (with ``ids``), their evidence sentences read."""
        evidenced = [k for k in units if k in best]
        sentences = np.array([best[k][0] for k in evidenced], dtype=np.int64)
        read = self.arrays.shown_sentences(sentences)
        triggers = self.arrays.finding_triggers(sentences, [r[1] for r in read],  # sentence ids
                                                [best[k][2] for k in evidenced])
        shown = dict(zip(evidenced, zip(read, triggers, strict=True), strict=True))
        out = []
        for k, unit_ids in zip(units, ids, strict=True):
            if k not in shown:
                out.append(Member(unit_ids, "", "", "", "", ""))
                continue
            (report_id, sentence_id, section, text), trigger = shown[k]
            out.append(Member(unit_ids, report_id, sentence_id, best[k][1], section, text,
                              trigger))
        return out

    def _best_evidence(self, evaluator: Evaluator, tree: Node, level: Level,
                       mask: np.ndarray) -> dict[int, Evidence]:
        """Per matching unit: its earliest evidence sentence, the term it matched and that
        term's findings (None: a text match)."""
        c = self.arrays
        sources_list = self._evidence(evaluator, tree, level, mask)
        parts = [np.stack([s, np.full(len(s), source_no)])
                 for source_no, (_, s, _) in enumerate(sources_list)]
        if not parts:
            return {}
        sentences, sources = np.concatenate(parts, axis=1)
        units = c.sentence_units(level, sentences)
        order = np.lexsort((sources, c.evidence_rank(sentences), units))
        first = np.ones(len(order), dtype=bool)
        first[1:] = units[order][1:] != units[order][:-1]
        best = {}
        for i in order[first].tolist():
            label, _, spec = sources_list[int(sources[i])]
            best[int(units[i])] = (int(sentences[i]), label, spec)
        return best

    def _evidence(self, evaluator: Evaluator, tree: Node, level: Level, mask: np.ndarray
                  ) -> list[tuple[str, np.ndarray, FindingSpec | None]]:
        """Each positive term's label, its sentences that lie in its scoped groups and in a
        matching ``level`` unit, and its findings."""
        c = self.arrays
        out = []
        for ev in evaluator.evidence(tree, level):
            s = ev.sentences
            for scope, scope_mask in ev.within:
                s = s[scope_mask[c.sentence_units(scope, s)]]
            out.append((ev.label, s[mask[c.sentence_units(level, s)]], ev.spec))
        return out

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
    yield [*ID_COLUMNS[level], "evidence_report_id", "evidence_sentence_id", "matched", "trigger",
           "section", "evidence_sentence"]
    for m in members:
        row = [*m.ids, m.report_id, m.sentence_id, m.term, m.trigger, m.section, m.sentence]
        yield [csv_cell(cell) for cell in row]


def export_header(query: str, level: Level, tiers: Sequence[str], within: str = "") -> str:
    """The ``#`` lines (comments to a CSV reader) a cohort CSV starts with: its definition
    (``within``: what it is restricted to, e.g. an id list) and the search tiers it counted."""
    lines = [f"cohort definition: {query}; level {level}" + (f"; {within}" if within else ""),
             f"tiers counted: {', '.join(tiers)}"]
    return "".join("# " + " ".join(line.split()) + "\r\n" for line in lines)


def write_members_csv(members: list[Member], level: Level, path: Path, force: bool = False,
                      header: str = "") -> None:
    """Write the cohort to ``path`` as CSV through ``open_export`` (atomic, private, never
    overwriting unless ``force``), after the ``header`` lines (``export_header``)."""
    with open_export(path, force=force, newline="") as out:
        out.write(header)
        csv.writer(out).writerows(members_csv_rows(members, level))
