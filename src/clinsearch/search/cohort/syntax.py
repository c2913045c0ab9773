"""The Boolean cohort language: tokens, syntax tree and a recursive-descent parser.

Grammar (keywords are case-insensitive)::

    query   := or EOF
    or      := and ("OR" and)*
    and     := unary (["AND"] unary)*          -- adjacent parts are ANDed
    unary   := "NOT" unary | primary
    primary := "(" or ")" [scope] | filter | term
    scope   := ["IN"] "SAME" ("SENTENCE" | "REPORT" | "VISIT" | "PATIENT")
    filter  := ("type" | "date" | "section" | "text" | "context") ":" (QUOTED | VALUE)
             | "bundle" ":" (QUOTED | VALUE)   -- a named term bundle: any of its terms
    term    := QUOTED | WORD+                  -- consecutive words form one phrase

Errors raise ``CohortSyntaxError`` with the character offset of the offending token.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Literal

from clinsearch.annotate.finding import CONTEXTS
from clinsearch.annotate.phrase import phrase_words
from clinsearch.errors import ClinsearchError, LimitError
from clinsearch.limits import MAX_CLAUSES, MAX_NESTING, MAX_PHRASE_WORDS, MAX_QUERY_CHARS
from clinsearch.text_checks import check_text
from clinsearch.units import LEVELS, Level

FILTER_KEYS = ("type", "date", "section", "text", "context", "bundle")
CONTEXT_VALUES = (*CONTEXTS, "any")
KEYWORDS = ("and", "or", "not")


class CohortSyntaxError(ClinsearchError):
    """A malformed cohort query; the message shows the query with a caret under ``position``."""

    def __init__(self, message: str, query: str, position: int) -> None:
        self.message = message
        self.query = query
        self.position = max(0, min(position, len(query)))
        super().__init__(str(self))

    def __str__(self) -> str:
        return (
            f"cohort query, column {self.position + 1}: {self.message}\n"
            f"  {self.query}\n  {' ' * self.position}^"
        )


class CohortLimitError(CohortSyntaxError, LimitError):
    """A cohort query beyond a bound of ``clinsearch.limits`` (too long, too deep, too many
    clauses, a phrase of too many words), shown as a syntax error is (HTTP 422)."""


@dataclass(frozen=True, slots=True)
class Token:
    """A lexical token; ``kind`` is one of ( ) AND OR NOT WORD QUOTED FILTER END."""

    kind: str
    text: str
    start: int
    end: int
    key: str = ""  # FILTER tokens: the filter name; text holds the value


@dataclass(frozen=True, slots=True)
class Term:
    """A finding phrase such as ``right lower lobe pneumonia`` or ``no pneumothorax``."""

    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class TextMatch:
    """``text:"..."``: sentences whose text contains the phrase, case-insensitively."""

    phrase: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Filter:
    """A restriction on report type, report date range, sentence section, or finding context
    (``context:historical``: the findings of the group must carry that flag, "only historical";
    ``any``: any or none). Like every filter it narrows; the ``--context`` option widens."""

    key: Literal["type", "date", "section", "context"]
    value: str  # type, section: folded (``fold``); context: the flag; date: the range as written
    low: str = ""  # date: ISO lower bound, inclusive ("" = open)
    high: str = ""  # date: ISO upper bound, inclusive ("" = open)
    start: int = 0
    end: int = 0


@dataclass(frozen=True, slots=True)
class Not:
    """Units that do not satisfy ``operand``."""

    operand: Node
    start: int


@dataclass(frozen=True, slots=True)
class And:
    """Units satisfying every operand; filters among the operands restrict the others."""

    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Units satisfying any operand."""

    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Group:
    """A parenthesised expression, evaluated within ``scope`` when one is given."""

    expr: Node
    scope: Level | None
    start: int
    end: int


Node = Term | TextMatch | Filter | Not | And | Or | Group


@dataclass(frozen=True, slots=True)
class BundleTerm:
    """One term of a term bundle: a finding the lexicon reads (matched as any finding, with
    its polarity) or, when the lexicon names no single finding for it, a text phrase."""

    text: str
    in_lexicon: bool


Bundles = Mapping[str, tuple[BundleTerm, ...]]  # bundle name (folded by ``fold``) -> terms

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r'[^\s()"]+')
_KEY = re.compile(r"([A-Za-z_]+):")


