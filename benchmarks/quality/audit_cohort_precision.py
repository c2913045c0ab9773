"""Cohort precision audit on IU X-ray: judged samples of report-level cohorts.

For each cohort of ``COHORTS`` (``clinsearch cohort IDX QUERY --level report``), a seeded sample
of ``--sample`` members (fewer when the cohort is smaller) is drawn from its current members
by chart review's seeded draw (``clinsearch.evaluate.chart_review.draw_sample``: those of
lowest seeded hash), so that a change in membership draws the members that entered the sample
to judge. Judgments are read from ``data/cohort_judgments.yaml`` by report id (uid), cohort,
verdict (chart review's: ``meets``: the report states the cohort's finding now, or for a
negated cohort states it absent, as a coder reads the findings and impression;
``does_not_meet`` otherwise; ``cannot_tell``), judge, date and, for a rejected one, a short
reason class (``hedge``, ``alternative``, ``dropped-negation``, ``mask``, ...); no report text
is ever stored there. The figures are chart review's (``review_figures``: precision with its
Wilson 95% interval), the same the workbench's review and ``clinsearch review show`` give.
Prints each cohort's size, how many of its sample are judged, the precision of the judged
ones with its interval and the rejected ones counted by reason; ``--show``
prints the unjudged members' text (findings and impression) for a judge to read, on the
terminal only. ``--census COHORT`` prints instead that cohort's precision over all its members
with its Wilson 95% interval, once every member is judged. ``--baseline OLD_IDX`` (an index the
code before a change built) compares each cohort with its members there: how many entered and
left, and every sampled member that entered and no judge has judged yet is flagged ``NEW``
(its precision is not known until a judge reads it: nothing is assumed of it).

The index must be built by the code under test (findings are extracted at build time):
``clinsearch index ../shared/data/iu_xray/indiana_reports.csv --format iu-xray --skip-bad
--out IDX``; ``--index`` builds it when the folder does not exist.

Run: python benchmarks/quality/audit_cohort_precision.py --index IDX [--show] [--seed N]
     [--census COHORT] [--baseline OLD_IDX]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from clinsearch import Index
from clinsearch.corpus.readers import ReadStats, read_reports
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.chart_review import (
    VERDICTS,
    Figures,
    Item,
    Judgment,
    draw_sample,
    review_figures,
)
from clinsearch.search.cohort import Cohort

COHORTS = ("pneumonia", "pleural effusion", "pneumothorax", "cardiomegaly", "no pneumothorax",
           "no cardiomegaly")
JUDGMENTS = Path(__file__).with_name("data") / "cohort_judgments.yaml"
SAMPLE = 30
SEED = 26


@dataclass(frozen=True)
class Entry:
    """One judged cohort member: chart review's judgment (report id, judge, verdict and the
    reason class as its note), its cohort and the day it was judged; never report text."""

    cohort: str
    judgment: Judgment
    date: str


def read_judgments(path: Path) -> dict[tuple[str, str], Entry]:
    """Judgments by (cohort, uid); a malformed entry is a ValueError naming its number."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    out: dict[tuple[str, str], Entry] = {}
    for number, entry in enumerate((data or {}).get("judgments") or [], start=1):
        fields = {k: str(v) for k, v in entry.items()}
        if set(fields) - {"uid", "cohort", "verdict", "judge", "date", "reason"} or not {
                "uid", "cohort", "verdict", "judge", "date"} <= set(fields):
            raise ValueError(f"{path}: judgment {number}: fields are uid, cohort, verdict,"
                             " judge, date and (optionally) reason")
        if fields["verdict"] not in VERDICTS or fields["cohort"] not in COHORTS:
            raise ValueError(f"{path}: judgment {number}: verdict must be one of {VERDICTS}"
                             f" and cohort one of {COHORTS}")
        judgment = Judgment(fields["uid"], fields["judge"], fields["verdict"],
                            fields.get("reason", ""))
        out[(fields["cohort"], judgment.report_id)] = Entry(fields["cohort"], judgment,
                                                             fields["date"])
    return out


def judged(judgments: dict[tuple[str, str], Entry], cohort: str, uids: Sequence[str],
           members: int) -> tuple[Figures, list[Judgment]]:
    """Chart review's figures of the judged ones of ``uids`` (a cohort's sample or census)."""
    found = [judgments[(cohort, uid)].judgment for uid in uids if (cohort, uid) in judgments]
    items = [Item(j.report_id) for j in found]
    return review_figures(items, found, {}, members, 0), found


