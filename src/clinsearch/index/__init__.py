"""On-disk index: documents and sentences, BM25, findings table, dense vectors.

``IndexStore`` is the transactional store; ``clinsearch.Index`` adds searching to it.
"""

from clinsearch.index.config import COMPONENTS, IndexConfig
from clinsearch.index.index_store import IndexStore

__all__ = ["COMPONENTS", "IndexConfig", "IndexStore"]