def tokenize(query: str) -> list[Token]:
    """Split ``query`` into tokens, ending with an END token."""
    tokens: list[Token] = []
    i = 0
    while i < len(query):
        if m := _SPACE.match(query, i):
            i = m.end()
            continue
        ch = query[i]
        if ch in "()":
            tokens.append(Token(ch, ch, i, i + 1))
            i += 1
        elif ch == '"':
            text, end = _quoted(query, i)
            tokens.append(Token("QUOTED", text, i, end))
            i = end
        elif (m := _KEY.match(query, i)) and m.group(1).lower() in FILTER_KEYS:
            key = m.group(1).lower()
            j = m.end()
            if j < len(query) and query[j] == '"':
                value, end = _quoted(query, j)
            elif (w := _WORD.match(query, j)) is not None:
                value, end = w.group(), w.end()
            else:
                raise CohortSyntaxError(f"expected a value after '{key}:'", query, j)
            tokens.append(Token("FILTER", value, i, end, key=key))
            i = end
        elif m and query[m.end() : m.end() + 1] not in ("", " "):
            raise CohortSyntaxError(
                f"unknown filter '{m.group(1)}:'; use {', '.join(k + ':' for k in FILTER_KEYS)}",
                query,
                i,
            )
        else:
            m = _WORD.match(query, i)
            assert m is not None  # any non-space, non-paren, non-quote char starts a word
            word = m.group()
            kind = word.upper() if word.lower() in KEYWORDS else "WORD"
            tokens.append(Token(kind, word, i, m.end()))
            i = m.end()
    tokens.append(Token("END", "", len(query), len(query)))
    return tokens


def _quoted(query: str, start: int) -> tuple[str, int]:
    """The text of the quoted string opening at ``start`` and the offset after its closing quote."""
    close = query.find('"', start + 1)
    if close < 0:
        raise CohortSyntaxError("unterminated quote", query, start)
    text = query[start + 1 : close].strip()
    if not text:
        raise CohortSyntaxError("empty quoted phrase", query, start)
    return text, close + 1


def parse(query: str, bundles: Bundles | None = None) -> Node:
    """Parse a cohort query into its syntax tree, or raise ``CohortSyntaxError``;
    ``bundle:NAME`` becomes the OR of the terms ``bundles`` holds for that name."""
    if not query.strip():
        raise CohortSyntaxError("the query is empty", query, 0)
    if len(query) > MAX_QUERY_CHARS:
        raise LimitError(
            f"cohort query too long: {len(query):,} characters (at most {MAX_QUERY_CHARS:,})"
        )
    check_text(query, "the cohort query")
    return _Parser(query, bundles or {}).parse()


