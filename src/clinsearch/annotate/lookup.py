"""Which concepts and modifier values a term resolves to, under the annotator's matching rules."""

from __future__ import annotations

from dataclasses import dataclass

from clinsearch.annotate.lexicon import Concept, Lexicon
from clinsearch.annotate.modifiers import ModifierMatcher
from clinsearch.annotate.surface_cache import cached_concept_index


@dataclass(frozen=True, slots=True)
class LookupResult:
    """The concepts and ``(category, value)`` modifier meanings a term resolves to."""

    term: str
    concepts: tuple[Concept, ...]
    modifiers: tuple[tuple[str, str], ...]


def lookup(lexicon: Lexicon, term: str) -> LookupResult:
    """Resolve ``term`` as a whole (case, hyphens, plurals and XXXX handled as in annotation)."""
    concepts = tuple(lexicon.concepts[cid] for cid in cached_concept_index(lexicon).lookup(term))
    return LookupResult(term, concepts, ModifierMatcher(lexicon).lookup(term))
