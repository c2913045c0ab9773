"""Text that is not Unicode characters: lone surrogates, which Python uses for bytes that were
not UTF-8 (command-line arguments, ``surrogateescape``) and which JSON's ``"\\ud800"`` escapes
produce. Such text cannot be written as UTF-8, so it is refused where it enters."""

from __future__ import annotations

import re
from typing import Any

from clinsearch.errors import InputError

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate."""
    return _SURROGATE.search(text) is not None


def check_text(text: str, what: str) -> str:
    """``text``, or an InputError naming ``what`` when it is not Unicode text."""
    if has_surrogate(text):
        raise InputError(f"{what} holds bytes that are not UTF-8 text (or a \\ud800-style"
                         " escape that is no character)")
    return text


def surrogate_in(value: Any) -> bool:
    """Whether any string in a decoded JSON value (keys included) holds a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if has_surrogate(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
