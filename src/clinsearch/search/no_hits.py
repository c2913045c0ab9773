"""Why a search found nothing: "no such patients" is a routine answer, so it comes with a reason.

For each finding the query asks about, the index's findings are counted by polarity and
context, so the user sees whether the finding never occurs, occurs only with another polarity
(and which option widens the search), or occurs only in family, historical, hypothetical or
indication context.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from clinsearch.index import IndexStore


def no_hits_reason(index: IndexStore, query: str) -> str:
    """One or two sentences saying why ``query`` has no hits in ``index``."""
    from clinsearch.annotate.phrase import read_phrase_query
    from clinsearch.index.concept_postings import context_flags
    from clinsearch.search.concept.ranking import DEFAULT_POLARITY
    from clinsearch.search.concept.tools import index_concept_tools
    from clinsearch.search.phrase import text_reason

    if "concepts" not in index.config.components:
        return f"no sentence of this index contains the words of {query!r}"
    tools = index_concept_tools(index)
    parsed = tools.parser.parse(query)
    why = text_reason(parsed)
    if why:
        phrase = read_phrase_query(tools.parser.annotator, query)
        if not phrase.phrase:
            return "the query holds no words to search for"
        asked = " or ".join(DEFAULT_POLARITY.allowed(phrase.polarity)) + (
            f" in {' and '.join(phrase.context)} context" if phrase.context else "")
        return (f"{why}; no sentence mentions \"{phrase.phrase}\" {asked} with its words"
                " together (--polarity any, --include-uncertain or --context widen what"
                " counts; `clinsearch explain-query` shows how the query was read)")
    concepts = index.component("concepts")
    reasons = []
    for group in parsed.groups:
        for finding in group:
            posting = concepts.lookup(finding.concept)
            if not len(posting.rows):
                reasons.append(f"'{finding.name}' is never mentioned in this index")
                continue
            polarity: Counter[str] = Counter()
            codes, counts = np.unique(posting.patterns, return_counts=True)
            for code, count in zip(codes.tolist(), counts.tolist(), strict=True):
                polarity[concepts.patterns[code].polarity] += count
            found = ", ".join(f"{n} {p}" for p, n in sorted(polarity.items()))
            bits, counts = np.unique(posting.contexts, return_counts=True)
            context: Counter[str] = Counter()
            for b, n in zip(bits.tolist(), counts.tolist(), strict=True):
                for c in context_flags(b):
                    context[c] += n
            flags = ", ".join(f"{n} {c}" for c, n in sorted(context.items()))
            said = f" ({flags})" if context else ""
            asked = (f"in {' and '.join(finding.context)} context, as the query says"
                     if finding.context else "as asserted for this patient")
            reasons.append(
                f"'{finding.name}' is never {finding.polarity} with every asked modifier"
                f" {asked}; its mentions: {found}{said}"
            )
    hint = ("--include-uncertain, --polarity any or --context widen what counts;"
            " `clinsearch explain-query` shows how the query was read")
    return "; ".join(reasons) + f". {hint}"
