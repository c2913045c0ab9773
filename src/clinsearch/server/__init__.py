"""The search service: a FastAPI app (REST API and web page) over the Python API, with API
tokens, roles and a hash-chained audit trail. ``clinsearch serve`` runs it on uvicorn."""
