"""Counts for the counts-only role, as i2b2 and SHRINE answer them: a count below the
threshold is withheld (``None``: zero and small read alike) and larger ones are rounded, so
that one-word or single-day queries do not tell whether one report says a word; filters that
select fewer reports than the threshold are refused outright."""

from __future__ import annotations

from clinsearch.errors import ClinsearchError
from clinsearch.search.filters import ReportFilters, allowed_ids
from clinsearch.search.session import Index

ROUND_TO = 5


def viewer_count(count: int, threshold: int) -> int | None:
    """``None`` below ``threshold``, else ``count`` rounded to a multiple of ROUND_TO."""
    if count < threshold:
        return None
    return max(threshold, ROUND_TO * round(count / ROUND_TO))


def check_filters_wide(index: Index, filters: ReportFilters, threshold: int) -> None:
    """Refuse ``filters`` whose dates and type select fewer than ``threshold`` reports."""
    if filters.active and len(allowed_ids(index, filters, "report")) < threshold:
        raise ClinsearchError(f"these filters select fewer than {threshold} reports; for the"
                              " viewer role filters must select at least that many")
