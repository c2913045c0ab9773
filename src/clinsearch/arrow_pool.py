"""Arrow's memory allocator for clinsearch processes: jemalloc instead of pyarrow's mimalloc.

With pyarrow's default (mimalloc), a cold cohort query on a large index spends far more time
in the kernel than with jemalloc (benchmarks/README.md): mimalloc hands freed blocks back to
the system at once, so every large temporary array is faulted in afresh.
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
