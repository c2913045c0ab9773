"""Which texts a set of ConText rules may match: a necessary condition, cheap to test.

A phrase rule (no ``pattern``) matches through spaCy's PhraseMatcher on the lower-case tokens of
its literal, so a text it matches holds a run of tokens whose lower-case forms, joined, spell
the literal's lower-case form without whitespace. A token-pattern rule needs, for each of its
tokens that must occur, a token of the text with one of the words that token accepts. Rules
whose matches this cannot bound (regular expressions, non-ASCII literals) are candidates for
every text. ConText's result for a text depends only on the rules that match it: so the
annotator (``medspacy_pipeline.LazyConText``) gives a text without candidates a ConText without
rules, and a short text a ConText of its candidates alone, and still gets ConText's exact
result for every text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")  # a word of a rule's literal or of a query

REQUIRED_OPS = (None, "+")  # token-pattern operators under which the token must occur
WORD_KEYS = ("LOWER", "ORTH", "TEXT")  # token attributes that name the word itself


def _squeezed(text: str) -> str:
    """``text`` without whitespace (spaCy puts whitespace in tokens of its own, if anywhere)."""
    return "".join(text.split())


@dataclass(frozen=True, slots=True)
class RuleCues:
    """What a text must hold for each of a list of ConText rules (by index) to match it."""

    phrases: dict[str, tuple[int, ...]]  # literal, lower case, whitespace removed -> its rules
    longest: int  # characters in the longest of ``phrases``
    patterns: tuple[tuple[int, tuple[frozenset[str], ...]], ...]  # (rule, words for each token)
    always: tuple[int, ...]  # rules that may match any text

    @classmethod
    def of(cls, specs: Iterable[dict[str, Any]]) -> RuleCues:
        """The cues of ConText rules given as ``ConTextRule`` keyword arguments."""
        phrases: dict[str, list[int]] = {}
        patterns: list[tuple[int, tuple[frozenset[str], ...]]] = []
        always: list[int] = []
        for index, spec in enumerate(specs):
            pattern = spec.get("pattern")
            if pattern is None:
                literal = str(spec["literal"])
                if not literal.isascii():  # per-token lower case may differ: not bounded
                    always.append(index)
                elif squeezed := _squeezed(literal.lower()):
                    phrases.setdefault(squeezed, []).append(index)
            elif isinstance(pattern, list):
                patterns.append((index, _required_words(pattern)))
            else:  # a regular expression
                always.append(index)
        return cls({k: tuple(v) for k, v in phrases.items()}, max(map(len, phrases), default=0),
                   tuple(patterns), tuple(always))

    def to_data(self) -> dict[str, Any]:
        """The cues as JSON-ready data (``from_data`` makes them back)."""
        return {"phrases": {k: list(v) for k, v in sorted(self.phrases.items())},
                "longest": self.longest,
                "patterns": [[index, [sorted(words) for words in pattern]]
                             for index, pattern in self.patterns],
                "always": list(self.always)}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> RuleCues:
        """The cues ``to_data`` gave; ValueError when ``data`` does not have its shape or its
        ``longest`` is not its phrases' (a smaller one would hide longer phrases' rules)."""
        phrases, longest, patterns, always = (
            data.get(k) for k in ("phrases", "longest", "patterns", "always"))
        if not (isinstance(phrases, dict) and all(map(_numbers, phrases.values()))
                and _numbers(always)
                and longest == max(map(len, phrases), default=0)  # it bounds the phrase search
                and isinstance(patterns, list)
                and all(isinstance(p, list) and len(p) == 2 and _numbers(p[:1])
                        and isinstance(p[1], list) and all(map(_strings, p[1]))
                        for p in patterns)):
            raise ValueError("not ConText rule cue data")
        return cls({k: tuple(v) for k, v in phrases.items()}, longest,
                   tuple((index, tuple(frozenset(words) for words in words_per_token))
                         for index, words_per_token in patterns), tuple(always))

    def candidates(self, words: Sequence[str]) -> tuple[int, ...]:
        """The rules (indexes, ascending) that may match a text with these tokens
        (``Token.lower_``, in order): none of the others can."""
        found = set(self.always)
        present = set(words)
        found.update(index for index, pattern in self.patterns
                     if all(options & present for options in pattern))
        squeezed = [s for s in map(_squeezed, words) if s]
        for start in range(len(squeezed)):
            joined = ""
            for word in squeezed[start:]:
                joined += word
                if len(joined) > self.longest:
                    break
                found.update(self.phrases.get(joined, ()))
        return tuple(sorted(found))


def _strings(value: Any) -> bool:
    """Whether ``value`` is a list of strings."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _numbers(value: Any) -> bool:
    """Whether ``value`` is a list of rule indexes (integers, not booleans)."""
    return isinstance(value, list) and all(type(v) is int for v in value)


def _required_words(pattern: list[dict[str, Any]]) -> tuple[frozenset[str], ...]:
    """For each token a pattern requires and names by its word, the lower-case words it accepts
    (tokens it may skip, or constrains otherwise, require nothing here)."""
    out: list[frozenset[str]] = []
    for token in pattern:
        if token.get("OP") not in REQUIRED_OPS:
            continue
        for key in WORD_KEYS:
            words = _words(token.get(key), exact_case=key == "LOWER")
            if words is not None:
                out.append(words)
                break
    return tuple(out)


def _words(value: Any, exact_case: bool) -> frozenset[str] | None:
    """The lower-case forms of the words an attribute value accepts (``{"IN": [...]}`` or one
    word), or None when it accepts others too. A LOWER value is compared as written: an
    upper-case one never matches."""
    if isinstance(value, str):
        options = [value]
    elif isinstance(value, dict) and set(value) == {"IN"} and isinstance(value["IN"], list):
        options = value["IN"]
    else:
        return None
    if not all(isinstance(w, str) and (exact_case or w.isascii()) for w in options):
        return None
    return frozenset(w if exact_case else w.lower() for w in options)
