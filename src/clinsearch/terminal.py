"""Text from reports and ids made safe to print: control characters shown, never obeyed.

A report or id holding an escape sequence (``\\x1b]...``), a carriage return or a
bidirectional override could rewrite the terminal or hide text; printed through ``printable``
each such character appears as a visible escape such as ``\\x1b`` or ``\\u202e``.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, C1 controls, and the bidirectional controls.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_LINE = re.compile("[\t\n]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with control characters escaped (also tab and newline when ``one_line``)."""
    text = _CONTROL.sub(_escape, text)
    return _LINE.sub(_escape, text) if one_line else text


def printable_runs(text: str, marks: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """``text`` cut into (printable piece, marked) runs, ``marks`` being (start, end) spans of
    the original text: escaping changes lengths, so highlights are applied per run."""
    marked = bytearray(len(text))
    for start, end in marks:
        marked[max(0, start) : max(0, end)] = b"\x01" * (max(0, end) - max(0, start))
    del marked[len(text) :]
    runs: list[tuple[str, bool]] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or marked[i] != marked[start]:
            runs.append((printable(text[start:i]), bool(marked[start])))
            start = i
    return runs
