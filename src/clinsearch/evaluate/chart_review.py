"""Chart review of a cohort: a seeded sample of its members (and of the non-members that
mention its finding), reviewers' judgments by report id, and what they measure: precision with
a Wilson 95% interval, Cohen's kappa between two reviewers and an estimate of recall.

The figures are pure functions of the judgments; ``draw`` is the one place a sample is taken
from a cohort, so that the workbench, the CLI and the project's own audit judge the same way.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from clinsearch.index import IndexStore
    from clinsearch.search.cohort import Cohort, Scope

VERDICTS = ("meets", "does_not_meet", "cannot_tell")
VERDICT_NAMES = {"meets": "meets", "does_not_meet": "does not meet",
                 "cannot_tell": "cannot tell"}
STRATA = ("none", "section", "year", "tier")
Strata = Literal["none", "section", "year", "tier"]
UNRANKED = "unranked"  # the stratum of a report ranked search does not find for the query
ItemKind = Literal["member", "nonmember"]
MAX_NOTE = 500  # characters of a reviewer's note


@dataclass(frozen=True)
class Judgment:
    """One reviewer's reading of one sampled report: by report id only, never its text."""

    report_id: str
    reviewer: str
    verdict: str  # one of VERDICTS
    note: str = ""  # a short reason (for a rejected member: which reading failed)


@dataclass(frozen=True)
class Item:
    """A sampled report: a cohort member (with its evidence sentence id and stratum) or a
    non-member that mentions the finding (for the recall estimate)."""

    report_id: str
    kind: ItemKind = "member"
    stratum: str = ""
    sentence_id: str = ""  # the member's evidence sentence


@dataclass(frozen=True)
class Drawn:
    """A sample drawn from a cohort: its items, how many reports the cohort had and how many
    non-members mention the finding (the pool the non-member sample comes from)."""

    items: tuple[Item, ...]
    members: int
    nonmember_pool: int
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Figures:
    """What a review measures. ``precision`` counts the members whose final verdict is meets
    among those judged meets or does not meet (cannot tell, disputed and pending apart);
    ``kappa`` is Cohen's between the two reviewers over the items both judged; ``recall`` is
    estimated from the precision and the share of judged non-members that meet, with bounds
    from the two Wilson intervals."""

    sampled: int
    meets: int
    does_not_meet: int
    cannot_tell: int
    disputed: int
    pending: int
    precision: float | None
    precision_low: float | None
    precision_high: float | None
    kappa: float | None
    kappa_items: int
    members: int
    nonmember_pool: int
    nonmembers_sampled: int
    nonmembers_meet: int
    nonmembers_judged: int
    recall: float | None
    recall_low: float | None
    recall_high: float | None

    def lines(self) -> list[str]:
        """The figures as a person reads them (the CLI, an export's header)."""
        out = [f"precision: {_share(self.precision)} ({self.meets} of"
               f" {self.meets + self.does_not_meet} judged members meet; Wilson 95%"
               f" {_share(self.precision_low)}-{_share(self.precision_high)})",
               f"sampled members: {self.sampled} of {self.members}; cannot tell"
               f" {self.cannot_tell}, disputed {self.disputed}, pending {self.pending}",
               f"kappa: {_share(self.kappa)} (Cohen's, two reviewers, {self.kappa_items}"
               " items)"]
        if self.nonmembers_sampled:
            out.append(f"recall estimate: {_share(self.recall)} (bounds"
                       f" {_share(self.recall_low)}-{_share(self.recall_high)}; "
                       f"{self.nonmembers_meet} of {self.nonmembers_judged} judged non-members"
                       f" meet, of {self.nonmember_pool} mentioning the finding)")
        return out


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def seeded_rank(seed: int, key: str, report_id: str) -> str:
    """A report's place in a seeded draw: a hash of the seed, the draw's key and the id, so
    that a change in membership changes the sample only where members come or go."""
    return hashlib.sha256(f"{seed}:{key}:{report_id}".encode()).hexdigest()


