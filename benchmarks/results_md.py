"""Where benchmarks write: scratch indexes under ``out/``, result tables and plots under
``results/``; and one section of a results file rewritten, leaving the others as they are."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
OUT = BENCHMARKS / "out"
RESULTS = BENCHMARKS / "results"


def update_section(path: Path, heading: str, body: str, parent: str = "") -> None:
    """Replace the body of the section under ``heading`` (up to the next heading of any level,
    so subsections written by hand below it stay), or append it, under ``parent`` (a higher
    heading, added when missing) if given."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    if parent and not re.search(rf"^{re.escape(parent)}$", text, re.M):
        text = text.rstrip("\n") + f"\n\n{parent}\n"
    level = len(heading) - len(heading.lstrip("#"))
    section = f"{heading}\n\n{body.strip()}\n\n"
    pattern = re.compile(rf"^{re.escape(heading)}\n.*?(?=^#+ |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    elif parent:
        after = re.compile(rf"^{re.escape(parent)}\n.*?(?=^#{{1,{level - 1}}} |\Z)", re.S | re.M)
        text = after.sub(lambda m: m.group(0).rstrip("\n") + "\n\n" + section, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
