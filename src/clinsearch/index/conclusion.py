"""Whole-report reading after the sentences: differentials, and what the impression concludes.

A sentence at a time cannot see what the next sentence or the other section says. Applied to
the columns of whole reports' findings before the table is written, by the rule file's
``conclusion`` (``annotate.context_rules.Conclusion``), in this order:

1. **A differential in the next sentence**: "Opacity most consistent with pneumonia. Aspiration
   or edema are also possible." A ``differential`` phrase in a sentence that names other
   findings hedges the present findings of the ``differential_types`` in the sentence before
   it that it does not name itself (rule ``differential in the next sentence``).
2. **The impression hedges**: the findings section states a finding present and the
   impression names it only as uncertain (a mask alone is no hedge of the radiologist's): the
   finding reads uncertain, the impression's sentence its trigger (``impression hedges``).
3. **A contradiction**: one section states a finding present and the other denies it (by a cue
   of the ``denied_by`` categories, not a site's normal state; not just a degree; a denied
   side is another finding): every mention of it in both reads uncertain,
   each with the other section's sentence as its trigger (``findings and impression disagree``),
   so that neither the finding's cohort nor its absence's counts what the report leaves in
   doubt. A bare finding (no side, size or site) of the ``acute`` concepts that the impression
   does not name beside one of its ``normal`` phrases ("There is pneumothorax." then "No acute
   cardiopulmonary disease.": a dictation that may have dropped "no") reads uncertain too
   (``impression says nothing acute``); a described one was observed and stays.

Every changed finding's pattern says its new polarity and its trigger names the rule and the
other sentence (category ``CONCLUSION`` or ``DIFFERENTIAL``), so the findings table,
the report view, the API and the page show why.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from clinsearch.annotate.finding import MASKED

if TYPE_CHECKING:
    from clinsearch.annotate.context_rules import Conclusion

CONCLUSION_CATEGORY, DIFFERENTIAL_CATEGORY = "CONCLUSION", "DIFFERENTIAL"
HEDGE_RULE = "impression hedges"
CONTRADICTION_RULE = "findings and impression disagree"
NOTHING_ACUTE_RULE = "impression says nothing acute"
DIFFERENTIAL_RULE = "differential in the next sentence"
_DEGREE = "severity"  # an absence with this modifier denies a degree, not the finding
_SIDE = "laterality"
Words = tuple[str, int, int]  # words of the report and their report offsets


def apply_conclusion(columns: dict[str, Any], sentences: pa.Table, rule: Conclusion) -> None:
    """Change, in place, the polarity (and pattern and trigger) of the findings that the
    report-level reading of ``rule`` changes; ``sentences`` are the rows' sentences
    (``report_key``, ``index``, ``section``, ``start``, ``text``) of whole reports."""
    keys, indexes = _pylist(columns["report_key"]), _pylist(columns["sentence_index"])
    texts = _sentence_texts(sentences)
    if rule.differential:
        _differentials(columns, keys, indexes, texts, rule)
    sections = [(s or "").lower() for s in _pylist(columns["section"])]
    concepts, polarity, context = columns["concept"], columns["polarity"], columns["context"]
    concluded: dict[tuple[int, str], list[int]] = {}
    governed: dict[tuple[int, str], list[int]] = {}
    for i, section in enumerate(sections):
        if context[i] or columns["type"][i] == "anatomy":  # an anatomy word is where, no finding
            continue
        if section == rule.section:
            concluded.setdefault((keys[i], concepts[i]), []).append(i)
        elif section in rule.governs:
            governed.setdefault((keys[i], concepts[i]), []).append(i)
    changes: list[tuple[int, str, str, Words]] = []
    for key, rows in governed.items():
        said = concluded.get(key, [])
        hedges = [j for j in said if polarity[j] == "uncertain"
                  and (columns["trigger"][j] or {}).get("category") != MASKED]
        present = [i for i in rows if polarity[i] == "present"]
        if present and said and not any(polarity[j] == "present" for j in said) and hedges:
            changes += [(i, "uncertain", HEDGE_RULE, _sentence(columns, hedges[0], keys,
                                                                   indexes, texts))
                        for i in present]
            continue
        for ours, theirs in ((rows, said), (said, rows)):
            for i in ours:
                if polarity[i] != "present":
                    continue
                denial = _denial(columns, i, theirs, rule.denied_by)
                if denial is not None:
                    changes.append((i, "uncertain", CONTRADICTION_RULE,
                                    _sentence(columns, denial, keys, indexes, texts)))
                    changes.append((denial, "uncertain", CONTRADICTION_RULE,
                                    _sentence(columns, i, keys, indexes, texts)))
    normal = _normal_statements(sentences, rule)
    for (report, concept), rows in governed.items():
        if concept not in rule.acute or report not in normal or (report, concept) in concluded:
            continue
        changes += [(i, "uncertain", NOTHING_ACUTE_RULE, normal[report]) for i in rows
                    if polarity[i] == "present" and not columns["modifiers"][i]]
    for row, new, name, words in changes:
        if polarity[row] != new or columns["trigger"][row] is None:
            _change(columns, row, new, name, CONCLUSION_CATEGORY, words)


def _denial(columns: dict[str, Any], row: int, others: Sequence[int],
            denied_by: Sequence[str]) -> int | None:
    """The first of ``others`` that denies the finding of ``row`` (by a cue of a ``denied_by``
    category, when any is named; not a degree of it, not another side of it), when none of
    them states it present; else None."""
    polarity = columns["polarity"]
    if any(polarity[j] == "present" for j in others):
        return None
    sides = _values(columns, row, _SIDE)
    for j in others:
        if polarity[j] != "absent" or _values(columns, j, _DEGREE) or (
                denied_by and (columns["trigger"][j] or {}).get("category") not in denied_by):
            continue
        denied = _values(columns, j, _SIDE)
        if not sides or not denied or sides & denied:
            return j
    return None


def _values(columns: dict[str, Any], row: int, category: str) -> set[str]:
    """The values of ``row``'s modifiers of ``category``."""
    return {m["value"] for m in columns["modifiers"][row] if m["category"] == category}


