"""On-disk index: documents and sentences, BM25, findings table, dense vectors."""

from clinsearch.index.config import COMPONENTS, IndexConfig
from clinsearch.index.index import Index
from clinsearch.search.hit import Hit

__all__ = ["COMPONENTS", "Hit", "Index", "IndexConfig"]
