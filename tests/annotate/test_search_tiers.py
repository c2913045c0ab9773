"""The search tier file: shipped order, validation with file:line errors, per-index orders."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.annotate.tiers import TIER_NAMES, read_tiers, shipped_tiers, tier_order
from clinsearch.errors import InputError


def test_shipped_order_lists_every_tier_strongest_first() -> None:
    order = shipped_tiers()
    assert order.names == ("stated", "partial", "hedged", "indication", "historical",
                           "hypothetical", "family")
    assert set(order.names) == set(TIER_NAMES)
    assert order.label("indication") == "stated only as the reason for the exam"


def test_an_index_order_reorders_the_shipped_tiers() -> None:
    names = ["stated", "partial", "indication", "hedged", "historical", "hypothetical", "family"]
    order = tier_order(names)
    assert order.names == tuple(names)
    assert order.label("hedged") == shipped_tiers().label("hedged")
    with pytest.raises(InputError, match="field 'tier order': missing tier"):
        tier_order(names[:-1])
    with pytest.raises(InputError, match="unknown tier 'rumoured'"):
        tier_order([*names[:-1], "rumoured"])


def _tier_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "tiers.yaml"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.mark.parametrize(("body", "line", "message"), [
    ("tiers:\n  - name: stated\n    label: x\n  - name: stated\n    label: y\n", 4,
     "field 'name': tier 'stated' listed twice"),
    ("tiers:\n  - name: maybe\n    label: x\n", 2, "field 'name': unknown tier 'maybe'"),
    ("tiers:\n  - name: stated\n", 2, "field 'label': missing"),
    ("tiers:\n  - name: stated\n    label: x\n    colour: red\n", 4,
     "field 'colour': unknown key"),
    ("tiers:\n  - name: stated\n    label: x\n", 2, "missing tier(s): partial, hedged"),
    ("order: []\n", 1, "field 'order': unknown key"),
])
def test_a_bad_tier_file_names_file_line_and_field(tmp_path: Path, body: str, line: int,
                                                   message: str) -> None:
    path = _tier_file(tmp_path, body)
    with pytest.raises(InputError) as caught:
        read_tiers(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert message in str(caught.value)
