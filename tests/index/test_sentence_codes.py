"""Sentence codes (report key << SENTENCE_BITS | sentence index) never collide."""

from __future__ import annotations

import numpy as np
import pytest

from clinsearch.errors import ClinsearchError
from clinsearch.index.component import SENTENCE_BITS, sentence_codes, sentence_parts


def test_codes_round_trip() -> None:
    keys, indexes = np.array([0, 7, 7]), np.array([3, 0, (1 << SENTENCE_BITS) - 1])
    found = sentence_parts(sentence_codes(keys, indexes))
    assert found[0].tolist() == keys.tolist() and found[1].tolist() == indexes.tolist()


def test_an_index_too_large_for_its_bits_is_refused() -> None:
    with pytest.raises(ClinsearchError, match="sentences"):
        sentence_codes([1], [1 << SENTENCE_BITS])  # else the code of report 2's sentence 0
