"""Draw benchmarks/README.md (and its copy in the docs site, docs/benchmarks.md) from
benchmarks/figures.yaml: the page's prose from benchmarks/README.template.md, one table per group
of figures, one short value per cell.

    python -m benchmarks.render            # rewrite both pages
    python -m benchmarks.render --check    # exit 1 if either is not what the figures give
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.figures import FIGURES, GROUPS, Figure, load
from benchmarks.results_md import BENCHMARKS
from clinsearch.errors import InputError

TEMPLATE = BENCHMARKS / "README.template.md"
ROOT = BENCHMARKS.parent
# each page, and where the plots are seen from it
PAGES = {BENCHMARKS / "README.md": "../docs/images/benchmarks/",
         ROOT / "docs" / "benchmarks.md": "images/benchmarks/"}
HEADER = ("| figure | value | note | corpus | machine | date (UTC) | commit | command |\n"
          "| --- | ---: | --- | --- | --- | --- | --- | --- |")
TITLES = {"quality": "Quality", "speed": "Speed", "scale": "Scale", "service": "Service",
          "spark": "Spark", "training": "Training", "tests": "Tests"}


def tables(figures: list[Figure]) -> str:
    """One Markdown table per group that has figures, in the order of ``GROUPS``."""
    parts = []
    for group in GROUPS:
        rows = [_row(f) for f in figures if f.group == group]
        if rows:
            parts.append(f"### {TITLES[group]}\n\n{HEADER}\n" + "\n".join(rows))
    return "\n\n".join(parts)


def _row(f: Figure) -> str:
    """A figure as one table line."""
    cells = (f.figure, f"**{f.shown()}**", f.note, f.corpus, f"{f.machine}, load {f.load}",
             f.date, f.commit, f"`{f.command}`")
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def pages(figures: list[Figure]) -> dict[Path, str]:
    """The text of each page drawn from the figures."""
    template = TEMPLATE.read_text(encoding="utf-8")
    body = template.replace("{{tables}}", tables(figures))
    return {page: body.replace("{{images}}", images) for page, images in PAGES.items()}


def stale(figures: list[Figure], write: bool) -> list[Path]:
    """The pages that differ from what ``figures`` give; rewritten when ``write``."""
    found = []
    for page, text in pages(figures).items():
        current = page.read_text(encoding="utf-8") if page.exists() else ""
        if current != text:
            found.append(page)
            if write:
                page.unlink(missing_ok=True)  # docs/benchmarks.md was once a link to the README
                page.write_text(text, encoding="utf-8")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only check that the pages are current")
    args = ap.parse_args()
    try:
        figures = load(FIGURES)
    except InputError as exc:  # one line naming the file, line and field
        print(f"error: {exc}", file=sys.stderr)
        return 2
    found = stale(figures, write=not args.check)
    if args.check and found:
        names = ", ".join(str(p.relative_to(ROOT)) for p in found)
        print(f"{names}: not drawn from {FIGURES.relative_to(ROOT)}; run"
              " `python -m benchmarks.render`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
