"""What the search tiers say to a user: each hit's trigger (the cue words that put it in its
tier), how many units each tier holds (instead of a bare "no matches"), and for a cohort, which
tiers it counts and how many more units each wider tier would add.

Concept search gives every hit its tier (``search.concept.ranking``); this module reads the
triggers of the hits shown from the findings table and counts a query's units per tier.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from clinsearch.annotate.tiers import HEDGED, PARTIAL, STATED
from clinsearch.hit import Hit
from clinsearch.index.findings import FindingsTable
from clinsearch.search.concept.ranking import PolarityOptions, parse_context
from clinsearch.units import Level

if TYPE_CHECKING:
    from clinsearch.index.index_store import IndexStore
    from clinsearch.search.cohort import Cohort, Scope
    from clinsearch.search.method_spec import MethodSpec
    from clinsearch.search.session import SearchSession

ASSERTED = (STATED, PARTIAL)  # tiers of mentions stated now: no cue put them there
# Options of a method spec that concept search reads when counting its tiers.
CONCEPT_OPTIONS = ("term_model", "context", "include_uncertain", "polarity")


@dataclass(frozen=True, slots=True)
class TierCount:
    """How many units at a level a query finds in one tier."""

    tier: str
    label: str
    count: int
    units: bytes = b""  # the units counted (group numbers), to key a viewer's count offset

    def line(self, level: Level) -> str:
        """E.g. ``stated only as the reason for the exam: 75 reports``."""
        return f"{self.label}: {self.count} {level}{'' if self.count == 1 else 's'}"

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "label": self.label, "count": self.count}


def tier_counts(session: SearchSession, query: str, level: Level,
                spec: MethodSpec) -> list[TierCount]:
    """The units per tier the concept ranking of ``query`` holds (concept search, or hybrid's
    concept part, with the spec's concept options), strongest tier first; [] when the method
    has no concept ranking or the query is searched as text."""
    if spec.method not in ("concept", "hybrid") or (
            "concepts" not in session.index.config.components):
        return []
    if spec.method == "hybrid" and "concept" not in str(spec.options.get("methods") or "concept"):
        return []
    options = {k: v for k, v in spec.options.items() if k in CONCEPT_OPTIONS}
    concept = session.retriever("concept", options)
    label = concept.ranker.tiers.label  # type: ignore[attr-defined]
    return [TierCount(name, label(name), len(units), units.astype("<i8").tobytes())
            for name, units in concept.tier_units(query, level)]  # type: ignore[attr-defined]


def report_tiers(session: SearchSession, query: str) -> dict[str, str]:
    """Each report ranked search finds for ``query`` with its tier (that of its best
    sentence, as concept search ranks it with the defaults); {} for a query searched as text
    or an index without concepts."""
    if "concepts" not in session.index.config.components:
        return {}
    concept = session.retriever("concept", {})
    lookup = concept.lookup  # type: ignore[attr-defined]
    return {str(uid): name for name, rows in concept.tier_units(query, "report")  # type: ignore[attr-defined]
            for uid in lookup.report_ids.take(rows)}


def with_triggers(index: IndexStore, hits: list[Hit]) -> list[Hit]:
    """``hits`` with each matched finding's trigger (``explanation["trigger"]``: the cue's words,
    rule and category; None for a mention stated now), read from the index's findings table
    for the sentences of the hits in weaker tiers only (a query whose hits are all stated now
    reads nothing), in the row groups of their reports alone."""
    needed = [h for h in hits if _needs_trigger(h) and h.explanation["tier"] not in ASSERTED]
    wanted = sorted({h.sentence_id for h in needed})
    triggers: dict[tuple[str, int], Any] = {}
    findings = FindingsTable.optional(index.generation)
    if findings is not None and wanted:
        lookup = index.lookup
        rows = lookup.report_ids.rows_of(sorted({h.report_id for h in needed}))
        table = findings.table(["sentence_id", "start", "trigger"],
                               report_keys=lookup.report_keys[rows[rows >= 0]].tolist(),
                               filters=[("sentence_id", "in", wanted)])
        triggers = {(s, start): t for s, start, t in zip(
            table.column("sentence_id").to_pylist(), table.column("start").to_pylist(),
            table.column("trigger").to_pylist(), strict=True)}
    out = []
    for hit in hits:
        if not _needs_trigger(hit):
            out.append(hit)
            continue
        found = [triggers.get((hit.sentence_id, m.get("finding_start")))
                 for m in hit.explanation.get("matched", ())]
        trigger = next((t for t in found if t), None)
        shown = None if trigger is None else {k: trigger[k] for k in ("text", "rule", "category")}
        out.append(replace(hit, explanation=hit.explanation | {"trigger": shown}))
    return out


def _needs_trigger(hit: Hit) -> bool:
    """Whether a hit has a tier but no trigger yet (phrase search gives its own)."""
    return "tier" in hit.explanation and "trigger" not in hit.explanation


def trigger_words(hit: Hit) -> str:
    """The hit's tier and trigger in a few words, e.g. ``reason for the exam ("INDICATION:")``."""
    label = str(hit.explanation.get("tier_label", ""))
    trigger = hit.explanation.get("trigger") or {}
    words = trigger.get("text") or (trigger.get("rule") if trigger else "")
    return f'{label} ("{words}")' if words else label


