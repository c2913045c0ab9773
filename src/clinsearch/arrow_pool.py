"""Arrow's memory allocator for clinsearch processes: jemalloc instead of pyarrow's mimalloc.

With pyarrow's default (mimalloc) on the 2-core benchmark machine, a cold cohort query on 1M
reports spent 1.5-2.3 s in the kernel against 0.8 s with jemalloc, and opening the key columns
0.27 s against 0.04 s: mimalloc hands freed blocks back to the system at once, so every large
temporary array is faulted in afresh (docs/history/RESULTS.md, "Cold start, third round").
``ARROW_DEFAULT_MEMORY_POOL`` set by the user always wins.
"""

from __future__ import annotations

import os

POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"  # read by Arrow when it makes its default pool
POOL = "jemalloc"


def use_jemalloc() -> None:
    """Make jemalloc Arrow's allocator in this process and the processes it starts, unless the
    environment names one (or this pyarrow has no jemalloc)."""
    if POOL_ENV in os.environ:
        return
    import pyarrow as pa

    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc keeps its default
        return
    pa.set_memory_pool(pool)
    os.environ[POOL_ENV] = POOL  # worker processes inherit it