def _differentials(columns: dict[str, Any], keys: Sequence[int], indexes: Sequence[int],
                   texts: dict[tuple[int, int], tuple[int, str]], rule: Conclusion) -> None:
    """Hedge the findings a ``differential`` sentence offers alternatives to (see the module
    docstring, 1); ``keys`` and ``indexes`` are the rows' report keys and sentence indexes."""
    sections = _pylist(columns["section"])
    by_sentence: dict[tuple[int, int], list[int]] = {}
    for i, key in enumerate(zip(keys, indexes, strict=True)):
        by_sentence.setdefault(key, []).append(i)
    phrases = re.compile(r"\b(?:" + "|".join(re.escape(p).replace(r"\ ", r"\s+")
                                             for p in rule.differential) + r")\b", re.I)
    for (report, index), rows in by_sentence.items():
        named = [i for i in rows if columns["type"][i] != "anatomy" and not columns["context"][i]
                 and columns["polarity"][i] != "absent"]
        before = by_sentence.get((report, index - 1), [])
        if not named or not before or (report, index) not in texts:
            continue
        start, text = texts[(report, index)]
        found = phrases.search(text)
        if found is None:
            continue
        words = (found.group(0), start + found.start(), start + found.end())
        alternatives = {columns["concept"][i] for i in named}
        for i in before:
            if (columns["polarity"][i] == "present" and not columns["context"][i]
                    and columns["type"][i] in rule.differential_types
                    and columns["concept"][i] not in alternatives
                    and sections[i] == sections[rows[0]]):
                _change(columns, i, "uncertain", DIFFERENTIAL_RULE, DIFFERENTIAL_CATEGORY, words)


def _sentence(columns: dict[str, Any], row: int, keys: Sequence[int], indexes: Sequence[int],
              texts: dict[tuple[int, int], tuple[int, str]]) -> Words:
    """The words that state ``row``'s reading: its whole sentence (the finding's words when
    the sentence is unknown)."""
    key = (keys[row], indexes[row])
    if key not in texts:
        return columns["text"][row], columns["start"][row], columns["end"][row]
    base, text = texts[key]
    lead = len(text) - len(text.lstrip())
    words = text.strip()
    return words, base + lead, base + lead + len(words)


def _pylist(column: Any) -> list[Any]:
    """A column's values as a list (an Arrow array's or a list's)."""
    return column.to_pylist() if isinstance(column, pa.Array | pa.ChunkedArray) else list(column)


def _sentence_texts(sentences: pa.Table) -> dict[tuple[int, int], tuple[int, str]]:
    """(report key, sentence index) -> the sentence's report offset and text."""
    columns = (sentences.column(c).to_pylist() for c in ("report_key", "index", "start", "text"))
    return {(key, index): (start, text) for key, index, start, text in zip(*columns, strict=True)}


def _normal_statements(sentences: pa.Table, rule: Conclusion) -> dict[int, Words]:
    """Report key -> the first ``normal`` phrase its conclusion section says (words, report
    offsets)."""
    out: dict[int, Words] = {}
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


def _change(columns: dict[str, Any], row: int, polarity: str, rule: str, category: str,
            words: Words) -> None:
    """Give finding ``row`` ``polarity`` and a trigger of ``rule`` over ``words``."""
    columns["polarity"][row] = polarity
    kind, _, rest = columns["pattern"][row].split("|", 2)
    columns["pattern"][row] = f"{kind}|{polarity}|{rest}"
    text, start, end = words
    columns["trigger"][row] = {"rule": rule, "category": category, "text": text,
                               "start": start, "end": end}
