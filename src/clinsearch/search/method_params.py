"""The options of every search method, declared as data in one place.

Light on purpose (no NumPy, no index): the registry builds each method with these parameters,
and the CLI makes its ``search`` and ``eval`` flags from them without loading a method.
"""

from __future__ import annotations

from clinsearch.limits import MAX_FUSION_DEPTH, MAX_LIST_ITEMS, MAX_RERANK_DEPTH, MAX_RRF_K
from clinsearch.search.method_spec import Param

POLARITY_MODES = ("query", "any")  # concept search's own polarity
POLARITY_FILTERS = ("query", "any", "present", "absent")  # the filter every method takes
FUSIONS = ("rrf", "weighted", "tiered")
NORMALISATIONS = ("minmax", "zscore")
DEFAULT_NORMALISATION = "minmax"
RRF_K = 60  # Cormack et al. 2009
FUSION_DEPTH = 100  # units each fused method ranks
RERANK_INPUTS = ("report", "sentence", "summary")
RERANK_DEPTH = 50  # first-stage results re-ranked

BM25 = (
    Param("whole_report", "bool", "Score whole reports (one BM25 document each), not best"
          " sentences.", default=False),
)
CONCEPT = (
    Param("include_uncertain", "bool", "Also match hedged findings ('possible pneumonia').",
          default=False),
    Param("polarity", "str", "query: the polarity the query states; any: every polarity.",
          default="query", choices=POLARITY_MODES, what="polarity mode"),
    Param("term_model", "path", "Term encoder folder mapping unknown query words to lexicon"
          " terms (default: the index's recorded one, else all-MiniLM-L6-v2)."),
    Param("context", "list", "Context flags also counted: family, historical, hypothetical,"
          " indication (comma-separated) or any; default: findings asserted for this patient,"
          " now.", max_items=MAX_LIST_ITEMS),
)
DENSE = (
    Param("model", "path", "The encoder folder the index was embedded with (default: that one).",
          needs="dense"),
)
HYBRID = (
    Param("methods", "list", "Methods to fuse (default bm25, dense and concept where the index"
          " has them).", max_items=MAX_LIST_ITEMS),
    Param("fusion", "str", "tiered (concept-search tiers first), weighted (normalised scores) or"
          " rrf (reciprocal rank); default tiered when concept takes part, else weighted.",
          choices=FUSIONS),
    Param("weights", "weights", "Method weights, e.g. bm25=1,dense=0.5 (tuned defaults)."),
    Param("normalisation", "str", "Score normalisation of weighted fusion.",
          default=DEFAULT_NORMALISATION, choices=NORMALISATIONS),
    Param("rrf_k", "int", "The k of reciprocal rank fusion.", default=RRF_K, minimum=1,
          maximum=MAX_RRF_K),
    Param("depth", "int", "How many units each method ranks before fusion.",
          default=FUSION_DEPTH, minimum=1, maximum=MAX_FUSION_DEPTH),
    Param("model", "path", "dense: the encoder folder.", needs="dense"),
    Param("term_model", "path", "concept: the term encoder folder."),
    Param("context", "list", "concept: context flags also counted (family, historical,"
          " hypothetical, indication, comma-separated, or any); default: asserted findings only.",
          max_items=MAX_LIST_ITEMS),
)
# Options every method takes (the registry adds ``filters``, a Python object).
WRAPPERS = (
    Param("polarity_filter", "str", "Keep only units stating the query's concepts present /"
          " absent (any: mentioned at all; query: as the query states them).",
          choices=POLARITY_FILTERS, needs="findings", what="polarity"),
    Param("rerank", "path", "Re-rank the top rerank_depth results: a cross-encoder folder"
          " (FOLDER or cross:FOLDER) or a poly-encoder folder (poly:FOLDER)."),
    Param("rerank_depth", "int", "How many first-stage results to re-rank.",
          default=RERANK_DEPTH, minimum=1, maximum=MAX_RERANK_DEPTH),
    Param("rerank_input", "str", "What the re-ranker reads: report text, best sentence, or"
          " summary (report concepts without negated findings).", default="report",
          choices=RERANK_INPUTS, what="re-rank input"),
)
METHOD_PARAMS: dict[str, tuple[Param, ...]] = {
    "bm25": BM25, "concept": CONCEPT, "dense": DENSE, "hybrid": HYBRID,
}
