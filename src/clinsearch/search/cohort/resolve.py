"""Resolve cohort terms to finding specs with the query parser, strictly: one finding per term."""

from __future__ import annotations

from clinsearch.annotate.finding import modifier_values
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.index.finding_match import FindingSpec
from clinsearch.search.cohort.evaluator import Resolver
from clinsearch.search.cohort.syntax import CohortSyntaxError, Term, TextMatch
from clinsearch.search.concept.ranking import DEFAULT_POLARITY, PolarityOptions
from clinsearch.search.query_parser import QueryParser


def term_resolver(query: str, parser: QueryParser, hierarchy: Hierarchy,
                  options: PolarityOptions = DEFAULT_POLARITY, as_text: bool = False
                  ) -> Resolver:
    """A resolver for the terms of ``query``; bad terms raise errors pointing into ``query``.

    With ``as_text``, a term that names no lexicon finding, or has words the lexicon does not
    know, is matched as text instead (its polarity read by ConText, ``search.phrase``)."""

    def resolve(term: Term) -> FindingSpec | TextMatch:
        parsed = parser.parse(term.text, map_unknown=False)
        if as_text and (parsed.mappings or not parsed.groups):
            return TextMatch(term.text, term.start, term.end)
        if parsed.mappings:
            m = parsed.mappings[0]
            nearest = ", ".join(f'"{t.text}" ({sim:.2f})' for t, sim in m.nearest)
            raise CohortSyntaxError(
                f"'{m.phrase}' is not in the lexicon; nearest terms: {nearest}",
                query, term.start + _offset(query, term) + m.start)
        findings = [f for group in parsed.groups for f in group]
        if not findings:
            raise CohortSyntaxError(f"'{term.text}' names no finding of the lexicon",
                                    query, term.start)
        if len(findings) > 1:
            names = ", ".join(f.name for f in findings)
            raise CohortSyntaxError(
                f"'{term.text}' names {len(findings)} findings ({names}); "
                "join them with AND or OR", query, term.start)
        f = findings[0]
        sites = parsed.sites[0] if parsed.sites else ()
        return FindingSpec(
            label=" @".join([f.pattern, *(s.name for s in sites)]),
            concepts=tuple(sorted(hierarchy.descendants(f.concept))),
            polarities=options.allowed(f.polarity),
            contexts=options.context,
            required_context=f.context,  # "history of X" reads as context:historical X
            modifiers=tuple(modifier_values(f.modifiers)),
            sites=tuple((tuple(sorted(hierarchy.descendants(s.concept))),
                         tuple(sorted({s.name.lower(), s.text.lower()}))) for s in sites),
        )

    return resolve


def _offset(query: str, term: Term) -> int:
    """1 for a quoted term (its text starts after the quote), else 0."""
    return 1 if query[term.start : term.start + 1] == '"' else 0
