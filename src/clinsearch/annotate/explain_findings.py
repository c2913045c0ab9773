"""Render a sentence's findings for people: spans marked in the text, then one line per finding."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from clinsearch.annotate.finding import Finding, Trigger

POLARITY_STYLE = {"present": "bold green", "absent": "bold red", "uncertain": "bold yellow"}
MODIFIER_STYLE = "underline cyan"
TRIGGER_STYLE = "italic magenta"


def marked_text(text: str, findings: list[Finding]) -> Text:
    """The text with findings coloured by polarity, their modifiers underlined and the cues
    that triggered a non-present or in-context reading in italics."""
    out = Text(text)
    for f in findings:
        for m in f.modifiers:
            out.stylize(MODIFIER_STYLE, m.start, m.end)
        if f.trigger is not None and f.trigger.start is not None and f.trigger.end is not None:
            out.stylize(TRIGGER_STYLE, f.trigger.start, f.trigger.end)
        out.stylize(POLARITY_STYLE[f.polarity], f.start, f.end)
    return out


def trigger_words(trigger: Trigger, offsets: bool = True) -> str:
    """A trigger for people: ``"rule - out" [0:10] (INDICATION, rule "rule out")`` (without
    the cue's offsets unless ``offsets``), or ``section "indication"`` for a section's
    meaning."""
    if trigger.start is None:
        return f'{trigger.rule} "{trigger.text}"'
    at = f" [{trigger.start}:{trigger.end}]" if offsets else ""
    return f'"{trigger.text}"{at} ({trigger.category}, rule "{trigger.rule}")'


def finding_line(f: Finding) -> Text:
    """``[start:end] "text" pattern`` plus context flags and the modifiers' words."""
    line = Text(f"[{f.start}:{f.end}] ")
    line.append(f'"{f.text}"', style=POLARITY_STYLE[f.polarity])
    line.append(f"  {f.pattern}")
    if f.context:
        line.append(f"  context: {', '.join(f.context)}", style="magenta")
    if f.trigger is not None:
        line.append(f"  trigger: {trigger_words(f.trigger)}", style=TRIGGER_STYLE)
    if f.modifiers:
        words = ", ".join(f'{m.category}={m.value} ("{m.text}")' for m in f.modifiers)
        line.append(f"  modifiers: {words}", style="cyan")
    return line


def explain(text: str, findings: list[Finding]) -> Group:
    """The marked text, a colour legend, and one line per finding (or a note when none)."""
    if not findings:
        return Group(marked_text(text, findings), Text("no findings", style="dim"))
    legend = Text("present ", style=POLARITY_STYLE["present"])
    legend.append("absent ", style=POLARITY_STYLE["absent"])
    legend.append("uncertain ", style=POLARITY_STYLE["uncertain"])
    legend.append("modifier ", style=MODIFIER_STYLE)
    legend.append("trigger", style=TRIGGER_STYLE)
    return Group(marked_text(text, findings), legend, *(finding_line(f) for f in findings))
