"""clinsearch: negation-aware search over clinical reports."""

__version__ = "0.1.0"
