"""Compare several runs on one set of judgements: per-query values, group means, paired tests.

The first run is the baseline every other run is tested against, per group and measure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ir_measures import Measure

from clinsearch.errors import InputError
from clinsearch.evaluate.measures import judged_queries, per_query
from clinsearch.evaluate.significance import PairedTest, paired_test
from clinsearch.query_file import Query
from clinsearch.trec import Qrels, Run

ALL = "all"


@dataclass(frozen=True)
class Comparison:
    """Per-query values of every run, the query groups, and tests of each run vs the first."""

    measures: list[str]
    runs: list[str]
    groups: dict[str, list[str]]
    values: dict[str, dict[str, dict[str, float]]]  # run -> measure -> qid -> value
    tests: dict[tuple[str, str, str], PairedTest]  # (group, run, measure), vs runs[0]
    warnings: list[str] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        """The run the others are tested against."""
        return self.runs[0]

    def mean(self, run: str, measure: str, group: str = ALL) -> float:
        """Mean of ``measure`` over the queries of ``group`` (NaN for an empty group)."""
        qids = self.groups[group]
        if not qids:
            return math.nan
        table = self.values[run][measure]
        return sum(table[q] for q in qids) / len(qids)

    def to_dict(self) -> dict:
        """A JSON-ready dict: means per group, tests vs the baseline, and per-query values."""
        return {
            "baseline": self.baseline,
            "measures": self.measures,
            "groups": {
                group: {
                    "queries": len(qids),
                    "runs": {
                        run: {
                            m: {"mean": _finite(self.mean(run, m, group))}
                            | _test_dict(self.tests.get((group, run, m)))
                            for m in self.measures
                        }
                        for run in self.runs
                    },
                }
                for group, qids in self.groups.items()
            },
            "per_query": self.values,
            "warnings": self.warnings,
        }


def _finite(x: float) -> float | None:
    """``x``, or None where JSON has no number for it."""
    return None if math.isnan(x) else x


def _test_dict(test: PairedTest | None) -> dict:
    """The JSON fields of a paired test vs the baseline (none for the baseline itself)."""
    if test is None:
        return {}
    return {
        "difference": _finite(test.mean_difference),
        "p_randomization": _finite(test.p_randomization),
        "p_ttest": _finite(test.p_ttest),
    }


def query_groups(qids: Sequence[str], queries: Sequence[Query] | None) -> dict[str, list[str]]:
    """Groups of evaluated queries by ``kind``, in order of first appearance, plus ``all``."""
    groups: dict[str, list[str]] = {}
    if queries is not None:
        kinds = {q.qid: q.kind for q in queries}
        for qid in qids:
            if qid in kinds:
                groups.setdefault(kinds[qid], []).append(qid)
    groups[ALL] = list(qids)
    return groups


def check_run_queries(run: Run, qrels: Qrels, allow_unknown: bool) -> list[str]:
    """Warnings for run queries the qrels do not know; an InputError unless ``allow_unknown``.

    A run that shares no query with the qrels is always an error: the files do not belong together.
    """
    unknown = [q for q in run.scores if q not in qrels.grades]
    if not unknown:
        return []
    first = unknown[0]
    if not allow_unknown or len(unknown) == len(run.scores):
        raise InputError(
            f"query {first!r} is not in the qrels{' ' + qrels.source if qrels.source else ''} "
            f"({len(unknown)} of {len(run.scores)} run queries are unknown; "
            "`allow_unknown` ignores them)",
            file=run.source or None,
            line=run.lines.get(first),
            field="qid",
        )
    return [f"{run.name}: ignored {len(unknown)} queries not in the qrels (first: {first!r})"]


def compare_runs(
    qrels: Qrels,
    runs: Sequence[Run],
    measures: Sequence[Measure],
    queries: Sequence[Query] | None = None,
    *,
    allow_unknown: bool = False,
    resamples: int = 10_000,
    seed: int = 0,
) -> Comparison:
    """Evaluate ``runs`` on ``qrels`` and test each against the first, per query group."""
    if not runs:
        raise InputError("no runs to evaluate")
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise InputError(f"run names must differ, got {names}; rename a run file")
    warnings = [w for run in runs for w in check_run_queries(run, qrels, allow_unknown)]
    qids = judged_queries(qrels)
    if not qids:
        raise InputError("no query in the qrels has a relevant document", file=qrels.source or None)
    dropped = len(qrels.grades) - len(qids)
    if dropped:
        warnings.append(f"{dropped} qrels queries have no relevant document and are not evaluated")
    if queries is not None:
        known = {q.qid for q in queries}
        if missing := [q for q in qids if q not in known]:
            warnings.append(
                f"{len(missing)} judged queries are not in the queries file and count only in "
                f"'{ALL}' (first: {missing[0]!r})"
            )
    groups = query_groups(qids, queries)
    values = {run.name: per_query(qrels, run, measures) for run in runs}
    measure_names = list(values[names[0]])
    tests = {
        (group, name, m): paired_test(
            [values[name][m][q] for q in members],
            [values[names[0]][m][q] for q in members],
            resamples=resamples,
            seed=seed,
        )
        for group, members in groups.items()
        for name in names[1:]
        for m in measure_names
    }
    return Comparison(measure_names, names, groups, values, tests, warnings)
