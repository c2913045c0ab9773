"""The lexicon-derived machinery shared by concept search and cohort queries, built once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.search.patterns import Hierarchy
from clinsearch.search.query import QueryParser

if TYPE_CHECKING:
    from clinsearch.index import Index


@dataclass(frozen=True, slots=True)
class ConceptTools:
    """A lexicon with its concept hierarchy and a query parser using the same annotator."""

    lexicon: Lexicon
    hierarchy: Hierarchy
    parser: QueryParser


@lru_cache(maxsize=4)
def concept_tools(lexicon_path: str | None = None) -> ConceptTools:
    """The tools for the lexicon at ``lexicon_path`` (None: the shipped one), once per process."""
    from clinsearch.annotate.annotator import annotator_for
    from clinsearch.search.vocabulary import DefaultEncoder

    annotator = annotator_for(lexicon_path)  # the one the findings component uses, shared
    lexicon = annotator.lexicon
    return ConceptTools(lexicon, Hierarchy.from_lexicon(lexicon),
                        QueryParser(annotator, DefaultEncoder()))


def index_lexicon_path(index: Index) -> str | None:
    """The lexicon the index's findings were extracted with (None: the shipped one)."""
    options: Any = index.config.options.get("findings", {})
    path = options.get("lexicon")
    return str(path) if path else None
