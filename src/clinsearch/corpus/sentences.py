"""Rule-based sentence splitting tuned for radiology reports, returning exact character spans.

Handles numbered items ("1. ... 2. ..."), de-identification tokens (XXXX), abbreviations
("Dr.", "approx.", "vs.", "a.m."), bulleted lines, missing final punctuation and line breaks
used as sentence breaks, while joining hard-wrapped lines that continue in lower case.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# tokens that end in "." without ending a sentence (lower case, without the final ".")
# fmt: off
ABBREVIATIONS = frozenset({
    "dr", "mr", "mrs", "ms", "prof", "st", "sr", "jr", "approx", "vs", "v", "e.g", "i.e", "cf",
    "fig", "ca", "incl", "resp", "a.m", "p.m", "u.s",
})
# fmt: on

_LINE = re.compile(r"[^\n]*(?:\n|$)")
# sentence-final punctuation, then spaces or (typed without a space) a capitalised word
_END_PUNCT = re.compile(r"[.!?]+[)\]\"']*(?:[ \t]+(?=\S)|(?=[A-Z][a-z]))")
_ITEM = re.compile(r"(?:(?<=\s)|^)(\d{1,2})[.)][ \t]+(?=\S)")
_ITEM_AT = re.compile(r"(\d{1,2})[.)][ \t]+\S")
_BULLET = re.compile(r"[ \t]*(?:[-*•·]|\d{1,2}[.)])[ \t]")
_CONTINUES = frozenset(".:;!?")


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int]]:
    """Spans ``(s, e)`` of the sentences in ``text[start:end]``, trimmed of whitespace."""
    end = len(text) if end is None else end
    items = _ItemCounter()
    for block_start, block_end in _blocks(text, start, end):
        cut = block_start
        for next_start in _cuts(text, block_start, block_end, items):
            yield from _trimmed(text, cut, next_start)
            cut = next_start
        yield from _trimmed(text, cut, block_end)


class _ItemCounter:
    """Remembers the last numbered item ("2.") seen, so "3." may start a sentence unpunctuated."""

    def __init__(self) -> None:
        self.last = 0

    def starts(self, text: str, pos: int) -> None:
        """Note the item marker at ``pos`` (a sentence start), if there is one."""
        match = _ITEM_AT.match(text, pos)
        if match is not None:
            self.last = int(match.group(1))

    def is_next(self, text: str, pos: int) -> bool:
        """Whether an item marker numbered one more than the last starts at ``pos``."""
        match = _ITEM_AT.match(text, pos)
        return match is not None and int(match.group(1)) == self.last + 1


def _blocks(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Runs of lines that form running text: a line break ends a block unless the next line
    continues in lower case after a line without closing punctuation (hard wrapping)."""
    block_start = None
    previous_tail = ""
    pos = start
    while pos < end:
        match = _LINE.match(text, pos, end)
        assert match is not None  # _LINE matches the empty string at worst
        line_end = match.end()
        stripped = text[pos:line_end].strip()
        if not stripped:
            if block_start is not None:
                yield block_start, pos
                block_start = None
        elif block_start is None:
            block_start = pos
        elif not _continues(previous_tail, text, pos, line_end):
            yield block_start, pos
            block_start = pos
        if stripped:
            previous_tail = stripped[-1]
        pos = line_end if line_end > pos else end
    if block_start is not None:
        yield block_start, end


def _continues(previous_tail: str, text: str, pos: int, line_end: int) -> bool:
    """Whether the line at ``pos`` continues the previous line's sentence (hard wrapping)."""
    if previous_tail in _CONTINUES or _BULLET.match(text, pos, line_end):
        return False
    first = text[pos:line_end].lstrip()[:1]
    return first.islower()


def _cuts(text: str, start: int, end: int, items: _ItemCounter) -> Iterator[int]:
    """Positions inside one block where a new sentence starts."""
    sentence_start = _skip_space(text, start, end)
    items.starts(text, sentence_start)
    candidates = sorted(
        [(m.end(), True) for m in _END_PUNCT.finditer(text, start, end)]
        + [(m.start(), False) for m in _ITEM.finditer(text, start, end)]
    )
    for pos, after_punct in candidates:
        if pos <= sentence_start:
            continue
        if after_punct:
            if not _ends_sentence(text, sentence_start, pos):
                continue
        elif not items.is_next(text, pos):
            continue
        items.starts(text, pos)
        sentence_start = pos
        yield pos


def _ends_sentence(text: str, sentence_start: int, pos: int) -> bool:
    """Whether the punctuation just before ``pos`` (the next non-space) ends a sentence."""
    following = text[pos]
    if following.islower():
        return False
    body = text[sentence_start:pos].rstrip()
    stem = body.rstrip(".!?)]\"'")
    token = stem.rsplit(None, 1)[-1] if stem.strip() else ""
    glued = not text[pos - 1].isspace()
    if glued and not (len(token) > 1 and token.isalpha()):
        return False  # "U.S.Army", "1.5.Then": only words glue to the next sentence
    if token.isdigit() and len(token) <= 2 and stem.strip() == token:
        return False  # the "1." of a numbered item
    if token.lstrip("([\"'").lower() in ABBREVIATIONS and body.endswith("."):
        return False
    if following.isdigit():
        return _ITEM_AT.match(text, pos) is not None
    return True


def _skip_space(text: str, pos: int, end: int) -> int:
    """The first non-space position at or after ``pos`` (``end`` if none)."""
    while pos < end and text[pos].isspace():
        pos += 1
    return pos


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` trimmed of whitespace, if what remains holds a letter or digit."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if any(c.isalnum() for c in text[start:end]):
        yield start, end
