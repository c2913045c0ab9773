"""Crash safety with real processes: a SIGKILL at each step of a first build or an add, and two
builds racing into one new folder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clinsearch import Index, IndexConfig

from .conftest import CORPUS, segmented

LEXICAL = IndexConfig(components=("bm25",))
CHILD = """
import os, signal, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from conftest import CORPUS, segmented
import clinsearch.index.generations as generations
from clinsearch import Index, IndexConfig
from clinsearch.index.bm25 import BM25Component
from clinsearch.index.manifest import Manifest
from clinsearch.index.tables import SegmentWriter

root, action, point = Path(sys.argv[1]), sys.argv[2], sys.argv[3]

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

def after(original, then):
    def patched(*args, **kwargs):
        result = original(*args, **kwargs)
        then()
        return result
    return patched

def wait_for_go():
    (root.parent / "ready").touch()
    while not (root.parent / "go").exists():
        time.sleep(0.02)

if point == "tables":  # killed with half the core tables written
    SegmentWriter.write = after(SegmentWriter.write, die)
elif point == "component":  # killed after the BM25 index is written
    BM25Component._info = die
elif point == "manifest":  # killed after the manifest, before the rename
    Manifest.write = after(Manifest.write, die)
elif point in ("rename", "current"):  # killed before / right after CURRENT moves (os.replace
    replace = os.replace  # is every module's: other files written by rename go on)
    def replace_current(src, dst, **kwargs):
        if Path(dst).name != "CURRENT":
            return replace(src, dst, **kwargs)
        if point == "current":
            replace(src, dst, **kwargs)
        die()
    generations.os.replace = replace_current
elif point == "hold":  # stays inside the build until told to go on
    BM25Component._info = after(BM25Component._info, wait_for_go)
elif point == "late":  # believes the folder was absent, as if it looked before the other made it
    exists = Path.exists
    Path.exists = lambda self: False if self == root else exists(self)

corpus = [segmented(r, s, p, v) for r, p, v, s in CORPUS]
config = IndexConfig(components=("bm25",))
if action == "build":
    Index.build(corpus, root, config, progress=False)
else:
    Index.open(root).add([segmented("r9", ["Another pneumothorax."])], progress=False)
"""


def _child(tmp_path: Path, root: Path, action: str, point: str) -> subprocess.Popen[str]:
    """Start a child process that builds or adds to ``root`` and may kill itself at ``point``."""
    script = CHILD.format(tests=str(Path(__file__).parent))
    return subprocess.Popen(
        [sys.executable, "-c", script, str(root), action, point],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def _entries(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


@pytest.mark.parametrize("point", ["tables", "component", "manifest", "rename", "current"])
def test_killed_first_build_leaves_a_folder_the_next_build_accepts(
    tmp_path: Path, point: str
) -> None:
    root = tmp_path / "idx"
    child = _child(tmp_path, root, "build", point)
    child.communicate(timeout=120)
    assert child.returncode == -9  # really killed
    if point == "current":  # CURRENT had moved: the build is complete
        assert Index.open(root).manifest.counts.reports == len(CORPUS)
    else:
        assert not (root / "CURRENT").exists()
    corpus = [segmented(r, s, p, v) for r, p, v, s in CORPUS]
    rebuilt = Index.build(corpus[:3], root, LEXICAL, progress=False)
    assert rebuilt.manifest.counts.reports == 3
    assert [h.id for h in rebuilt.search("pneumonia")] == ["r3"]
    assert _entries(root) == [".lock", "CURRENT", f"gen-{rebuilt.manifest.generation:06d}"]


@pytest.mark.parametrize("point", ["manifest", "rename"])
def test_killed_add_keeps_the_last_commit(tmp_path: Path, point: str) -> None:
    root = tmp_path / "idx"
    corpus = [segmented(r, s, p, v) for r, p, v, s in CORPUS]
    Index.build(corpus, root, LEXICAL, progress=False).close()
    child = _child(tmp_path, root, "add", point)
    child.communicate(timeout=120)
    assert child.returncode == -9
    index = Index.open(root)
    assert index.manifest.generation == 1 and index.manifest.counts.reports == len(CORPUS)
    index.add([segmented("r9", ["Another pneumothorax."])], progress=False)
    assert {h.id for h in index.search("pneumothorax")} == {"r1", "r5", "r9"}
    index.close()
    assert _entries(root) == [".lock", "CURRENT", "gen-000002"]


def test_racing_builds_into_a_new_folder_keep_the_winners_work(tmp_path: Path) -> None:
    root = tmp_path / "idx"
    first = _child(tmp_path, root, "build", "hold")
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists():  # ``first`` holds the lock, mid-build
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    second = _child(tmp_path, root, "build", "late")
    _, err = second.communicate(timeout=120)
    assert second.returncode != 0 and "another process is writing this index" in err
    (tmp_path / "go").touch()
    _, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    index = Index.open(root)
    assert index.manifest.counts.reports == len(CORPUS)
    assert [h.id for h in index.search("mediastinal")] == ["r5"]
