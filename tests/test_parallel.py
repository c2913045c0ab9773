"""The bounded parallel map: results in input order, processes replaced after enough items."""

from __future__ import annotations

import os

from clinsearch.parallel import Workers


def test_map_keeps_order_and_recycles_processes() -> None:
    with Workers(2, recycle_after=4) as workers:
        # each item is answered by the pid of the worker process that handled it
        done = list(workers.map(os.readlink, range(12), send=lambda _: "/proc/self"))
    assert [item for item, _ in done] == list(range(12))
    pids = {pid for _, pid in done}
    assert str(os.getpid()) not in pids
    assert len(pids) >= 3  # without recycling two processes would have answered all


def test_one_worker_runs_in_this_process() -> None:
    with Workers(1) as workers:
        done = list(workers.map(os.readlink, range(3), send=lambda _: "/proc/self"))
    assert {pid for _, pid in done} == {str(os.getpid())}
