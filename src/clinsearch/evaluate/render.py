"""Render a Comparison as a terminal table (rich), Markdown, JSON, or per-query rows.

Cells hold the group mean; ``*`` marks a run whose difference from the baseline (first run)
is significant (p < alpha) under the chosen paired test; the last column is the ratio of the
first measure to the baseline's.
"""

from __future__ import annotations

import json
import math

from rich import box
from rich.console import Console
from rich.table import Table

from clinsearch.evaluate.compare import ALL, Comparison


def _cell(comp: Comparison, group: str, run: str, measure: str, test: str, alpha: float) -> str:
    """``0.412*``: the mean, starred when significantly different from the baseline."""
    mean = comp.mean(run, measure, group)
    if math.isnan(mean):
        return "-"
    paired = comp.tests.get((group, run, measure))
    star = "*" if paired is not None and paired.p(test) < alpha else ""
    return f"{mean:.3f}{star}"


def _ratio(comp: Comparison, group: str, run: str) -> str:
    """The first measure of ``run`` over the baseline's, e.g. ``×1.12``."""
    first = comp.measures[0]
    base, value = comp.mean(comp.baseline, first, group), comp.mean(run, first, group)
    if math.isnan(value) or math.isnan(base) or base == 0:
        return "-"
    return f"×{value / base:.2f}"


def rows(comp: Comparison, test: str, alpha: float) -> tuple[list[str], list[list[str]]]:
    """Header and body rows: one row per (group, run)."""
    header = ["group", "queries", "run", *comp.measures, f"{comp.measures[0]} ratio"]
    body = [
        [
            group,
            str(len(qids)),
            run,
            *(_cell(comp, group, run, m, test, alpha) for m in comp.measures),
            _ratio(comp, group, run),
        ]
        for group, qids in comp.groups.items()
        for run in comp.runs
    ]
    return header, body


def legend(comp: Comparison, test: str, alpha: float) -> str:
    """The one-line explanation printed under every table."""
    name = "paired randomization test" if test == "randomization" else "paired t-test"
    return (
        f"Marked *: differs from baseline '{comp.baseline}' at p < {alpha} ({name}); "
        f"ratio = {comp.measures[0]} / baseline's."
    )


def table_console() -> Console:
    """A stdout console; when output is redirected, wide enough to keep tables whole."""
    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, 200))


def rich_from_rows(
    header: list[str], body: list[list[str]], caption: str = "", text_columns: int = 3
) -> Table:
    """A rich table, numbers right-aligned after ``text_columns``; a new section starts where
    the first column changes, shown once."""
    table = Table(caption=caption or None, caption_justify="left", box=box.SIMPLE_HEAD)
    for i, name in enumerate(header):
        table.add_column(name, justify="right" if i >= text_columns else "left", no_wrap=True)
    last = None
    for row in body:
        if last is not None and row[0] != last:
            table.add_section()
        table.add_row(*(row if row[0] != last else ["", *row[1:]]))
        last = row[0]
    return table


def markdown_from_rows(
    header: list[str], body: list[list[str]], caption: str = "", text_columns: int = 3
) -> str:
    """A GitHub Markdown table, numbers right-aligned after ``text_columns``, caption below."""
    lines = [
        "| " + " | ".join(header) + " |",
        "| "
        + " | ".join("---:" if i >= text_columns else "---" for i in range(len(header)))
        + " |",
        *("| " + " | ".join(r) + " |" for r in body),
    ]
    if caption:
        lines += ["", caption]
    return "\n".join(lines) + "\n"


def rich_table(comp: Comparison, test: str = "randomization", alpha: float = 0.05) -> Table:
    """The comparison for the terminal, one section per query group."""
    return rich_from_rows(*rows(comp, test, alpha), legend(comp, test, alpha))


def markdown(comp: Comparison, test: str = "randomization", alpha: float = 0.05) -> str:
    """The comparison as a Markdown table with its legend."""
    return markdown_from_rows(*rows(comp, test, alpha), legend(comp, test, alpha))


def to_json(comp: Comparison) -> str:
    """The comparison as indented JSON (means, tests, per-query values, warnings)."""
    return json.dumps(comp.to_dict(), indent=2)


PER_QUERY_TEXT_COLUMNS = 2


def per_query_rows(comp: Comparison) -> tuple[list[str], list[list[str]]]:
    """Header and one row per (query, run) with every measure's value (2 text columns)."""
    header = ["qid", "run", *comp.measures]
    body = [
        [qid, run, *(f"{comp.values[run][m][qid]:.3f}" for m in comp.measures)]
        for qid in comp.groups[ALL]
        for run in comp.runs
    ]
    return header, body