def interval(figures: Figures) -> str:
    """The precision and its Wilson 95% interval as the table prints them."""
    if figures.precision is None:
        return "- | -"
    return (f"{figures.precision:.3f} | {figures.precision_low:.3f}-"
            f"{figures.precision_high:.3f}")


def rejected_reasons(found: list[Judgment]) -> Counter[str]:
    """The judgments that do not meet, counted by reason class."""
    return Counter(j.note or "unclassed" for j in found if j.verdict == "does_not_meet")


def census(index: Index, judgments: dict[tuple[str, str], Entry], query: str) -> int:
    """Print a cohort's precision over all its members (a census, not a sample) with its
    Wilson 95% interval and the rejected ones by reason; 1 when some member is unjudged."""
    members = [m.report_id for m in Cohort(index).members(query, "report")]
    unjudged = [uid for uid in members if (query, uid) not in judgments]
    if unjudged:
        print(f"census of {query}: {len(unjudged)} of {len(members)} members unjudged")
        return 1
    figures, found = judged(judgments, query, members, len(members))
    rated = figures.meets + figures.does_not_meet
    print(f"census of {query}: {figures.meets}/{rated} meet, precision"
          f" {figures.precision:.3f} (Wilson 95% {figures.precision_low:.3f}-"
          f"{figures.precision_high:.3f}); cannot tell {figures.cannot_tell}")
    print("rejected by cause: " + (", ".join(
        f"{cause} {n}" for cause, n in rejected_reasons(found).most_common()) or "none"))
    return 0


def open_index(path: Path) -> Index | None:
    """The index at ``path``, built from the IU X-ray CSV when the folder does not exist."""
    if path.exists():
        return Index.open(path)
    csv = shared_data(IU_XRAY)
    if csv is None:
        print("skipped: IU X-ray reports not found (../shared/data/iu_xray/indiana_reports.csv)")
        return None
    reports = read_reports(csv, "iu-xray", skip_bad=True, stats=ReadStats())
    return Index.build(reports, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="IU X-ray index folder")
    parser.add_argument("--sample", type=int, default=SAMPLE)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--show", action="store_true", help="print unjudged members' text")
    parser.add_argument("--census", choices=COHORTS, metavar="COHORT",
                        help="precision over all of a fully judged cohort's members")
    parser.add_argument("--baseline", type=Path, metavar="OLD_IDX",
                        help="an index built before a change: flag the members that entered")
    args = parser.parse_args()
    index = open_index(args.index)
    if index is None:
        return 0
    baseline = Index.open(args.baseline) if args.baseline else None
    judgments = read_judgments(JUDGMENTS)
    if args.census:
        return census(index, judgments, args.census)
    cohort = Cohort(index)
    before = Cohort(baseline) if baseline is not None else None
    print("| cohort | members | entered / left | sampled | judged | meets | precision |"
          " Wilson 95% |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    unjudged: list[tuple[str, str]] = []
    new: set[tuple[str, str]] = set()
    rejected: Counter[str] = Counter()
    for query in COHORTS:
        members = [m.report_id for m in cohort.members(query, "report")]
        drawn = draw_sample(members, args.sample, args.seed, query)
        figures, found = judged(judgments, query, drawn, len(members))
        unjudged += [(query, uid) for uid in drawn if (query, uid) not in judgments]
        rejected.update(rejected_reasons(found))
        moved = "-"
        if before is not None:
            old = {m.report_id for m in before.members(query, "report")}
            entered = set(members) - old
            new.update((query, uid) for uid in drawn if uid in entered)
            moved = f"{len(entered)} / {len(old - set(members))}"
        print(f"| {query} | {len(members)} | {moved} | {len(drawn)} | {len(found)} |"
              f" {figures.meets} | {interval(figures)} |")
    print("\nrejected sampled members by cause: "
          + (", ".join(f"{cause} {n}" for cause, n in rejected.most_common()) or "none"))
    print(f"\nunjudged sampled members: {len(unjudged)}"
          + (f" ({len(new & set(unjudged))} NEW: entered since the baseline)"
             if before is not None else ""))
    for query, uid in unjudged:
        print(f"- {query}: {uid}" + (" NEW" if (query, uid) in new else ""))
        if args.show:
            print("    " + " ".join(index.report(uid).report.text.split()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
