"""Any phrase as a finding: read a phrase query's polarity, and a phrase's mentions in sentences,
with the same ConText rules as lexicon findings (the phrase is the ConText target).

"no free air" -> the phrase "free air", absent; in "Free air is not seen." the phrase is absent,
in "Possible free air." uncertain. A phrase the lexicon does not know is thus searched with
negation, which plain text search ignores.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clinsearch.annotate.finding import TARGET_TYPE, Finding, Polarity
from clinsearch.errors import LimitError
from clinsearch.limits import MAX_PHRASE_WORDS

if TYPE_CHECKING:  # spaCy is imported only when a phrase is read
    from clinsearch.annotate.annotator import Annotator

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
# words that never start or end a phrase once its cues are removed ("free air [is] not seen")
_EDGE_WORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "of", "for", "with", "and", "or",
    "to", "in", "on", "at", "as", "by", "this", "that", "these", "those", "there", "any",
})
Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class PhraseQuery:
    """A query read as a phrase: the words to find and the polarity and context it asks for."""

    text: str  # as asked, e.g. "no free air"
    phrase: str  # the words to find, cues removed, e.g. "free air"
    polarity: Polarity
    context: tuple[str, ...] = ()  # context flags the query itself states ("history of ...")


def phrase_words(text: str) -> int:
    """How many words ``text`` holds, as a phrase query counts them."""
    return sum(1 for _ in _WORD.finditer(text))


def check_phrase_words(text: str) -> None:
    """Refuse a phrase of more than MAX_PHRASE_WORDS words: matching a phrase builds its
    variants and their prefixes, work that grows with the cube of its length."""
    words = phrase_words(text)
    if words > MAX_PHRASE_WORDS:
        raise LimitError(f"a phrase searched as text holds at most {MAX_PHRASE_WORDS} words"
                         f" (this one {words}); search for fewer words")


def read_phrase_query(annotator: Annotator, text: str) -> PhraseQuery:
    """``text`` as a phrase query: its longest run of words outside ConText cues is the phrase,
    and the phrase's polarity and context there are what the query asks for; a text of cue
    words alone is sought as written, present. A text over MAX_PHRASE_WORDS words is a
    ``LimitError``."""
    check_phrase_words(text)
    cues = annotator.cues(text)
    runs: list[list[re.Match[str]]] = [[]]
    for word in _WORD.finditer(text):
        if any(s < word.end() and word.start() < e for s, e, _ in cues):
            runs.append([])
        else:
            runs[-1].append(word)
    trimmed = [_trim(run) for run in runs]
    best = max(trimmed, key=lambda run: sum(len(w.group()) for w in run))
    if not best:  # every word is a cue ("clear", "normal"): the words themselves are sought
        return PhraseQuery(text, " ".join(w.group() for w in _WORD.finditer(text)), "present")
    phrase = text[best[0].start() : best[-1].end()]
    found = [f for f in annotator.annotate(text, [phrase]) if f.type == TARGET_TYPE]
    if not found:
        return PhraseQuery(text, phrase, "present")
    return PhraseQuery(text, phrase, found[0].polarity, found[0].context)


def phrase_mentions(annotator: Annotator, texts: Sequence[str],
                    spans: Sequence[Sequence[Span]]) -> list[list[Finding]]:
    """The phrase's mentions in each text, read by ConText: ``spans[i]`` are the character
    spans where the phrase occurs in ``texts[i]`` (as the caller's text search found it)."""
    targets = [[text[s:e] for s, e in found] for text, found in zip(texts, spans, strict=True)]
    out = []
    for found, findings in zip(spans, annotator.annotate_many(texts, targets), strict=True):
        out.append([f for f in findings if f.type == TARGET_TYPE
                    and any(s < f.end and f.start < e for s, e in found)])
    return out


def substring_spans(text: str, phrase: str) -> list[Span]:
    """Where ``phrase`` occurs in ``text`` (case-insensitive), each widened to whole words."""
    lower, needle = text.lower(), phrase.lower()
    out: list[Span] = []
    start = lower.find(needle) if needle else -1
    while start >= 0:
        s, e = start, start + len(needle)
        while s > 0 and text[s - 1].isalnum():
            s -= 1
        while e < len(text) and text[e].isalnum():
            e += 1
        out.append((s, e))
        start = lower.find(needle, start + len(needle))
    return out


def _trim(run: list[re.Match[str]]) -> list[re.Match[str]]:
    """``run`` without function words at its edges."""
    lo, hi = 0, len(run)
    while lo < hi and run[lo].group().lower() in _EDGE_WORDS:
        lo += 1
    while hi > lo and run[hi - 1].group().lower() in _EDGE_WORDS:
        hi -= 1
    return run[lo:hi]
