"""Surface-form variants of lexicon terms: plurals, hyphen/space/joined spellings, XXXX gaps.

Matching stays a fast exact lookup of token sequences (surface_index.SurfaceIndex) because the
tolerance is moved to the lexicon side: each term expands to the token sequences it may be
written as. Hyphens are dropped on both sides. Over-generated variants are harmless (they never
occur in text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import product

from spacy.language import Language
from spacy.tokenizer import Tokenizer
from spacy.tokens import Doc

from clinsearch.errors import LimitError
from clinsearch.limits import MAX_TERM_VARIANTS

DEID = "xxxx"  # IU X-ray de-identification token
HYPHENS = frozenset({"-", "–", "—"})
COPULAS = {"is": ("is", "appears"), "are": ("are", "appear")}  # see _with_report_phrasing
MAX_SPELLING_GAPS = 3  # spelling variants are generated per gap only for terms up to this many gaps
MAX_COPULAS = 3  # "appears" for "is" only in terms up to this many copulas (2^n variants)
_SPACE_RUN = re.compile(r"\s{2,}|[^\S ]")  # what squeeze_spaces changes


@lru_cache(maxsize=1)
def blank_nlp() -> Language:
    """A blank English pipeline with medspaCy's clinical tokenizer (built once per process).

    Annotation pipelines share its vocabulary and tokenizer (``medspacy_pipeline``): each
    tokenizer loads spaCy's 5,400 tokenizer exceptions and each vocabulary computes the
    attributes of every word it meets, so one of each keeps that start-up cost paid once.
    English's default tokenizer is replaced at once, so it is made with only what medspaCy
    reads of it (``token_match``), not with the exceptions and regular expressions.
    """
    from medspacy.custom_tokenizer import create_medspacy_tokenizer
    from spacy.lang.en import English

    def placeholder(nlp: Language) -> Tokenizer:
        return Tokenizer(nlp.vocab, token_match=nlp.Defaults.token_match)

    nlp = English(create_tokenizer=placeholder)  # spacy.blank("en") without resolving a config
    nlp.tokenizer = create_medspacy_tokenizer(nlp)  # from English's defaults and token_match
    return nlp


def tokenizer() -> Tokenizer:
    """The shared clinical tokenizer."""
    return blank_nlp().tokenizer


def term_tokens(term: str) -> tuple[str, ...]:
    """The lowercase tokens of a term as the clinical tokenizer splits it (no whitespace tokens)."""
    return tuple(t.lower_ for t in tokenizer()(squeeze_spaces(term)[0]) if not t.is_space)


def key_of(text: str, exact: bool = False) -> tuple[str, ...]:
    """The lookup key of a phrase: its tokens without hyphens, lowercase unless ``exact``."""
    toks = tokenizer()(squeeze_spaces(text)[0])
    return tuple(
        (t.text if exact else t.lower_) for t in toks if not t.is_space and t.text not in HYPHENS
    )


def squeeze_spaces(text: str) -> tuple[str, Sequence[int]]:
    """``text`` with whitespace runs collapsed to one space, and each new char's original offset."""
    if not _SPACE_RUN.search(text):
        return text, range(len(text) + 1)
    out: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in _SPACE_RUN.finditer(text):
        out.append(text[pos : m.start()])
        offsets.extend(range(pos, m.start()))
        out.append(" ")
        offsets.append(m.start())
        pos = m.end()
    out.append(text[pos:])
    offsets.extend(range(pos, len(text) + 1))  # one past the end maps too
    return "".join(out), offsets


def plural_forms(word: str) -> set[str]:
    """The word with likely plural and singular spellings (English and Latin/Greek endings)."""
    forms = {word}
    if not word.isalpha() or len(word) < 3:
        return forms
    forms.add(word + "s")
    if word.endswith(("s", "x", "z", "ch", "sh")):
        forms.add(word + "es")
    if word.endswith("y") and word[-2] not in "aeiou":
        forms.add(word[:-1] + "ies")
    if word.endswith("is"):
        forms.add(word[:-2] + "es")  # metastasis -> metastases
    if word.endswith("ex"):
        forms.add(word[:-2] + "ices")  # apex -> apices
    if word.endswith("x"):
        forms.add(word[:-1] + "ces")  # thorax -> thoraces
    if word.endswith("us"):
        forms.add(word[:-2] + "i")  # bronchus -> bronchi
    if word.endswith("um"):
        forms.add(word[:-2] + "a")  # diverticulum -> diverticula
    if word.endswith("a"):
        forms.add(word + "e")  # vertebra -> vertebrae
    if word.endswith("ies"):
        forms.add(word[:-3] + "y")
    elif word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        forms.add(word[:-2])
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        forms.add(word[:-1])
    return forms


