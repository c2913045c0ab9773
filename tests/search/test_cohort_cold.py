"""A cold cohort imports no pandas (``arrow_numbers``): its findings come from the concept
postings as NumPy arrays and Arrow buffers, its DuckDB connection registers no dataset."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clinsearch import Index

RUN = """
import atexit, runpy, sys
atexit.register(lambda: print("pandas loaded:", "pandas" in sys.modules))
sys.argv = ["clinsearch", *sys.argv[1:]]
runpy.run_module("clinsearch", run_name="__main__")
"""


def test_a_cold_cohort_never_imports_pandas(index: Index) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    args = ["cohort", str(index.path), "pneumothorax OR right pleural effusion", "--json"]
    done = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True,
                          env=env, check=True, timeout=120)
    assert '"counts"' in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "pandas loaded: False"
