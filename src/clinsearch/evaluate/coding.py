"""Code like a coder: one report cohort per code's query, scored against the coders' codes.

A report is assigned a code when it is in the cohort of that code's query; a cohort query the
language refuses assigns nothing and is reported with its reason. Each code counts the mentions
its query declares (``CodeQuery.context``: the reason for the exam is coded, "history of" is a
personal-history code), or one context given for every code. Scores are micro-averaged
over (report, code) pairs of the judged reports, so gold codes without a query count as missed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clinsearch.errors import ClinsearchError
from clinsearch.evaluate.bench.cmc2007 import CodeQuery
from clinsearch.evaluate.finding_sets import SetScores
from clinsearch.index import IndexStore
from clinsearch.search.cohort import Cohort
from clinsearch.search.concept.ranking import PolarityOptions


@dataclass(frozen=True, slots=True)
class CodeCohort:
    """The reports one code's cohort selected, or why the cohort query was refused."""

    code: str
    query: str
    reports: frozenset[str]
    refused: str = ""
    warnings: tuple[str, ...] = ()


def code_cohorts(index: IndexStore, queries: Iterable[CodeQuery],
                 context: tuple[str, ...] | None = None) -> list[CodeCohort]:
    """Each code's report cohort (the refused ones empty, with the reason), counting the
    context flags ``context`` names for every code, or (None) those each code declares."""
    readers: dict[tuple[str, ...], Cohort] = {}
    out = []
    for q in queries:
        query = q.cohort_query
        flags = q.context if context is None else context
        if flags not in readers:
            readers[flags] = Cohort(index, PolarityOptions(context=flags))
        cohort = readers[flags]
        try:
            reports = frozenset(m.report_id for m in cohort.members(query, "report"))
            warnings = tuple(cohort.warnings(query))
        except ClinsearchError as exc:
            out.append(CodeCohort(q.code, query, frozenset(), refused=exc_message(exc)))
            continue
        out.append(CodeCohort(q.code, query, reports, warnings=warnings))
    return out


def exc_message(exc: ClinsearchError) -> str:
    """An error's message on one line (a cohort syntax error without its caret display)."""
    return str(getattr(exc, "message", exc)).splitlines()[0]


def coding_scores(gold: Mapping[str, set[str]], cohorts: Iterable[CodeCohort]) -> SetScores:
    """Per-code counts over the judged reports of ``gold`` (report id -> codes); a report's
    predicted codes are those whose cohort holds it (``.micro`` pools them)."""
    predicted: dict[str, set[str]] = {report: set() for report in gold}
    for c in cohorts:
        for report in c.reports & predicted.keys():
            predicted[report].add(c.code)
    scores = SetScores()
    for report, codes in gold.items():
        scores.add(predicted[report], codes)
    return scores
