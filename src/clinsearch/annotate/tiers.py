"""Search tiers: the order in which ranked search returns mentions of a finding, as data.

A mention the query does not contradict falls in one tier: stated now (with every asked
modifier, or some), hedged, the reason for the exam, historical, hypothetical, family. The order
and labels live in data/search_tiers.yaml beside the ConText rules, validated on load with
file:line errors; an index may record another order (``--tier-order``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from clinsearch.annotate.finding import CONTEXTS
from clinsearch.annotate.yaml_nodes import data_text, read_document
from clinsearch.errors import InputError

TIERS_FILE = "search_tiers.yaml"
STATED, PARTIAL, HEDGED = "stated", "partial", "hedged"
# Every tier a mention can fall in: the two asserted ones, the hedge, one per context flag.
TIER_NAMES: tuple[str, ...] = (STATED, PARTIAL, HEDGED, *CONTEXTS)
TIER_KEYS = ("name", "label")


@dataclass(frozen=True, slots=True)
class Tier:
    """One tier: its fixed name and the words that explain it to a user."""

    name: str
    label: str


@dataclass(frozen=True, slots=True)
class TierOrder:
    """Every tier, strongest first."""

    tiers: tuple[Tier, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tiers)

    def label(self, name: str) -> str:
        """The label of tier ``name``."""
        return next(t.label for t in self.tiers if t.name == name)

    def reordered(self, names: Sequence[str]) -> TierOrder:
        """This order with the tiers in the order ``names`` gives (every tier, once); a bad
        list is an InputError naming the field ``tier order``."""
        problem = _order_problem(list(names))
        if problem:
            raise InputError(problem, field="tier order")
        by_name = {t.name: t for t in self.tiers}
        return TierOrder(tuple(by_name[n] for n in names))


def read_tiers(path: str | Path | None = None) -> TierOrder:
    """The tier file at ``path`` (default: the shipped one), validated: each known tier once,
    with a label."""
    text, file = data_text(path, "clinsearch.annotate", TIERS_FILE, "tier file")
    reader, root, top = read_document(text, file, "tier", ("tiers",))
    if "tiers" not in top:
        raise reader.fail(root, "tiers", "missing")
    tiers = []
    for node in reader.sequence(top["tiers"], "tiers"):
        fields = reader.mapping(node, "tiers")
        for key, key_node in reader.key_nodes(node).items():  # type: ignore[arg-type]
            if key not in TIER_KEYS:
                raise reader.fail(key_node, key, f"unknown key (allowed: {', '.join(TIER_KEYS)})")
        for required in TIER_KEYS:
            if required not in fields:
                raise reader.fail(node, required, "missing")
        name = reader.scalar(fields["name"], "name")
        if name not in TIER_NAMES:
            raise reader.fail(fields["name"], "name",
                              f"unknown tier '{name}' (allowed: {', '.join(TIER_NAMES)})")
        if name in (t.name for t in tiers):
            raise reader.fail(fields["name"], "name", f"tier '{name}' listed twice")
        tiers.append(Tier(name, reader.scalar(fields["label"], "label")))
    missing = [n for n in TIER_NAMES if n not in (t.name for t in tiers)]
    if missing:
        raise reader.fail(top["tiers"], "tiers", f"missing tier(s): {', '.join(missing)}")
    return TierOrder(tuple(tiers))


@lru_cache(maxsize=1)
def shipped_tiers() -> TierOrder:
    """The shipped tier order (read once)."""
    return read_tiers()


def tier_order(names: Sequence[str] | None = None) -> TierOrder:
    """The shipped tier order, or its tiers in the order ``names`` gives (an index's)."""
    return shipped_tiers().reordered(names) if names else shipped_tiers()


def _order_problem(names: list[str]) -> str:
    """What is wrong with a tier order given as names ("" when nothing)."""
    unknown = [n for n in names if n not in TIER_NAMES]
    if unknown:
        return f"unknown tier '{unknown[0]}' (allowed: {', '.join(TIER_NAMES)})"
    twice = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if twice:
        return f"tier '{twice[0]}' listed twice"
    missing = [n for n in TIER_NAMES if n not in names]
    if missing:
        return f"missing tier(s): {', '.join(missing)} (list every tier once)"
    return ""
