"""Find section headings (FINDINGS:, IMPRESSION:, ...) in report text; name them canonically."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

# heading as written (upper case) -> canonical section name
HEADINGS: Mapping[str, str] = {
    "FINDINGS": "findings",
    "FINDING": "findings",
    "FINDINGS AND IMPRESSION": "findings",
    "FINDINGS/IMPRESSION": "findings",
    "IMPRESSION": "impression",
    "IMPRESSIONS": "impression",
    "CONCLUSION": "impression",
    "CONCLUSIONS": "impression",
    "INDICATION": "indication",
    "INDICATIONS": "indication",
    "HISTORY": "indication",
    "CLINICAL HISTORY": "indication",
    "CLINICAL INDICATION": "indication",
    "CLINICAL INFORMATION": "indication",
    "HISTORY/INDICATION": "indication",
    "INDICATION/HISTORY": "indication",
    "REASON FOR EXAM": "indication",
    "REASON FOR EXAMINATION": "indication",
    "REASON FOR STUDY": "indication",
    "REASON FOR THIS EXAMINATION": "indication",
    "REASON": "indication",
    "UNDERLYING MEDICAL CONDITION": "indication",
    "COMPARISON": "comparison",
    "COMPARISONS": "comparison",
    "TECHNIQUE": "technique",
    "PROCEDURE": "technique",
    "EXAM": "exam",
    "EXAMINATION": "exam",
    "RECOMMENDATION": "recommendation",
    "RECOMMENDATIONS": "recommendation",
    "ADDENDUM": "addendum",
}
_LONGEST = 48  # characters a heading (with leading spaces) may take before its colon


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading found in the text: canonical name, where it starts, and where its body starts."""

    name: str
    start: int
    body_start: int


class HeadingFinder:
    """Finds headings: known names (capitalised, then ':') anywhere after whitespace, and any
    upper-case phrase followed by ':' at the start of a line."""

    def __init__(self, headings: Mapping[str, str] = HEADINGS) -> None:
        self._names = {k.upper(): v for k, v in headings.items()}
        # upper, Capitalised and Title Case spellings, matched case-sensitively (fast)
        spellings = {form for k in self._names for form in (k, k.capitalize(), k.title())}
        alternatives = "|".join(re.escape(k) for k in sorted(spellings, key=len, reverse=True))
        self._pattern = re.compile(
            rf"(?:(?<=\s)|^)(?P<known>{alternatives})[ \t]*:"
            r"|(?m:^[ \t]*(?P<caps>[A-Z][A-Z &/]{1,38}[A-Z])[ \t]*:)"
        )

    def find(self, text: str) -> list[Heading]:
        """The headings in ``text``, in order."""
        headings = []
        for match in self._matches(text):
            known = match.group("known")
            if known is not None:
                name = self._names[known.upper()]
                start = match.start("known")
            else:
                caps = match.group("caps")
                if "XXXX" in caps:
                    continue
                name = self._names.get(caps, " ".join(caps.lower().split()))
                start = match.start("caps")
            headings.append(Heading(name, start, match.end()))
        return headings

    def _matches(self, text: str) -> Iterator[re.Match[str]]:
        """Heading matches, tried only just before each colon (much faster than a full scan)."""
        window_start = 0
        colon = text.find(":")
        while colon != -1:
            start = max(window_start, colon - _LONGEST)
            match = self._pattern.search(text, start, colon + 1)
            if match is not None:
                yield match
            window_start = colon + 1
            colon = text.find(":", window_start)