class _Parser:
    """Recursive descent over the token list; one method per grammar rule."""

    def __init__(self, query: str, bundles: Bundles) -> None:
        self.query = query
        self.bundles = bundles
        self.tokens = tokenize(query)
        self.pos = 0
        self.depth = 0
        self.clauses = 0

    def parse(self) -> Node:
        node = self.or_()
        tok = self.peek()
        if tok.kind == ")":
            self.fail("unmatched ')'", tok)
        if tok.kind != "END":
            self.fail(f"unexpected '{tok.text}'", tok)
        return node

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def take(self) -> Token:
        tok = self.tokens[self.pos]
        self.pos += 1
        return tok

    def fail(self, message: str, tok: Token, *, limit: bool = False) -> None:
        """Refuse the query at ``tok``; ``limit``: because it exceeds a declared bound."""
        raise (CohortLimitError if limit else CohortSyntaxError)(message, self.query, tok.start)

    def phrase(self, text: str, tok: Token) -> str:
        """``text`` (a term or text match) within MAX_PHRASE_WORDS words."""
        if phrase_words(text) > MAX_PHRASE_WORDS:
            self.fail(f"a term or phrase holds at most {MAX_PHRASE_WORDS} words"
                      f" (this one {phrase_words(text)})", tok, limit=True)
        return text

    def or_(self) -> Node:
        operands = [self.and_()]
        while self.peek().kind == "OR":
            self.take()
            operands.append(self.and_())
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def and_(self) -> Node:
        operands = [self.unary()]
        while True:
            kind = self.peek().kind
            if kind == "AND":
                self.take()
            elif kind not in ("NOT", "(", "WORD", "QUOTED", "FILTER"):
                break
            operands.append(self.unary())
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def unary(self) -> Node:
        tok = self.peek()
        if tok.kind == "NOT":
            self.take()
            self.deeper(tok)
            node = Not(self.unary(), tok.start)
            self.depth -= 1
            return node
        return self.primary()

    def deeper(self, tok: Token) -> None:
        """Enter one more level of nesting, within ``MAX_NESTING``."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(f"the query nests more than {MAX_NESTING} levels of parentheses and NOTs",
                      tok, limit=True)

    def clause(self, tok: Token) -> None:
        """Count one more finding, filter or text match, within ``MAX_CLAUSES``."""
        self.clauses += 1
        if self.clauses > MAX_CLAUSES:
            self.fail(f"the query has more than {MAX_CLAUSES} findings and filters; split it",
                      tok, limit=True)

    def primary(self) -> Node:
        tok = self.peek()
        if tok.kind == "(":
            self.take()
            if self.peek().kind == ")":
                self.fail("empty parentheses", self.peek())
            self.deeper(tok)
            expr = self.or_()
            self.depth -= 1
            close = self.peek()
            if close.kind != ")":
                self.fail(f"expected ')' to close the '(' at column {tok.start + 1}", close)
            self.take()
            scope, end = self.scope(close.end)
            return Group(expr, scope, tok.start, end)
        if tok.kind in ("FILTER", "QUOTED", "WORD"):
            self.clause(tok)
        if tok.kind == "FILTER":
            self.take()
            return self.filter(tok)
        if tok.kind == "QUOTED":
            self.take()
            return Term(self.phrase(tok.text, tok), tok.start, tok.end)
        if tok.kind == "WORD":
            words = [self.take()]
            while self.peek().kind == "WORD":
                words.append(self.take())
            text = self.phrase(" ".join(w.text for w in words), tok)
            return Term(text, words[0].start, words[-1].end)
        if tok.kind == "END":
            self.fail("expected a finding, a filter or '(' but the query ended", tok)
        self.fail(f"expected a finding, a filter or '(' before '{tok.text}'", tok)
        raise AssertionError("unreachable")

    def scope(self, end: int) -> tuple[Level | None, int]:
        """An optional ``[in] same UNIT`` after a closing parenthesis."""
        words = self.tokens[self.pos : self.pos + 3]
        texts = [t.text.lower() if t.kind == "WORD" else "" for t in words]
        skip = 1 if texts[:1] == ["in"] else 0
        if texts[skip : skip + 1] != ["same"]:
            return None, end
        unit_tok = words[skip + 1] if len(words) > skip + 1 else self.tokens[-1]
        unit = texts[skip + 1] if len(texts) > skip + 1 else ""
        if unit not in LEVELS:
            self.fail(f"expected one of {', '.join(LEVELS)} after 'same'", unit_tok)
        self.pos += skip + 2
        return unit, unit_tok.end  # type: ignore[return-value]

    def filter(self, tok: Token) -> Node:
        if tok.key == "text":
            return TextMatch(self.phrase(tok.text, tok), tok.start, tok.end)
        if tok.key == "bundle":
            return self.bundle(tok)
        if tok.key == "date":
            low, high = _date_range(tok, self.query)
            return Filter("date", tok.text, low, high, tok.start, tok.end)
        if tok.key == "context":
            value = tok.text.lower()
            if value not in CONTEXT_VALUES:
                self.fail(f"unknown context '{tok.text}'; use one of {', '.join(CONTEXT_VALUES)}",
                          tok)
            return Filter("context", value, start=tok.start, end=tok.end)
        return Filter(tok.key, fold(tok.text), start=tok.start, end=tok.end)  # type: ignore[arg-type]

    def bundle(self, tok: Token) -> Node:
        """``bundle:NAME``: a group of the OR of its terms, each at the bundle's place."""
        terms = self.bundles.get(fold(tok.text))
        if terms is None:
            known = ", ".join(sorted(self.bundles)) or "none is defined here"
            self.fail(f"unknown bundle '{tok.text}'; bundles: {known}", tok)
        if not terms:
            self.fail(f"bundle '{tok.text}' has no terms", tok)
        for _ in terms[1:]:
            self.clause(tok)
        parts = tuple(Term(t.text, tok.start, tok.end) if t.in_lexicon
                      else TextMatch(self.phrase(t.text, tok), tok.start, tok.end)
                      for t in terms)
        return Group(parts[0] if len(parts) == 1 else Or(parts), None, tok.start, tok.end)


def fold(value: str) -> str:
    """A type or section value compared without case, spaces or punctuation: "CHEST XRAY",
    "chest x-ray" and "Chest X-Ray" are one type."""
    return re.sub(r"[^a-z0-9]+", "", value.lower())


def _date_range(tok: Token, query: str) -> tuple[str, str]:
    """``2020-01-01..2020-12-31``, ``2020-01-01..``, ``..2020-12-31`` or one day ``2020-05-01``."""
    value = tok.text
    low, sep, high = value.partition("..")
    if not sep:
        high = low
    value_start = tok.end - len(value) - (1 if query[tok.end - 1 : tok.end] == '"' else 0)
    offset = value_start
    for part in (low, high):
        if part:
            try:
                date.fromisoformat(part)
                if len(part) != 10:
                    raise ValueError(part)
            except ValueError:
                raise CohortSyntaxError(
                    f"bad date '{part}'; write YYYY-MM-DD, e.g. date:2020-01-01..2020-12-31",
                    query,
                    offset,
                ) from None
        offset += len(part) + len(sep)
    if not low and not high:
        raise CohortSyntaxError("a date range needs at least one end", query, value_start)
    if low and high and low > high:
        raise CohortSyntaxError(f"date range starts after it ends ({value})", query, value_start)
    return low, high
