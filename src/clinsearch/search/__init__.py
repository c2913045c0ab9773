"""Query parsing, retrievers, fusion and aggregation to report, visit and patient."""