@dataclass(frozen=True, slots=True)
class WiderTier:
    """How many more units a cohort would count if one more tier counted, and the option that
    counts it (``--context indication``, ``--include-uncertain``)."""

    tier: str
    label: str
    option: str
    adds: dict[str, int]
    added: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    # the units added at each level (masks), to key a viewer's count offset by the set counted

    def line(self, level: str) -> str:
        """E.g. ``+75 reports if stated only as the reason for the exam counts``."""
        n = self.adds[level]
        return f"+{n:,} {level}{'' if n == 1 else 's'} if {self.label} counts ({self.option})"

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "label": self.label, "option": self.option,
                "adds": self.adds}


def counted_tiers(options: PolarityOptions) -> list[str]:
    """The tiers a cohort with ``options`` counts: stated now, and those the options admit."""
    hedged = options.include_uncertain or options.polarity == "any"
    return [STATED, PARTIAL, *([HEDGED] if hedged else []), *options.context]


def cohort_options(context: str | None, include_uncertain: bool = False) -> PolarityOptions:
    """A cohort's reading: asserted now, plus the tiers ``context`` ("indication,historical")
    and ``include_uncertain`` (hedged) ask for, as ``clinsearch cohort`` reads its options."""
    return PolarityOptions(include_uncertain, "query", parse_context(context))


def saved_options(page: Mapping[str, str]) -> PolarityOptions:
    """The options a saved cohort's page state names (``context``, ``include_uncertain``:
    "true"), so the page, the API and ``clinsearch review`` count the same cohort."""
    return cohort_options(page.get("context") or None, page.get("include_uncertain") == "true")


def with_tier(options: PolarityOptions, tier: str) -> tuple[PolarityOptions, str]:
    """``options`` widened to count ``tier`` too, and the CLI option that says so."""
    if tier == HEDGED:
        return replace(options, include_uncertain=True), "--include-uncertain"
    flags = parse_context([*options.context, tier])
    return replace(options, context=flags), f"--context {','.join(flags)}"


def wider_tiers(cohort: Cohort, query: str, scope: Scope | None = None,
                sets: Mapping[str, np.ndarray] | None = None) -> list[WiderTier]:
    """For each tier ``cohort`` does not count (the index's tier order), how many more units
    ``query`` would count with it: the units of the wider cohort not in ``sets`` (the cohort's
    own, computed when not given); tiers adding none left out. The CLI's cohort command and
    the API's cohort answer both read it."""
    from clinsearch.search.cohort import EVERYWHERE

    scope = scope or EVERYWHERE
    own = cohort.sets(query, scope) if sets is None else sets
    counted = counted_tiers(cohort.options)
    out = []
    for name in cohort.tier_order.names:
        if name in counted or name == PARTIAL:
            continue
        wider, option = with_tier(cohort.options, name)
        more = cohort.with_options(wider).sets(query, scope)
        added = {unit: mask & ~own[unit] for unit, mask in more.items()}
        adds = {unit: int(mask.sum()) for unit, mask in added.items()}
        if any(adds.values()):
            out.append(WiderTier(name, cohort.tier_order.label(name), option, adds, added))
    return out
