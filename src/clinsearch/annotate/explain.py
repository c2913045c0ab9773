"""Render a sentence's findings for people: spans marked in the text, and a table of findings."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from clinsearch.annotate.finding import Finding

POLARITY_STYLE = {"present": "bold green", "absent": "bold red", "uncertain": "bold yellow"}
MODIFIER_STYLE = "underline cyan"


def marked_text(text: str, findings: list[Finding]) -> Text:
    """The text with findings coloured by polarity and their modifiers underlined."""
    out = Text(text)
    for f in findings:
        for m in f.modifiers:
            out.stylize(MODIFIER_STYLE, m.start, m.end)
        out.stylize(POLARITY_STYLE[f.polarity], f.start, f.end)
    return out


def findings_table(findings: list[Finding]) -> Table:
    """One row per finding: span, concept, polarity, context, modifiers and pattern."""
    table = Table(show_lines=False)
    for column in ("span", "text", "concept", "polarity", "context", "modifiers", "pattern"):
        table.add_column(column, overflow="fold")
    for f in findings:
        table.add_row(
            f"{f.start}-{f.end}",
            f.text,
            f.concept,
            Text(f.polarity, style=POLARITY_STYLE[f.polarity]),
            ", ".join(f.context),
            ", ".join(f"{m.category}={m.value}" for m in f.modifiers),
            f.pattern,
        )
    return table


def explain(text: str, findings: list[Finding]) -> Group:
    """The marked text followed by the findings table (or a note when there are none)."""
    if not findings:
        return Group(marked_text(text, findings), Text("no findings", style="dim"))
    legend = Text("present ", style=POLARITY_STYLE["present"])
    legend.append("absent ", style=POLARITY_STYLE["absent"])
    legend.append("uncertain ", style=POLARITY_STYLE["uncertain"])
    legend.append("modifier", style=MODIFIER_STYLE)
    return Group(marked_text(text, findings), legend, findings_table(findings))
