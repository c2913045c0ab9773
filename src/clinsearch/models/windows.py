"""Split texts longer than a model's window into overlapping token windows, cut at word boundaries.

Windows are character spans of the original text; each starts and ends on a pre-tokenizer word
boundary, so re-tokenising a window yields exactly the tokens it was cut from (never more than
``max_tokens``). Nothing is truncated: every token of a text falls in at least one window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class Window:
    """A span ``text[start:end]`` of the ``owner``-th input text."""

    owner: int
    start: int
    end: int


def split_windows(
    tokenizer: Any, texts: Sequence[str], max_tokens: int, overlap: int
) -> list[Window]:
    """Windows covering each text in order; a text within ``max_tokens`` is one window.

    ``tokenizer`` is a fast Hugging Face tokenizer (offsets and word ids are needed);
    ``overlap`` tokens are shared by consecutive windows of a long text.
    """
    if max_tokens < 2 or not 0 <= overlap < max_tokens:
        raise ValueError(f"bad window: max_tokens={max_tokens}, overlap={overlap}")
    encoded = tokenizer(
        list(texts),
        add_special_tokens=False,
        return_offsets_mapping=True,
        truncation=False,
        verbose=False,
    )
    windows: list[Window] = []
    for owner, text in enumerate(texts):
        offsets = encoded["offset_mapping"][owner]
        if len(offsets) <= max_tokens:
            windows.append(Window(owner, 0, len(text)))
            continue
        words = encoded.word_ids(owner)
        for first, last in _token_spans(words, max_tokens, overlap):
            windows.append(Window(owner, offsets[first][0], offsets[last - 1][1]))
    return windows


def _token_spans(
    words: Sequence[int | None], max_tokens: int, overlap: int
) -> list[tuple[int, int]]:
    """Token ranges ``[first, last)`` of at most ``max_tokens``, cut where a new word starts."""

    def word_start(i: int) -> bool:
        return i == 0 or i == len(words) or words[i] is None or words[i] != words[i - 1]

    def back_to_word_start(i: int, floor: int) -> int:
        # The last word start in (floor, i]; i itself when a single word spans the whole range.
        j = i
        while j > floor and not word_start(j):
            j -= 1
        return j if j > floor else i

    spans: list[tuple[int, int]] = []
    first = 0
    while True:
        last = min(first + max_tokens, len(words))
        last = back_to_word_start(last, first)
        spans.append((first, last))
        if last == len(words):
            return spans
        first = back_to_word_start(max(last - overlap, first + 1), first)


@dataclass(frozen=True, slots=True)
class PassageVectors:
    """Window vectors of a list of passages: ``vectors[i]`` belongs to passage ``owner[i]``."""

    vectors: np.ndarray  # float32, shape (windows, dim), unit length
    owner: np.ndarray  # int64, shape (windows,), index into the encoded passages
