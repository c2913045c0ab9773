"""Python's cyclic garbage collector paused while a block builds objects that live on.

Start-up builds hundreds of thousands of containers (modules, a lexicon's surface index, a
spaCy vocabulary) that stay alive: each collection pass they trigger traverses all of them and
frees nothing. Objects frozen that way are never collected: only what lives on belongs in
the block. A cold concept search spent a noticeable share of its time in such passes while it
imported spaCy and built the annotator (benchmarks/README.md).
"""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the collector off, then move every object alive out of its sight
    (``gc.freeze``: the first pass after would otherwise traverse them all once) and restore
    it; also when the block fails."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


# Frozen objects go back before the interpreter exits, so that its last collection frees them
# (extension modules such as DuckDB's report instances never freed as leaks).
atexit.register(gc.unfreeze)
