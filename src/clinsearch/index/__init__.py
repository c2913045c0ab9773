"""On-disk index: documents and sentences, BM25, findings table, dense vectors."""
