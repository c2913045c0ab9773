"""Test helper: which modules a snippet imports, run in a fresh Python (this checkout's src)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def modules_loaded(code: str, modules: Sequence[str]) -> list[bool]:
    """Run ``code`` in a new interpreter, then say of each of ``modules`` whether it is loaded
    (a failing snippet fails the test with its error)."""
    probe = f"\nimport sys, json\nprint(json.dumps([m in sys.modules for m in {list(modules)!r}]))"
    done = subprocess.run([sys.executable, "-c", code + probe], capture_output=True, text=True,
                          env=os.environ | {"PYTHONPATH": SRC}, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
