"""Hostile-input fixtures: a small index in folders with hostile names, a tiny disk."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clinsearch.corpus.model import Report
from clinsearch.index import IndexStore

from .hostile import HOSTILE_NAME, REPORTS


@pytest.fixture(scope="session")
def reports() -> list[Report]:
    return [Report(id=i, text=t, patient_id=p, visit_id=v) for i, p, v, t in REPORTS]


@pytest.fixture(scope="session")
def built_once(tmp_path_factory: pytest.TempPathFactory, reports: list[Report]) -> Path:
    """The small corpus indexed once, in a folder with a hostile name; copy it to change it."""
    root = tmp_path_factory.mktemp("hostile") / HOSTILE_NAME
    IndexStore.build(reports, root, progress=False)
    return root


@pytest.fixture
def index_dir(tmp_path: Path, built_once: Path) -> Path:
    """A private copy of the built index, for tests that change or break it."""
    path = tmp_path / HOSTILE_NAME
    shutil.copytree(built_once, path, symlinks=True)
    return path


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 300 kB tmpfs (needs root and mount rights; skipped where the OS refuses)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if os.geteuid() != 0 or subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mount)], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a tmpfs here (not root or no mount rights)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
