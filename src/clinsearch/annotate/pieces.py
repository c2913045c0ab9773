"""Cutting long texts into pieces the annotator handles in bounded time.

ConText and modifier attachment compare every cue with every other cue and finding of a text,
so their time grows with the square of its length (benchmarks/README.md), and spaCy refuses
texts over a million characters. A text longer than ``PIECE_CHARS`` is
annotated in pieces cut at sentence ends where it has them (ConText scopes end there anyway,
so findings are the same); a sentence longer than a piece is cut at a clause break (comma,
semicolon), else at a space, and counted as a long sentence, since a cue's scope stops at
the cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PIECE_CHARS = 2_000
_CUTS = (
    re.compile(r"\n|[.!?]\s"),  # sentence ends: findings unchanged by the cut
    re.compile(r"[;,:]\s"),  # clause breaks
    re.compile(r"\s"),  # any space
)


@dataclass(frozen=True, slots=True)
class Pieces:
    """Where a text is cut: piece ``i`` is ``text[starts[i]:starts[i + 1]]``."""

    starts: tuple[int, ...]
    long_sentence: bool  # a cut fell inside a sentence


def cut(text: str, limit: int = PIECE_CHARS) -> Pieces:
    """Cut ``text`` into pieces of at most ``limit`` characters (one piece when short)."""
    starts = [0]
    long_sentence = False
    while len(text) - starts[-1] > limit:
        start = starts[-1]
        window = text[start : start + limit]
        for rank, pattern in enumerate(_CUTS):
            ends = [m.end() for m in pattern.finditer(window, limit // 4)]
            if ends:
                starts.append(start + ends[-1])
                long_sentence |= rank > 0
                break
        else:  # no space at all: cut anywhere
            starts.append(start + limit)
            long_sentence = True
    return Pieces(tuple(starts), long_sentence)
