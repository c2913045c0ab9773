"""Names of the files the API hands out: a safe slug of what they hold (ASCII letters, digits
and dashes), so a download says which query or bundle it came from."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

MAX_SLUG = 40  # characters of a query or bundle name in a file name


def slug(text: str) -> str:
    """``text``'s ASCII letters and digits, lower-cased, runs of anything else one dash, at
    most ``MAX_SLUG`` characters; "" when nothing is left."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower())[:MAX_SLUG].strip("-")


def cohort_export_name(query: str, level: str, day: date | None = None) -> str:
    """``cohort-SLUG-LEVELs-YYYYMMDD.csv`` (UTC day; no slug part when the query gives none)."""
    day = day or datetime.now(UTC).date()
    return "-".join(["cohort", *filter(None, [slug(query)]), f"{level}s", f"{day:%Y%m%d}"]) + ".csv"


def bundle_export_name(name: str) -> str:
    """``bundle-SLUG.json`` (``bundle-terms.json`` when the name gives no slug)."""
    return f"bundle-{slug(name) or 'terms'}.json"
