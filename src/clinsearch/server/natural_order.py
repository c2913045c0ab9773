"""Natural order for ids: runs of digits compare as numbers, so "245" comes before "2422"."""

from __future__ import annotations

import re

_DIGITS = re.compile(r"([0-9]+)")


def natural_key(text: str) -> tuple[tuple[int | str, ...], str]:
    """A sort key reading ``text``'s digit runs as numbers (ties, as "7" and "007", by text).
    ``re.split`` with a group puts digit runs at odd positions, so like compares with like."""
    parts = _DIGITS.split(text)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def natural_ids(ids: tuple[str, ...]) -> tuple[tuple[tuple[int | str, ...], str], ...]:
    """``natural_key`` of each id column, for sorting rows of ids."""
    return tuple(natural_key(i) for i in ids)
