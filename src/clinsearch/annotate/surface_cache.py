"""Surface indexes (the lexicon's concepts, its modifiers), computed once and then loaded from
the private cache.

Expanding the concept terms into their token-sequence variants runs the clinical tokenizer on
each, a large part of every cold query; loading the stored index (JSON) is a fraction of that
(benchmarks/README.md). The key covers the forms and labels, the code of ``surface`` and
``surface_index`` and the spaCy and medspaCy versions (``derived_cache``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from clinsearch.annotate import surface, surface_index
from clinsearch.annotate.derived_cache import cached, digest
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.surface_index import Entry, SurfaceIndex, concept_entries, index_of
from clinsearch.cache_dir import default_cache_dir


def surface_key(terms: Sequence[Entry], abbreviations: Sequence[Entry] = ()) -> str:
    """A hash of everything ``index_of(terms, abbreviations)`` is derived from."""
    out = digest([surface, surface_index])
    out.update(json.dumps([terms, abbreviations]).encode())
    return str(out.hexdigest()[:32])


def cached_index(terms: Sequence[Entry], abbreviations: Sequence[Entry] = (),
                 cache_dir: Path | None = None) -> SurfaceIndex:
    """``surface_index.index_of(terms, abbreviations)``, from the cache when it holds a valid
    copy."""
    return cached(
        (cache_dir or default_cache_dir()) / f"surface-{surface_key(terms, abbreviations)}.json",
        lambda: index_of(terms, abbreviations),
        lambda index: json.dumps(index.to_data(), ensure_ascii=False,
                                 separators=(",", ":")).encode(),
        lambda payload: SurfaceIndex.from_data(json.loads(payload)),
    )


def cached_concept_index(lexicon: Lexicon, cache_dir: Path | None = None) -> SurfaceIndex:
    """``surface_index.concept_index(lexicon)``, from the cache when it holds a valid copy."""
    return cached_index(*concept_entries(lexicon), cache_dir=cache_dir)
