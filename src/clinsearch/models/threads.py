"""Run a block of torch work on a given number of intra-op threads, then restore the setting."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Use ``count`` torch threads inside the block (None: leave the setting as it is).

    Single short inputs (one query, a few pairs) run faster on one thread, markedly so on a
    few shared cores (benchmarks/README.md).
    """
    import torch

    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def one_blas_thread() -> None:
    """Run the process's own BLAS threads (OpenBLAS built on pthreads, NumPy's) one per call
    from now on: a server's vector products are small and run in many requests at once, and an
    OpenBLAS thread left idle after a product spins on a core for a while
    (``benchmarks/results/served_first_sight.md``). Call it from the main thread: OpenBLAS
    may ignore a later call from another thread. BLAS built on OpenMP (FAISS's) keeps its
    per-thread setting."""
    from threadpoolctl import ThreadpoolController

    ThreadpoolController().select(threading_layer="pthreads").limit(limits=1)
