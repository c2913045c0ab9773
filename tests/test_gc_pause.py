"""The collector pause used while start-up builds long-lived objects (``gc_pause``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from clinsearch.gc_pause import collector_paused


@pytest.fixture(autouse=True)
def restored_collector() -> Iterator[None]:
    """The collector enabled and nothing frozen after each test, whatever it did."""
    yield
    gc.unfreeze()
    gc.enable()


def test_the_block_runs_without_collections_and_what_it_built_is_frozen() -> None:
    gc.unfreeze()
    with collector_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)


def test_a_disabled_collector_stays_disabled_and_a_failure_restores_it() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
