"""Find section headings (FINDINGS:, IMPRESSION:, ...) in report text; name them canonically."""

from __future__ import annotations

import re
from collections.abc import Mapping
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
        alternatives = "|".join(re.escape(k) for k in sorted(self._names, key=len, reverse=True))
        self._pattern = re.compile(
            rf"(?:(?<=\s)|^)(?P<known>(?i:{alternatives}))[ \t]*:"
            r"|(?m:^[ \t]*(?P<caps>[A-Z][A-Z &/]{1,38}[A-Z])[ \t]*:)"
        )

    def find(self, text: str) -> list[Heading]:
        """The headings in ``text``, in order."""
        headings = []
        for match in self._pattern.finditer(text):
            known = match.group("known")
            if known is not None:
                if not known[0].isupper():
                    continue
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
