"""Reader snapshots: a reader in another process searches through 20 commits without an error,
and an index nobody may write to opens and answers searches and cohort counts."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import SegmentedReport

from .conftest import segmented

READER = """
import sys
from pathlib import Path
from clinsearch import Index

root, signals = Path(sys.argv[1]), Path(sys.argv[2])
snapshot = Index.open(root)
first = [h.id for h in snapshot.search("pneumothorax", top=100, method="bm25")]
(signals / "ready").touch()
seen, rounds = set(), 0
while not (signals / "stop").exists() or rounds < 3:
    assert [h.id for h in snapshot.search("pneumothorax", top=100, method="bm25")] == first
    assert len(snapshot.lookup.report_ids) == snapshot.manifest.counts.reports
    with Index.open(root) as fresh:
        hits = fresh.search("pneumothorax", top=100, level="patient", method="bm25")
        assert len(fresh.lookup.report_ids) == fresh.manifest.counts.reports
        seen.add(fresh.manifest.generation)
    rounds += 1
print(rounds, len(seen))
"""


def test_reader_process_searches_through_20_commits(
    tmp_path: Path, corpus: list[SegmentedReport]
) -> None:
    root = tmp_path / "idx"
    writer = Index.build(corpus, root, IndexConfig(components=("bm25",)), progress=False)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(root), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    deadline = time.monotonic() + 300
    while not (tmp_path / "ready").exists():
        if reader.poll() is not None:
            pytest.fail(f"the reader stopped before it was ready: {reader.communicate()[1]}")
        assert time.monotonic() < deadline, "the reader did not start"
        time.sleep(0.02)
    for i in range(20):
        if i % 4 == 3:
            writer.delete([f"n{i - 1}"])
        else:
            writer.add([segmented(f"n{i}", [f"Pneumothorax number {i}."])], progress=False)
    kept = (root / "gen-000001").is_dir()  # the reader's snapshot
    (tmp_path / "stop").touch()
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    assert kept
    rounds, generations = map(int, out.split())
    assert rounds >= 3 and generations >= 2
    writer.add([segmented("last", ["Pneumothorax."])], progress=False)
    # no reader left: only the live generation remains (merges of small segments add commits)
    assert [p.name for p in root.glob("gen-*")] == [writer.generation.path.name]


READ_ONLY = """
import sys
from clinsearch import Index
from clinsearch.search.cohort import Cohort

with Index.open(sys.argv[1]) as index:
    print(" ".join(h.id for h in index.search("pleural effusion", top=3, method="bm25")))
print(Cohort(sys.argv[1]).counts("pneumothorax")["report"])
"""


def _without_privileges() -> list[str]:
    """A command prefix under which root, too, obeys file permissions (needs setpriv)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop the right to write anywhere")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all"]


def test_read_only_index_opens_and_searches(tmp_path: Path, corpus: list[SegmentedReport]) -> None:
    root = tmp_path / "idx"
    Index.build(corpus, root, progress=False).close()
    before = sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*"))
    paths = [root, *root.rglob("*")]
    for path in paths:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        done = subprocess.run(
            [*_without_privileges(), sys.executable, "-c", READ_ONLY, str(root)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            timeout=300,
        )
    finally:
        for path in paths:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert done.returncode == 0, done.stderr
    ids, count = done.stdout.split("\n")[:2]
    assert ids.split() == ["r6", "r1", "r2"] and count == "1"
    assert sorted((str(p), p.stat().st_mtime_ns) for p in root.rglob("*")) == before
