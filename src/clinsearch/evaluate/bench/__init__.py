"""Benchmark builders: queries (qid, query, kind) and TREC qrels from labels, deterministically."""
