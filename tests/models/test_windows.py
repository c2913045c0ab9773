"""Long texts split into overlapping windows at word boundaries, covering every token."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from clinsearch.models.windows import split_windows


@pytest.fixture(scope="module")
def tokenizer(tiny_encoder_dir: Path):
    return AutoTokenizer.from_pretrained(str(tiny_encoder_dir), local_files_only=True)


def _tokens(tokenizer, text: str) -> list[str]:
    return tokenizer.tokenize(text)


def test_short_text_is_one_window(tokenizer) -> None:
    text = "no pleural effusion ."
    assert [(w.owner, w.start, w.end) for w in split_windows(tokenizer, [text], 10, 2)] == [
        (0, 0, len(text))
    ]


def test_long_text_windows_cover_every_token_with_overlap(tokenizer) -> None:
    words = [f"w{i}" for i in range(23)]  # unknown words: one [UNK] token each
    text = " ".join(words)
    windows = split_windows(tokenizer, ["short", text], max_tokens=8, overlap=3)
    mine = [text[w.start : w.end] for w in windows if w.owner == 1]
    assert [len(_tokens(tokenizer, t)) for t in mine] == [8, 8, 8, 8]
    assert mine[0].split() == words[:8]
    assert mine[1].split() == words[5:13]  # 3 words shared with the first window
    assert mine[-1].split()[-1] == words[-1]
    covered = {word for t in mine for word in t.split()}
    assert covered == set(words)


def test_windows_never_cut_inside_a_word(tokenizer) -> None:
    # "pneumothorax." is two tokens of one pre-token word each; "lungs.." keeps punctuation apart
    text = " ".join(["the lungs are clear ."] * 12)
    for window in split_windows(tokenizer, [text], max_tokens=7, overlap=2):
        piece = text[window.start : window.end]
        assert piece == piece.strip()
        assert len(_tokens(tokenizer, piece)) <= 7
        assert window.start == 0 or text[window.start - 1] == " "
