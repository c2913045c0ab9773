"""The method registry behind ``--method``: each name maps to a ``Method`` declaring its
parameters as data; ``make_retriever`` checks every option against them before building.

``Index.search(..., method=SPEC)``, ``clinsearch search --method SPEC`` and ``clinsearch eval
--method SPEC`` all come here, so a method registered in ``METHODS`` is reached by all three.
A plain ``factory(index, **options)`` may be registered too: its keyword arguments are then
its parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from clinsearch.errors import ClinsearchError
from clinsearch.search import bm25, dense, hybrid
from clinsearch.search.concept import retriever as concept
from clinsearch.search.filters import ReportFilters
from clinsearch.search.method_params import METHOD_PARAMS, RERANK_DEPTH, WRAPPERS
from clinsearch.search.method_spec import Kind, Method, MethodSpec, Param, parse_spec
from clinsearch.search.retriever import Retriever

if TYPE_CHECKING:
    from clinsearch.index import IndexStore

RetrieverFactory = Callable[..., Retriever]

# Options every method takes: a polarity filter, a cross-encoder re-ranker and report filters.
WRAPPER_PARAMS = (
    *WRAPPERS,
    Param("filters", "object", "Report filters (date range, type, section, finding context):"
          " a search.filters.ReportFilters.", of=ReportFilters),
)


def default_method(components: Sequence[str]) -> str:
    """The method a search uses unless told: hybrid with vectors, concept with concept postings
    (both read negation, unlike BM25), bm25 only for an index with neither."""
    if "dense" in components:
        return "hybrid"
    return "concept" if "concepts" in components else "bm25"


def method(name: str) -> Method:
    """The registered method ``name``; an unknown name is a user error listing the known ones."""
    try:
        entry = METHODS[name]
    except KeyError:
        raise ClinsearchError(
            f"unknown search method {name!r}; known methods: {', '.join(METHODS)}"
        ) from None
    return entry if isinstance(entry, Method) else Method(entry, _signature_params(entry))


def params_of(name: str) -> tuple[Param, ...] | None:
    """All options of method ``name`` (its own and the wrappers'), or None if unknown."""
    if name not in METHODS:
        return None
    return method(name).params + WRAPPER_PARAMS


def parse_method(spec: str, field_name: str = "method") -> MethodSpec:
    """Parse a method spec (``NAME[:key=value,...]``) for a registered method."""
    return parse_spec(spec, params_of, field_name)


def checked_options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` of method ``name`` converted to their declared types; an unknown option or
    a bad value is a user error naming the method, the option and what it takes."""
    params = {p.name: p for p in method(name).params + WRAPPER_PARAMS}
    unknown = [key for key in options if key not in params]
    if unknown:
        raise ClinsearchError(
            f"method {name!r} does not take these options: {', '.join(unknown)}"
            f" (it takes: {', '.join(params)})"
        )
    return {key: params[key].convert(value, name) for key, value in options.items()}


def make_retriever(index: IndexStore, spec: str | MethodSpec, **options: Any) -> Retriever:
    """The retriever of ``spec`` (a method name or spec) with ``options`` over ``index``.

    ``polarity_filter`` wraps it in a concept polarity filter, ``filters`` in report filters
    (date, type, section, context; ``search/filters.py``); ``rerank`` (a cross-encoder
    folder) in a re-ranker of its top ``rerank_depth`` hits reading ``rerank_input`` passages.
    """
    if isinstance(spec, str):
        spec = parse_method(spec)
    name = spec.method
    chosen = checked_options(name, spec.options | options)
    own = {k: v for k, v in chosen.items() if k not in {p.name for p in WRAPPER_PARAMS}}
    polarity_filter = chosen.get("polarity_filter")
    filters = chosen.get("filters")
    rerank = chosen.get("rerank")
    rerank_depth = chosen.get("rerank_depth")
    rerank_input = chosen.get("rerank_input")
    chosen_method = method(name)
    for component in chosen_method.needs:
        index.component(component)  # a missing component is a user error naming it
    retriever: Retriever = chosen_method.factory(index, **own)
    if polarity_filter is not None:
        from clinsearch.search.polarity import PolarityFilter

        retriever = PolarityFilter(index, retriever, polarity_filter)
    if filters is not None and filters.active:
        from clinsearch.search.filters import FilteredRetriever

        retriever = FilteredRetriever(index, retriever, filters)
    if rerank is not None:
        from clinsearch.search.rerank import Reranker

        retriever = Reranker(
            index,
            retriever,
            rerank,
            depth=rerank_depth or RERANK_DEPTH,
            passage=rerank_input or "report",
        )
    elif rerank_depth is not None or rerank_input is not None:
        raise ClinsearchError(
            "`rerank_depth` and `rerank_input` need `rerank` (a cross-encoder model folder)"
        )
    return retriever


_KINDS: dict[type, Kind] = {bool: "bool", int: "int", float: "float"}


def _signature_params(factory: Callable[..., Any]) -> tuple[Param, ...]:
    """The keyword parameters of a plain factory, typed by their defaults."""
    return tuple(
        Param(p.name, _KINDS.get(type(p.default), "str"), "", default=p.default)
        for p in list(inspect.signature(factory).parameters.values())[1:]
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    )


METHODS: dict[str, Method | RetrieverFactory] = {
    "bm25": Method(bm25.BM25Retriever, METHOD_PARAMS["bm25"], "BM25 (tantivy) over sentences,"
                   " a report scoring as its best sentence.", ("bm25",)),
    "concept": Method(concept.ConceptRetriever, METHOD_PARAMS["concept"], "Concept search: how"
                      " completely each sentence's findings match the query's finding patterns.",
                      ("concepts", "bm25")),
    "dense": Method(dense.DenseRetriever, METHOD_PARAMS["dense"], "Dense retrieval: sentence"
                    " embeddings (index built with --dense).", ("dense",)),
}
# hybrid fuses other methods: it makes their retrievers with make_retriever, of those registered
METHODS["hybrid"] = Method(
    partial(hybrid.HybridRetriever, make=make_retriever, registered=METHODS.keys()),
    METHOD_PARAMS["hybrid"], "Fuse the rankings of several methods.", ("bm25",))
