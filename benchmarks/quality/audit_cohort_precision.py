"""Cohort precision audit on IU X-ray: judged samples of report-level cohorts.

For each cohort of ``COHORTS`` (``clinsearch cohort IDX QUERY --level report``), a seeded sample
of ``--sample`` members (fewer when the cohort is smaller) is drawn from its current members
(those of lowest seeded hash), so that a change in membership draws the members that entered
the sample to judge. Judgments are read from
``data/cohort_judgments.yaml`` by report id (uid), cohort, judgment (``correct``: the report
states the cohort's finding now, or for a negated cohort states it absent, as a coder reads
the findings and impression; ``incorrect`` otherwise), judge, date and, for an incorrect
one, a short reason class (``hedge``, ``alternative``, ``dropped-negation``, ``mask``, ...);
no report text is ever stored there. Prints each cohort's size, how many of its sample are
judged, the precision of the judged ones and the incorrect ones counted by reason; ``--show``
prints the unjudged members' text (findings and impression) for a judge to read, on the
terminal only. ``--census COHORT`` prints instead that cohort's precision over all its members
with a Wilson 95% interval, once every member is judged. ``--baseline OLD_IDX`` (an index the
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
import hashlib
import math
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from clinsearch import Index
from clinsearch.corpus.readers import ReadStats, read_reports
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.search.cohort import Cohort

COHORTS = ("pneumonia", "pleural effusion", "pneumothorax", "cardiomegaly", "no pneumothorax",
           "no cardiomegaly")
JUDGMENTS = Path(__file__).with_name("data") / "cohort_judgments.yaml"
VERDICTS = ("correct", "incorrect")
SAMPLE = 30
SEED = 26


@dataclass(frozen=True)
class Judgment:
    """One judged cohort member: by report id only, never its text."""

    uid: str
    cohort: str
    judgment: str
    judge: str
    date: str
    reason: str = ""  # why an incorrect member is not the finding: a class, never text


def read_judgments(path: Path) -> dict[tuple[str, str], Judgment]:
    """Judgments by (cohort, uid); a malformed entry is a ValueError naming its number."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else None
    out: dict[tuple[str, str], Judgment] = {}
    for number, entry in enumerate((data or {}).get("judgments") or [], start=1):
        try:
            judgment = Judgment(**{k: str(v) for k, v in entry.items()})
        except TypeError as exc:
            raise ValueError(f"{path}: judgment {number}: {exc}") from None
        if judgment.judgment not in VERDICTS or judgment.cohort not in COHORTS:
            raise ValueError(f"{path}: judgment {number}: judgment must be one of {VERDICTS}"
                             f" and cohort one of {COHORTS}")
        out[(judgment.cohort, judgment.uid)] = judgment
    return out


def sample(members: Sequence[str], cohort: str, size: int, seed: int) -> list[str]:
    """A seeded sample of a cohort's members: the ``size`` members of lowest seeded hash, so
    that a change in membership changes the sample only where members come or go (a member
    that stays in keeps its judgment; one that enters may need one)."""
    def rank(uid: str) -> str:
        return hashlib.sha256(f"{seed}:{cohort}:{uid}".encode()).hexdigest()

    return sorted(sorted(members, key=rank)[:size])


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of a proportion ``correct / n``."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def census(index: Index, judgments: dict[tuple[str, str], Judgment], query: str) -> int:
    """Print a cohort's precision over all its members (a census, not a sample) with its
    Wilson 95% interval and the incorrect ones by reason; 1 when some member is unjudged."""
    members = [m.report_id for m in Cohort(index).members(query, "report")]
    unjudged = [uid for uid in members if (query, uid) not in judgments]
    if unjudged:
        print(f"census of {query}: {len(unjudged)} of {len(members)} members unjudged")
        return 1
    judged = [judgments[(query, uid)] for uid in members]
    correct = sum(j.judgment == "correct" for j in judged)
    low, high = wilson(correct, len(judged))
    causes = Counter(j.reason or "unclassed" for j in judged if j.judgment == "incorrect")
    print(f"census of {query}: {correct}/{len(judged)} correct, precision"
          f" {correct / len(judged):.3f} (Wilson 95% {low:.3f}-{high:.3f})")
    print("incorrect by cause: "
          + (", ".join(f"{cause} {n}" for cause, n in causes.most_common()) or "none"))
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
    print("| cohort | members | entered / left | sampled | judged | correct | precision |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    unjudged: list[tuple[str, str]] = []
    new: set[tuple[str, str]] = set()
    rejected: Counter[str] = Counter()
    for query in COHORTS:
        members = [m.report_id for m in cohort.members(query, "report")]
        drawn = sample(members, query, args.sample, args.seed)
        judged = [judgments[(query, uid)] for uid in drawn if (query, uid) in judgments]
        correct = sum(j.judgment == "correct" for j in judged)
        unjudged += [(query, uid) for uid in drawn if (query, uid) not in judgments]
        rejected.update(j.reason or "unclassed" for j in judged if j.judgment == "incorrect")
        precision = f"{correct / len(judged):.3f}" if judged else "-"
        moved = "-"
        if before is not None:
            old = {m.report_id for m in before.members(query, "report")}
            entered = set(members) - old
            new.update((query, uid) for uid in drawn if uid in entered)
            moved = f"{len(entered)} / {len(old - set(members))}"
        print(f"| {query} | {len(members)} | {moved} | {len(drawn)} | {len(judged)} | {correct} |"
              f" {precision} |")
    print("\nincorrect sampled members by cause: "
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