def draw_sample(ids: Sequence[str], size: int | None, seed: int, key: str = "",
                strata: Mapping[str, str] | None = None) -> list[str]:
    """``size`` of ``ids`` (all of them when None or larger), those of lowest seeded rank; with
    ``strata`` (id -> stratum) each stratum gets its share by largest remainder."""
    ids = list(dict.fromkeys(ids))
    if size is None or size >= len(ids):
        return sorted(ids)
    ranked = sorted(ids, key=lambda uid: seeded_rank(seed, key, uid))
    if not strata:
        return sorted(ranked[:size])
    groups: dict[str, list[str]] = defaultdict(list)
    for uid in ranked:
        groups[strata.get(uid, "")].append(uid)
    shares = {name: size * len(group) / len(ids) for name, group in groups.items()}
    quota = {name: math.floor(share) for name, share in shares.items()}
    rest = sorted(groups, key=lambda name: (quota[name] - shares[name], name))
    for name in rest[: size - sum(quota.values())]:
        quota[name] += 1
    return sorted(uid for name, group in groups.items() for uid in group[: quota[name]])


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95% by default) of a proportion ``successes / n``."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters' labels, one pair per item; None without items or when
    chance agreement is certain (both gave one and the same label throughout)."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[label] * second[label] for label in first) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def final_verdicts(items: Iterable[Item], judgments: Iterable[Judgment],
                   adjudicated: Mapping[str, str], reviewers_required: int = 1
                   ) -> dict[str, str]:
    """Each item's verdict: the adjudicated one, else the one its reviewers agree on once
    ``reviewers_required`` judged it; ``disputed`` when they differ, ``pending`` before."""
    by_report: dict[str, dict[str, str]] = defaultdict(dict)
    for j in judgments:
        by_report[j.report_id][j.reviewer] = j.verdict
    out: dict[str, str] = {}
    for item in items:
        given = by_report.get(item.report_id, {})
        if item.report_id in adjudicated:
            out[item.report_id] = adjudicated[item.report_id]
        elif len(given) < reviewers_required or not given:
            out[item.report_id] = "pending"
        elif len(set(given.values())) > 1:
            out[item.report_id] = "disputed"
        else:
            out[item.report_id] = next(iter(given.values()))
    return out


def disagreements(items: Iterable[Item], judgments: Iterable[Judgment],
                  adjudicated: Mapping[str, str]) -> list[tuple[Item, dict[str, str]]]:
    """The items reviewers judged differently and nobody adjudicated, with each verdict."""
    by_report: dict[str, dict[str, str]] = defaultdict(dict)
    for j in judgments:
        by_report[j.report_id][j.reviewer] = j.verdict
    return [(item, dict(sorted(by_report[item.report_id].items()))) for item in items
            if item.report_id not in adjudicated
            and len(set(by_report.get(item.report_id, {}).values())) > 1]


def review_figures(items: Sequence[Item], judgments: Sequence[Judgment],
                   adjudicated: Mapping[str, str], members: int, nonmember_pool: int,
                   reviewers_required: int = 1) -> Figures:
    """Precision (Wilson 95%), kappa and the recall estimate of a review's judgments."""
    final = final_verdicts(items, judgments, adjudicated, reviewers_required)
    member_ids = [i.report_id for i in items if i.kind == "member"]
    other_ids = [i.report_id for i in items if i.kind == "nonmember"]
    verdicts = Counter(final[uid] for uid in member_ids)
    meets, fails = verdicts["meets"], verdicts["does_not_meet"]
    precision = meets / (meets + fails) if meets + fails else None
    low, high = wilson(meets, meets + fails) if meets + fails else (None, None)
    missed = Counter(final[uid] for uid in other_ids)
    judged_others = missed["meets"] + missed["does_not_meet"]
    recall = recall_low = recall_high = None
    if precision is not None and judged_others and low is not None and high is not None:
        miss_low, miss_high = wilson(missed["meets"], judged_others)
        recall = _recall(precision, missed["meets"] / judged_others, members, nonmember_pool)
        recall_low = _recall(low, miss_high, members, nonmember_pool)
        recall_high = _recall(high, miss_low, members, nonmember_pool)
    pairs = kappa_pairs(judgments)
    return Figures(
        sampled=len(member_ids), meets=meets, does_not_meet=fails,
        cannot_tell=verdicts["cannot_tell"], disputed=verdicts["disputed"],
        pending=verdicts["pending"], precision=precision, precision_low=low,
        precision_high=high, kappa=cohen_kappa(pairs), kappa_items=len(pairs), members=members,
        nonmember_pool=nonmember_pool, nonmembers_sampled=len(other_ids),
        nonmembers_meet=missed["meets"], nonmembers_judged=judged_others, recall=recall,
        recall_low=recall_low, recall_high=recall_high)


