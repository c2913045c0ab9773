"""The bounds of every option and query that reaches work, declared once.

The search methods' parameters (``search.method_params``) carry these as their ``maximum``, the
cohort parser and the phrase reader check theirs, and the server's routes declare theirs from
here, so the CLI, the API and evaluation refuse the same values, before any work, with a
``LimitError`` (exit status 2; HTTP 422). Each bound is far above what a real query needs and
far below what would exhaust a process: an unbounded value reaches allocations (tantivy's
collector allocates ``limit`` slots up front) or work that grows faster than the query.
"""

from __future__ import annotations

from clinsearch.errors import LimitError

# search methods (search.method_params)
MAX_FUSION_DEPTH = 10_000  # units each fused method ranks before fusion (hybrid ``depth``)
MAX_RERANK_DEPTH = 1_000  # first-stage hits a cross-encoder reads (``rerank_depth``)
MAX_RRF_K = 100_000  # the k of reciprocal rank fusion (``rrf_k``)
MAX_LIST_ITEMS = 8  # names in a list option (hybrid ``methods``, ``context``)

# queries (cohort syntax, phrase queries)
MAX_QUERY_CHARS = 10_000  # characters of a cohort query
MAX_CLAUSES = 256  # findings, filters and text matches of a cohort query
MAX_NESTING = 32  # nested parentheses and NOTs of a cohort query
MAX_PHRASE_WORDS = 24  # words of one phrase read as text (a search query, a cohort term)
MAX_TERM_VARIANTS = 1_024  # token sequences one phrase or term is matched as (long condition
# phrases of real notes, such as those of the NegEx test set, reach about a thousand)

# the web service (server.routes)
MAX_QUERY_TEXT = 1_000  # characters of a search or explain query
MAX_TOP = 100  # hits on one page of search results
MAX_MEMBERS_PAGE = 500  # cohort members on one page
MAX_OFFSET = 10_000_000  # where a page of cohort members starts


def check_at_most(value: int, bound: int, what: str) -> None:
    """Refuse ``value`` above ``bound`` with one line naming ``what`` and the bound."""
    if value > bound:
        raise LimitError(f"{what}: at most {bound:,} (got {value:,})")
