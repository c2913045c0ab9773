"""ConText rules: medspaCy's defaults plus the radiology rules in data/context_radiology.yaml.

Also maps ConText categories onto a finding's polarity and context flags.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import yaml
from medspacy.context import ConTextRule

NEGATED = "NEGATED_EXISTENCE"
POSSIBLE = "POSSIBLE_EXISTENCE"
INDICATION = "INDICATION"
CONTEXT_FLAGS = {
    "HISTORICAL": "historical",
    "HYPOTHETICAL": "hypothetical",
    INDICATION: "hypothetical",
    "FAMILY": "family",
}


def default_rules_path() -> Path:
    """medspaCy's packaged English ConText rules."""
    import medspacy

    return Path(medspacy.__file__).resolve().parents[1] / "resources" / "en" / "context_rules.json"


def _radiology_spec() -> dict:
    """The radiology rule file as data."""
    ref = resources.files("clinsearch.annotate") / "data" / "context_radiology.yaml"
    return yaml.safe_load(ref.read_text(encoding="utf-8"))


def context_rules(radiology: bool = True) -> list[ConTextRule]:
    """medspaCy's default rules plus the radiology rules (minus the defaults those replace)."""
    defaults = json.loads(default_rules_path().read_text(encoding="utf-8"))["context_rules"]
    if not radiology:
        return [ConTextRule.from_dict(d) for d in defaults]
    spec = _radiology_spec()
    replaced = {lit.lower() for lit in spec["replace_defaults"]}
    kept = [d for d in defaults if d["literal"].lower() not in replaced]
    return [ConTextRule.from_dict(d) for d in kept] + [ConTextRule(**r) for r in spec["rules"]]


def polarity_of(categories: Iterable[str]) -> str:
    """Polarity from the ConText categories modifying a finding: negation wins over uncertainty."""
    cats = set(categories)
    if NEGATED in cats:
        return "absent"
    if POSSIBLE in cats or INDICATION in cats:
        return "uncertain"
    return "present"


def context_of(categories: Iterable[str]) -> tuple[str, ...]:
    """Context flags (sorted, unique) from the ConText categories modifying a finding."""
    return tuple(sorted({CONTEXT_FLAGS[c] for c in categories if c in CONTEXT_FLAGS}))
