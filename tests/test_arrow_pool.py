"""clinsearch processes allocate Arrow memory with jemalloc unless the environment names a pool
(``arrow_pool``; the time it saves is measured in benchmarks/, never here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clinsearch.arrow_pool import POOL_ENV

SRC = str(Path(__file__).resolve().parents[1] / "src")
SHOW = """
import os, sys
import pyarrow as pa
from typer.testing import CliRunner
from clinsearch.cli import app
assert CliRunner().invoke(app, ["search", "--help"]).exit_code == 0
print(pa.default_memory_pool().backend_name, os.environ.get("ARROW_DEFAULT_MEMORY_POOL"))
"""


def _pool_after_a_command(env: dict[str, str]) -> str:
    """The Arrow pool and the pool variable a fresh process has after running a CLI command."""
    done = subprocess.run([sys.executable, "-c", SHOW], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": SRC}, check=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(sys.platform != "linux", reason="pyarrow's Linux wheels carry jemalloc")
def test_a_command_makes_jemalloc_the_pool_of_its_process_and_children() -> None:
    env = {k: v for k, v in os.environ.items() if k != POOL_ENV}
    assert _pool_after_a_command(env) == "jemalloc jemalloc"


def test_a_pool_named_in_the_environment_is_kept() -> None:
    env = {k: v for k, v in os.environ.items() if k != POOL_ENV}
    assert _pool_after_a_command({**env, POOL_ENV: "system"}) == "system system"
