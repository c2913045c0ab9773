"""Which texts a set of ConText rules may match: a necessary condition, cheap to test.

A phrase rule (no ``pattern``) matches through spaCy's PhraseMatcher on the lower-case tokens of
its literal, so a text it matches holds a run of tokens whose lower-case forms, joined, spell
the literal's lower-case form without whitespace. A token-pattern rule needs, for each of its
tokens that must occur, a token of the text with one of the words that token accepts. Rules
whose matches this cannot bound (regular expressions, non-ASCII literals) make every text a
candidate. A text with no candidate rule is left unmodified by ConText, whatever the rules say
about it: so the annotator builds ConText (``medspacy_pipeline.LazyConText``) only for texts
that pass this test, and still gets ConText's exact result for every text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

REQUIRED_OPS = (None, "+")  # token-pattern operators under which the token must occur
WORD_KEYS = ("LOWER", "ORTH", "TEXT")  # token attributes that name the word itself


def _squeezed(text: str) -> str:
    """``text`` without whitespace (spaCy puts whitespace in tokens of its own, if anywhere)."""
    return "".join(text.split())


@dataclass(frozen=True, slots=True)
class RuleCues:
    """What a text must hold for at least one of a set of ConText rules to match it."""

    phrases: frozenset[str]  # phrase rules' literals, lower case, whitespace removed
    longest: int  # characters in the longest of ``phrases``
    patterns: tuple[tuple[frozenset[str], ...], ...]  # per pattern rule, words for each token
    always: bool  # some rule may match any text

    @classmethod
    def of(cls, specs: Iterable[dict[str, Any]]) -> RuleCues:
        """The cues of ConText rules given as ``ConTextRule`` keyword arguments."""
        phrases: set[str] = set()
        patterns: list[tuple[frozenset[str], ...]] = []
        always = False
        for spec in specs:
            pattern = spec.get("pattern")
            if pattern is None:
                literal = str(spec["literal"])
                if literal.isascii():
                    phrases.add(_squeezed(literal.lower()))
                else:  # per-token lower case may differ from the literal's: not bounded
                    always = True
            elif isinstance(pattern, list):
                patterns.append(_required_words(pattern))
            else:  # a regular expression
                always = True
        phrases.discard("")
        return cls(frozenset(phrases), max(map(len, phrases), default=0), tuple(patterns), always)

    def to_data(self) -> dict[str, Any]:
        """The cues as JSON-ready data (``from_data`` makes them back)."""
        return {"phrases": sorted(self.phrases), "longest": self.longest,
                "patterns": [[sorted(words) for words in pattern] for pattern in self.patterns],
                "always": self.always}

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> RuleCues:
        """The cues ``to_data`` gave; ValueError when ``data`` does not have its shape or its
        ``longest`` is not its phrases' (a smaller one would hide longer phrases' rules)."""
        phrases, longest, patterns, always = (
            data.get(k) for k in ("phrases", "longest", "patterns", "always"))
        if not (_strings(phrases) and isinstance(always, bool)
                and longest == max(map(len, phrases), default=0)  # it bounds the phrase search
                and isinstance(patterns, list)
                and all(isinstance(p, list) and all(map(_strings, p)) for p in patterns)):
            raise ValueError("not ConText rule cue data")
        return cls(frozenset(phrases), longest,
                   tuple(tuple(frozenset(words) for words in p) for p in patterns), always)

    def may_match(self, words: Sequence[str]) -> bool:
        """Whether some rule may match a text with these tokens (``Token.lower_``, in order)."""
        if self.always:
            return True
        present = set(words)
        if any(all(options & present for options in pattern) for pattern in self.patterns):
            return True
        squeezed = [s for s in map(_squeezed, words) if s]
        for start in range(len(squeezed)):
            joined = ""
            for word in squeezed[start:]:
                joined += word
                if len(joined) > self.longest:
                    break
                if joined in self.phrases:
                    return True
        return False


def _strings(value: Any) -> bool:
    """Whether ``value`` is a list of strings."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


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