def kappa_pairs(judgments: Iterable[Judgment]) -> list[tuple[str, str]]:
    """The pairs of verdicts of the first two reviewers (by name) on the items both judged;
    none when more or fewer than two reviewers judged."""
    by_reviewer: dict[str, dict[str, str]] = defaultdict(dict)
    for j in judgments:
        by_reviewer[j.reviewer][j.report_id] = j.verdict
    if len(by_reviewer) != 2:
        return []
    first, second = (by_reviewer[name] for name in sorted(by_reviewer))
    return [(first[uid], second[uid]) for uid in sorted(first) if uid in second]


def _recall(precision: float, missed_share: float, members: int, pool: int) -> float | None:
    """Recall from the true members the cohort holds and the missed ones the pool holds."""
    found, missed = precision * members, missed_share * pool
    return found / (found + missed) if found + missed else None


def draw(cohort: Cohort, query: str, scope: Scope, size: int | None, seed: int,
         strata: Strata = "none", nonmembers: int = 0, mentioning: Cohort | None = None,
         tiers: Mapping[str, str] | None = None) -> Drawn:
    """A review's sample of ``query``'s members at report level (``strata``: each section of
    the evidence sentence, each report year, or each search tier of ``tiers`` (report id ->
    tier, ``search.tiers.report_tiers``; ``unranked`` where none) gets its share) and, with
    ``nonmembers``, a sample of the reports that mention the query's findings without being
    members (``mentioning``: the same index read by ``mention_reader``), stratified by tier
    too when asked."""
    found = cohort.members(query, "report", scope)
    by_id = {m.report_id or m.ids[-1]: m for m in found}
    keys: dict[str, str] | None = None
    if strata == "section":
        keys = {uid: m.section for uid, m in by_id.items()}
    elif strata == "year":
        keys = {uid: date[:4] for uid, date in report_dates(cohort, list(by_id)).items()}
    elif strata == "tier":
        keys = {uid: (tiers or {}).get(uid, UNRANKED) for uid in by_id}
    chosen = draw_sample(list(by_id), size, seed, query, keys)
    items = [Item(uid, "member", (keys or {}).get(uid, ""), by_id[uid].sentence_id)
             for uid in chosen]
    pool: list[str] = []
    if nonmembers and mentioning is not None:
        mentioned = {m.report_id or m.ids[-1] for m in mentioning.members(query, "report", scope)}
        pool = sorted(mentioned - set(by_id))
        pool_keys = ({uid: (tiers or {}).get(uid, UNRANKED) for uid in pool}
                     if strata == "tier" else None)
        items += [Item(uid, "nonmember", (pool_keys or {}).get(uid, "")) for uid in
                  draw_sample(pool, nonmembers, seed, "nonmember:" + query, pool_keys)]
    counts = {str(level): int(n) for level, n in cohort.counts(query, scope).items()}
    return Drawn(tuple(items), len(by_id), len(pool), counts)


def mention_reader(index: IndexStore) -> Cohort:
    """The index's cohorts read with polarity ``any`` and every context admitted: a query's
    members are then the reports that mention its findings at all."""
    from clinsearch.annotate.finding import CONTEXTS
    from clinsearch.search.cohort import Cohort
    from clinsearch.search.concept.ranking import PolarityOptions

    return Cohort(index, PolarityOptions(polarity="any", context=CONTEXTS))


def report_dates(cohort: Cohort, report_ids: Sequence[str]) -> dict[str, str]:
    """The dates (ISO, "" when undated) of ``report_ids`` as the cohort arrays hold them."""
    mask, _ = cohort.id_mask("report", report_ids)
    rows = mask.nonzero()[0]
    arrays = cohort.engine.arrays
    ids = arrays.values.reports("id", rows)
    dates = arrays.report_labels(rows)["date"]
    return {str(uid): str(date or "") for uid, date in zip(ids, dates, strict=True)}
