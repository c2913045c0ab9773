"""Counts for the counts-only role, as i2b2, SHRINE and Leaf answer them: each count gets an
offset drawn from what it counts, then a count below the threshold is withheld (``None``: zero
and small read alike) and larger ones are rounded; filters that select fewer reports than the
threshold are refused outright (``check_filters_wide``; cohorts: ``search.cohort.width``).

The offset is uniform over one rounding step and drawn by an HMAC of the counted set (the ids
matched), under a key derived from the audit key: the same set always shows the same number,
however it is asked for (no averaging by rephrasing), and sets one report apart show numbers
drawn independently, so the step of the rounding no longer says where one report tips it.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping

import numpy as np

from clinsearch.errors import ClinsearchError
from clinsearch.search.filters import ReportFilters, allowed_ids
from clinsearch.search.session import Index

ROUND_TO = 5
_NOISE_LABEL = b"clinsearch-viewer-count-noise\0"


def noise_key(audit_key: bytes) -> bytes:
    """The key of the counts' offsets, derived from the audit key (never the key itself)."""
    return hmac.new(audit_key, _NOISE_LABEL, hashlib.sha256).digest()


def mask_set(what: str, mask: np.ndarray) -> bytes:
    """What a count over a mask counts: its name (the unit) and the units set."""
    return what.encode() + b"\0" + np.packbits(np.asarray(mask, dtype=bool)).tobytes()


def id_set(what: str, ids: Iterable[object]) -> bytes:
    """What a count over ids counts: its name and the ids, sorted."""
    return "\0".join([what, *sorted(map(str, ids))]).encode()


def viewer_count(count: int, threshold: int, counted: bytes, key: bytes) -> int | None:
    """``count`` as the viewer sees it: plus an offset in [-ROUND_TO/2, ROUND_TO/2) drawn by
    an HMAC of ``counted`` (the set counted, ``mask_set``/``id_set``) under ``key``; then
    ``None`` below ``threshold``, else rounded to a multiple of ROUND_TO."""
    draw = int.from_bytes(hmac.new(key, counted, hashlib.sha256).digest()[:8], "big") / 2**64
    noisy = count + ROUND_TO * (draw - 0.5)
    if noisy < threshold:
        return None
    return max(threshold, ROUND_TO * round(noisy / ROUND_TO))


def viewer_counts(sets: Mapping[str, np.ndarray], threshold: int, key: bytes,
                  within: bytes = b"") -> dict[str, int | None]:
    """Each mask's count as the viewer sees it (``within``: what the masks are part of)."""
    return {unit: viewer_count(int(mask.sum()), threshold, within + mask_set(unit, mask), key)
            for unit, mask in sets.items()}


def check_filters_wide(index: Index, filters: ReportFilters, threshold: int) -> None:
    """Refuse ``filters`` whose dates and type select fewer than ``threshold`` reports."""
    if filters.active and len(allowed_ids(index, filters, "report")) < threshold:
        raise ClinsearchError(f"these filters select fewer than {threshold} reports; for the"
                              " viewer role filters must select at least that many")