def _spellings(tokens: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Hyphen-free spellings (text keys drop hyphens too); hyphenated words may also be joined."""
    words: list[str] = []
    joinable: list[bool] = []  # joinable[i]: words[i] and words[i + 1] were hyphenated
    hyphen = False
    for tok in tokens:
        if tok in HYPHENS:
            hyphen = bool(words)
            continue
        if words:
            joinable.append(hyphen)
        words.append(tok)
        hyphen = False
    gaps = [i for i, j in enumerate(joinable) if j]
    if not gaps or len(gaps) > MAX_SPELLING_GAPS:
        return {tuple(words)} if words else set()
    out: set[tuple[str, ...]] = set()
    for choice in product((False, True), repeat=len(gaps)):
        join = {g for g, c in zip(gaps, choice, strict=True) if c}
        seq = [words[0]]
        for i, word in enumerate(words[1:]):
            if i in join:
                seq[-1] += word
            else:
                seq.append(word)
        out.add(tuple(seq))
    return out


def _with_plurals(tokens: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Plural/singular variants of the head word (the last token, or the one before 'of')."""
    heads = {len(tokens) - 1}
    heads.update(i - 1 for i, t in enumerate(tokens) if t == "of" and i > 0)
    out = {tokens}
    for i in heads:
        out |= {(*tokens[:i], form, *tokens[i + 1 :]) for form in plural_forms(tokens[i])}
    return out


def _with_deid_gaps(tokens: tuple[str, ...]) -> set[tuple[str, ...]]:
    """An XXXX token in a gap, or standing for an inner word (IU X-ray de-identification)."""
    out = {tokens}
    if len(tokens) >= 2:
        out |= {(*tokens[:i], DEID, *tokens[i:]) for i in range(1, len(tokens))}
    if len(tokens) >= 3:
        out |= {(*tokens[:i], DEID, *tokens[i + 1 :]) for i in range(1, len(tokens) - 1)}
    return out


def _with_report_phrasing(tokens: tuple[str, ...]) -> set[tuple[str, ...]]:
    """Report wording of the same statement: "appears"/"appear" for a copula "is"/"are"
    ("hilum appears prominent"), and "of" without "the" ("prominence of mediastinum")."""
    options = [COPULAS.get(tok, (tok,)) for tok in tokens]
    if sum(len(o) > 1 for o in options) > MAX_COPULAS:
        options = [(tok,) for tok in tokens]
    out = set(product(*options))
    for seq in list(out):
        drops = [i for i in range(1, len(seq)) if seq[i] == "the" and seq[i - 1] == "of"]
        if drops:
            out.add(tuple(t for i, t in enumerate(seq) if i not in drops))
    return out


def term_variants(term: str) -> set[tuple[str, ...]]:
    """All lowercase token sequences a lexicon term may be written as; a term that would be
    matched as more than MAX_TERM_VARIANTS sequences is a ``LimitError`` (their number grows
    with the term's length, and a surface index stores each one's prefixes)."""
    base = term_tokens(term)
    if not base:
        return set()
    out: set[tuple[str, ...]] = set()
    for spelled in {v for s in _spellings(base) for v in _with_report_phrasing(s)}:
        for plural in _with_plurals(spelled):
            out |= _with_deid_gaps(plural)
            if len(out) > MAX_TERM_VARIANTS:
                raise LimitError(f"a term of {len(base)} words would be matched as more than"
                                 f" {MAX_TERM_VARIANTS} word sequences; use fewer words")
    return out


def abbreviation_variants(abbreviation: str) -> set[tuple[str, ...]]:
    """Case-sensitive token sequences of an abbreviation: as written, and with a plural 's'."""
    words = key_of(abbreviation, exact=True)
    if not words:
        return set()
    return {words, (*words[:-1], words[-1] + "s")}


@dataclass(frozen=True, slots=True)
class TextKeys:
    """Tokens of a Doc that take part in matching (no spaces or hyphens): positions and forms."""

    positions: list[int]
    lower: list[str]
    exact: list[str]


def text_keys(doc: Doc) -> TextKeys:
    """The matching keys of a Doc's tokens."""
    kept = [(t.i, t.lower_, t.text) for t in doc if not t.is_space and t.text not in HYPHENS]
    return TextKeys([k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept])
