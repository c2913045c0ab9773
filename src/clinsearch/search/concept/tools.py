"""The lexicon-derived machinery shared by concept search and cohort queries, built once.

The term model (default MiniLM, or a term encoder from ``clinsearch train terms``) maps query
words the lexicon does not know to lexicon terms. An index may record one in its config
(``clinsearch index --term-model``); an explicit ``term_model`` argument overrides it.

The ranking tie-break (pattern similarity) always uses the default encoder's term vectors: the
term encoder learns only concept synonym groups, while patterns also hold polarity, type and
modifier words, and on the IU X-ray benchmark its vectors as tie-break lowered P@10
significantly with MAP unchanged (benchmarks/README.md).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.tiers import TierOrder, tier_order
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.gc_pause import collector_paused
from clinsearch.search.query_parser import QueryParser
from clinsearch.search.vocabulary import TermVectors

if TYPE_CHECKING:
    from clinsearch.index import IndexStore

TERM_MODEL = "term model"  # how errors name the folder
TERM_MODEL_OPTION = "term_model"  # key in the ``concepts`` component's index options
TIER_ORDER_OPTION = "tier_order"  # ... the search tiers' order, when not the shipped one
# held while tools are built or their term vectors loaded: threads asking meanwhile wait for
# them, never build them twice (lru_cache alone may run a function twice for one key)
_BUILDING = threading.RLock()


@dataclass(frozen=True, slots=True)
class ConceptTools:
    """A lexicon with its concept hierarchy and a query parser using the same annotator."""

    lexicon: Lexicon
    hierarchy: Hierarchy
    parser: QueryParser  # its vectors come from the term model
    lexicon_path: str | None = None

    def pattern_vectors(self) -> TermVectors:
        """Term vectors for the pattern-similarity tie-break: the default encoder's, always."""
        return concept_tools(self.lexicon_path).parser.vectors


def concept_tools(lexicon_path: str | None = None, term_model: str | None = None) -> ConceptTools:
    """The tools for the lexicon at ``lexicon_path`` (None: the shipped one) with term vectors
    from the model folder ``term_model`` (None: MiniLM), built once per process: a thread
    asking while another builds them waits for those."""
    with _BUILDING:
        return _built_tools(lexicon_path, term_model)


@lru_cache(maxsize=4)
def _built_tools(lexicon_path: str | None, term_model: str | None) -> ConceptTools:
    """``concept_tools``, built (spaCy imported and the annotator built with the garbage
    collector paused: all of it lives on)."""
    from clinsearch.search.vocabulary import DefaultEncoder

    with collector_paused():
        from clinsearch.annotate.annotator import annotator_for

        annotator = annotator_for(lexicon_path)  # the one the findings component uses, shared
        lexicon = annotator.lexicon
        hierarchy = Hierarchy.from_lexicon(lexicon)
    encoder = DefaultEncoder(term_model, TERM_MODEL)
    return ConceptTools(lexicon, hierarchy, QueryParser(annotator, encoder), lexicon_path)


def index_concept_tools(index: IndexStore, term_model: str | Path | None = None) -> ConceptTools:
    """The tools for ``index``: its lexicon, and ``term_model`` or else the one it records.

    The folder is checked on every call (a few file checks), not only when first loaded.
    """
    if term_model is not None:
        return concept_tools(index_lexicon_path(index), checked_term_model(term_model))
    recorded = index_term_model(index)
    if recorded is None:
        return concept_tools(index_lexicon_path(index))
    try:
        folder = checked_term_model(recorded)
    except ClinsearchError as exc:
        raise ClinsearchError(f"{exc} (recorded in the config of index {index.path}; "
                              "pass `term_model` to use another)") from None
    return concept_tools(index_lexicon_path(index), folder)


def warm_term_vectors(index: IndexStore) -> int:
    """Load or compute now (cached on disk per lexicon and term model) the term vectors
    concept search reads: the term model's for unknown words and the default encoder's for
    the pattern tie-break ([SyedaMahmood2021] 3.6), so no first search computes them
    silently; threads asking for concept tools meanwhile wait for the vectors too. Returns how
    many lexicon terms they cover."""
    with _BUILDING:
        tools = index_concept_tools(index)
        tools.pattern_vectors()
        return len(tools.parser.vectors.terms)


def index_lexicon_path(index: IndexStore) -> str | None:
    """The lexicon the index's findings were extracted with (None: the shipped one)."""
    options: Any = index.config.options.get("findings", {})
    path = options.get("lexicon")
    return str(path) if path else None


def index_section_contexts(index: IndexStore) -> dict[str, str]:
    """The context flag each section gives its findings in ``index`` (lower-case section name
    -> flag): the shipped meanings, changed as the index was built (``--section-context``)."""
    from clinsearch.annotate.context_rules import section_contexts

    options: Any = index.config.options.get("findings", {})
    return section_contexts(options.get("section_context"))


def index_tier_order(index: IndexStore) -> TierOrder:
    """The search tier order of ``index``: the shipped one (annotate/data/search_tiers.yaml),
    or the order recorded as the index was built (``--tier-order``)."""
    options: Any = index.config.options.get("concepts", {})
    return tier_order(options.get(TIER_ORDER_OPTION))


def tier_names(text: str) -> list[str]:
    """``--tier-order`` "a,b,..." as tier names, checked against the shipped tiers."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    try:
        tier_order(names)
    except InputError as exc:
        raise InputError(exc.message, field="--tier-order") from None
    return names


def index_term_model(index: IndexStore) -> str | None:
    """The term model folder recorded in the index config (None: MiniLM)."""
    options: Any = index.config.options.get("concepts", {})
    path = options.get(TERM_MODEL_OPTION)
    return str(path) if path else None


def checked_term_model(path: str | Path) -> str:
    """``path`` resolved, if it is a loadable model folder (for recording it in an index)."""
    from clinsearch.models.model_names import check_named_model

    return str(check_named_model(path, TERM_MODEL))
