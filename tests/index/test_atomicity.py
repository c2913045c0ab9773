"""Crash safety: a failing change leaves the live generation intact; components plug in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import SegmentedReport
from clinsearch.index import COMPONENTS
from clinsearch.index.component import Change, Generation

from .conftest import segmented


class Crash(RuntimeError):
    """The simulated crash."""


class Recorder:
    """A real (if small) component: writes the report keys it holds to a file per generation."""

    name = "recorder"
    fail_on: ClassVar[str | None] = None
    calls: ClassVar[list[tuple[str, tuple[int, ...]]]] = []

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)

    def build(self, gen: Generation) -> dict[str, Any]:
        keys = [k for b in gen.report_batches(columns=["key"]) for k in b.column("key").to_pylist()]
        return self._write("build", gen, keys, ())

    def add(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        return self._write(
            "add", gen, self._read(prev) + list(change.report_keys), change.report_keys
        )

    def delete(self, prev: Generation, gen: Generation, change: Change) -> dict[str, Any]:
        kept = [k for k in self._read(prev) if k not in change.report_keys]
        return self._write("delete", gen, kept, change.report_keys)

    def open(self, gen: Generation) -> list[int]:
        return self._read(gen)

    def _write(
        self, what: str, gen: Generation, keys: list[int], changed: tuple[int, ...]
    ) -> dict[str, Any]:
        Recorder.calls.append((what, changed))
        (gen.path / "recorder.txt").write_text(" ".join(map(str, keys)))
        if Recorder.fail_on == what:
            raise Crash(what)
        return {"keys": len(keys), "options": self.options}

    @staticmethod
    def _read(gen: Generation) -> list[int]:
        return [int(k) for k in (gen.path / "recorder.txt").read_text().split()]


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> IndexConfig:
    """Register the recorder component for one test; returns a config that uses it."""
    monkeypatch.setitem(COMPONENTS, "recorder", Recorder)
    monkeypatch.setattr(Recorder, "fail_on", None)
    monkeypatch.setattr(Recorder, "calls", [])
    return IndexConfig(components=("bm25", "recorder"), options={"recorder": {"x": 1}})


def _state(root: Path) -> tuple[str, list[str]]:
    """CURRENT's content and the directory listing."""
    return (root / "CURRENT").read_text(), sorted(p.name for p in root.iterdir())


def test_component_protocol_build_add_delete(
    tmp_path: Path, corpus: list[SegmentedReport], recorder: IndexConfig
) -> None:
    index = Index.build(corpus, tmp_path / "idx", config=recorder, progress=False)
    assert index.component("recorder") == list(range(8))
    assert index.manifest.components["recorder"] == {"keys": 8, "options": {"x": 1}}
    index.add([segmented("r9", ["More."])], progress=False)
    index.delete(["r2", "r9"])
    assert Recorder.calls == [("build", ()), ("add", (8,)), ("delete", (1, 8))]
    reopened = Index.open(index.path)
    assert reopened.config == recorder
    assert reopened.component("recorder") == [0, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("failing", ["build", "add", "delete"])
def test_crash_mid_change_keeps_live_generation(
    tmp_path: Path, corpus: list[SegmentedReport], recorder: IndexConfig, failing: str
) -> None:
    index = Index.build(corpus, tmp_path / "idx", config=recorder, progress=False)
    before = _state(index.path)
    Recorder.fail_on = failing
    with pytest.raises(Crash):
        if failing == "build":
            Index.build(corpus[:2], index.path, config=recorder, progress=False)
        elif failing == "add":
            index.add([segmented("r9", ["More."])], progress=False)
        else:
            index.delete(["r1"])
    assert _state(index.path) == before  # CURRENT unchanged, no temporary folder left
    live = Index.open(index.path)
    assert live.manifest.counts.reports == 8
    assert [h.id for h in live.search("mediastinal")] == ["r5"]


def test_crash_in_fresh_folder_leaves_nothing(
    tmp_path: Path, corpus: list[SegmentedReport], recorder: IndexConfig
) -> None:
    Recorder.fail_on = "build"
    with pytest.raises(Crash):
        Index.build(corpus, tmp_path / "new", config=recorder, progress=False)
    assert not (tmp_path / "new").exists()


def test_leftovers_of_a_hard_crash_are_swept(built: Index) -> None:
    root = built.path
    (root / ".tmp-deadbeef").mkdir()  # killed while writing a generation
    (root / ".tmp-deadbeef" / "reports.parquet").write_bytes(b"partial")
    (root / "gen-000002").mkdir()  # killed after the rename, before CURRENT moved
    assert Index.open(root).manifest.generation == 1
    built.delete(["r1"])
    assert _state(root) == ("gen-000002\n", [".lock", "CURRENT", "gen-000002"])
    assert Index.open(root).manifest.counts.reports == 7
