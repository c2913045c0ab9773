"""The impression concludes: a report-level reading of the findings the findings section states.

A coder codes what the radiologist concludes. When the findings section states a finding
present and the impression (the rule file's ``conclusion``) names it only as uncertain, the
finding reads uncertain. An absence overrides only a bare finding, one stated without any
side, size or site (a dictation that dropped "no": "There is pneumothorax."): when the
impression denies it, or says nothing is acutely wrong ("No acute cardiopulmonary disease.")
without naming an acute finding, it reads absent; a described finding ("small residual left
apical pneumothorax") was observed, and stays. The changed
finding's trigger is the impression's words (rule ``conclusion``, category ``CONCLUSION``).
Applied to the columns of whole reports' findings, before the table is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from clinsearch.annotate.finding import MASKED

if TYPE_CHECKING:
    from clinsearch.annotate.context_rules import Conclusion

CONCLUSION_RULE, CONCLUSION_CATEGORY = "conclusion", "CONCLUSION"
_DEGREE = "severity"  # an absence with this modifier denies a degree, not the finding


def apply_conclusion(columns: dict[str, Any], sentences: pa.Table, rule: Conclusion) -> None:
    """Change, in place, the polarity (and pattern and trigger) of the governed sections'
    present findings that ``rule``'s conclusion section contradicts; ``sentences`` are the
    rows' sentences (``report_key``, ``section``, ``start``, ``text``) of whole reports."""
    keys = columns["report_key"].to_pylist()
    sections = [(s or "").lower() for s in columns["section"].to_pylist()]
    concepts, polarity = columns["concept"], columns["polarity"]
    readings: dict[tuple[int, str], list[int]] = {}
    for i, section in enumerate(sections):
        if section == rule.section and not columns["context"][i]:
            readings.setdefault((keys[i], concepts[i]), []).append(i)
    normal = _normal_statements(sentences, rule)
    for i, section in enumerate(sections):
        if section not in rule.governs or polarity[i] != "present" or columns["context"][i]:
            continue
        bare = not columns["modifiers"][i]  # described (side, size, site...): observed
        concluded = readings.get((keys[i], concepts[i]))
        if concluded is not None:
            chosen = _reading(concluded, columns)
            if chosen is not None and (bare or polarity[chosen] == "uncertain"):
                words = (columns["text"][chosen], columns["start"][chosen], columns["end"][chosen])
                _conclude(columns, i, polarity[chosen], words)
        elif bare and concepts[i] in rule.acute and keys[i] in normal:
            _conclude(columns, i, "absent", normal[keys[i]])


def _reading(rows: Sequence[int], columns: dict[str, Any]) -> int | None:
    """The conclusion's reading of a concept, as the row that states it: None when it states
    it present anywhere; else an uncertain mention, else an absence of the finding itself. A
    mention uncertain only for a de-identification mask before it is no hedge of the
    radiologist's: what the findings section states stands."""
    polarity = columns["polarity"]
    if any(polarity[j] == "present" for j in rows):
        return None
    hedged = [j for j in rows if polarity[j] == "uncertain"
              and (columns["trigger"][j] or {}).get("category") != MASKED]
    denied = [j for j in rows if polarity[j] == "absent" and not any(
        m["category"] == _DEGREE for m in columns["modifiers"][j])]
    return (hedged or denied or [None])[0]


def _normal_statements(sentences: pa.Table, rule: Conclusion) -> dict[int, tuple[str, int, int]]:
    """Report key -> the first ``normal`` phrase its conclusion section says (words, report
    offsets)."""
    out: dict[int, tuple[str, int, int]] = {}
    if not rule.normal or not rule.acute:
        return out
    rows = zip(*(sentences.column(c).to_pylist() for c in ("report_key", "section", "start",
                                                           "text")), strict=True)
    for key, section, start, text in rows:
        if key in out or (section or "").lower() != rule.section:
            continue
        lowered = text.lower()
        for phrase in rule.normal:
            at = lowered.find(phrase)
            if at >= 0:
                out[key] = (text[at:at + len(phrase)], start + at, start + at + len(phrase))
                break
    return out


def _conclude(columns: dict[str, Any], row: int, polarity: str,
              words: tuple[str, int, int]) -> None:
    """Give finding ``row`` the conclusion's ``polarity``, the impression's words its trigger."""
    columns["polarity"][row] = polarity
    kind, _, rest = columns["pattern"][row].split("|", 2)
    columns["pattern"][row] = f"{kind}|{polarity}|{rest}"
    text, start, end = words
    columns["trigger"][row] = {"rule": CONCLUSION_RULE, "category": CONCLUSION_CATEGORY,
                               "text": text, "start": start, "end": end}
