"""Surface-form variants of lexicon terms: plurals, hyphen/space/joined spellings, XXXX gaps.

Matching stays a fast exact phrase lookup (spaCy PhraseMatcher on lowercase tokens) because the
tolerance is moved to the lexicon side: each term expands to the token sequences it may be
written as. Over-generated variants are harmless (they never occur in text).
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import product

from spacy.language import Language
from spacy.tokenizer import Tokenizer

DEID = "xxxx"  # IU X-ray de-identification token
MAX_SPELLING_GAPS = 3  # spelling variants are generated per gap only for terms up to this many gaps
_SPACE_RUN = re.compile(r"\s+")


@lru_cache(maxsize=1)
def blank_nlp() -> Language:
    """A blank English pipeline with medspaCy's clinical tokenizer (built once per process)."""
    import spacy
    from medspacy.custom_tokenizer import create_medspacy_tokenizer

    nlp = spacy.blank("en")
    nlp.tokenizer = create_medspacy_tokenizer(nlp)
    return nlp


def tokenizer() -> Tokenizer:
    """The shared clinical tokenizer."""
    return blank_nlp().tokenizer


def term_tokens(term: str) -> tuple[str, ...]:
    """The lowercase tokens of a term as the clinical tokenizer splits it (no whitespace tokens)."""
    return tuple(t.lower_ for t in tokenizer()(squeeze_spaces(term)[0]) if not t.is_space)


def squeeze_spaces(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space, and each new char's original offset."""
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
    """Hyphen, space and joined spellings: each gap (or hyphen) may be any of the three."""
    words: list[str] = []
    gaps: list[bool] = []  # gaps[i] lies between words[i] and words[i + 1]; True where hyphenated
    hyphen = False
    for tok in tokens:
        if tok == "-" and words:
            hyphen = True
            continue
        if words:
            gaps.append(hyphen)
        words.append(tok)
        hyphen = False
    if not gaps or len(gaps) > MAX_SPELLING_GAPS:
        return {tokens}
    options = [(" ", "-", "") if hyph else (" ", "-") for hyph in gaps]
    out: set[tuple[str, ...]] = {tokens}
    for choice in product(*options):
        seq: list[str] = [words[0]]
        for sep, word in zip(choice, words[1:], strict=True):
            if sep == "":
                seq[-1] = seq[-1] + word
            else:
                if sep == "-":
                    seq.append("-")
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


def term_variants(term: str) -> set[tuple[str, ...]]:
    """All lowercase token sequences a lexicon term may be written as."""
    base = term_tokens(term)
    if not base:
        return set()
    out: set[tuple[str, ...]] = set()
    for spelled in _spellings(base):
        for plural in _with_plurals(spelled):
            out |= _with_deid_gaps(plural)
    return out


def abbreviation_variants(abbreviation: str) -> set[str]:
    """Case-sensitive spellings of an abbreviation: as written, and with a plural 's'."""
    return {abbreviation, abbreviation + "s"}
