"""A lexicon's concept surface index, computed once and then loaded from the private cache.

Expanding the ~5,600 lexicon terms into their ~43k token-sequence variants runs the clinical
tokenizer on each and took about 0.5 s of every cold query; loading the stored index (JSON)
takes under 0.1 s. The key covers the concepts' surface forms, the code of ``surface`` and
``surface_index`` and the spaCy and medspaCy versions (``derived_cache``).
"""

from __future__ import annotations

import json
from pathlib import Path

from clinsearch.annotate import surface, surface_index
from clinsearch.annotate.derived_cache import cached, digest
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.surface_index import SurfaceIndex, concept_index
from clinsearch.cache_dir import default_cache_dir


def surface_key(lexicon: Lexicon) -> str:
    """A hash of everything the concept index of ``lexicon`` is derived from."""
    out = digest([surface.__file__, surface_index.__file__])
    for concept in lexicon.concepts.values():
        out.update(json.dumps([concept.id, concept.surface_forms, concept.abbreviations])
                   .encode())
    return str(out.hexdigest()[:32])


def cached_concept_index(lexicon: Lexicon, cache_dir: Path | None = None) -> SurfaceIndex:
    """``surface_index.concept_index(lexicon)``, from the cache when it holds a valid copy."""
    return cached(
        (cache_dir or default_cache_dir()) / f"surface-{surface_key(lexicon)}.json",
        lambda: concept_index(lexicon),
        lambda index: json.dumps(index.to_data(), ensure_ascii=False,
                                 separators=(",", ":")).encode(),
        lambda payload: SurfaceIndex.from_data(json.loads(payload)),
    )
