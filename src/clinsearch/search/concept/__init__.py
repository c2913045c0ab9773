"""Concept search: rank sentences by how completely their finding patterns match the query."""
