"""The bundled sample corpus: synthetic chest X-ray reports (scripts/make_sample_corpus.py)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

SAMPLE_FORMAT = "jsonl"


def sample_reports_path() -> Path:
    """Path of the shipped sample corpus (JSON Lines; read it with format ``jsonl``)."""
    path = Path(str(resources.files("clinsearch") / "data" / "sample_reports.jsonl"))
    if not path.is_file():
        raise FileNotFoundError(f"sample corpus missing from the installed package: {path}")
    return path
