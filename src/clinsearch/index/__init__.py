"""On-disk index: documents and sentences, BM25, findings table, dense vectors.

``Index`` here is the transactional store; ``clinsearch.Index`` adds searching to it.
"""

from clinsearch.index.config import COMPONENTS, IndexConfig
from clinsearch.index.index import Index

__all__ = ["COMPONENTS", "Index", "IndexConfig"]
