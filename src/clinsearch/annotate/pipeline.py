"""Build the medspaCy pipeline for a lexicon: tokenizer, sentencizer, TargetMatcher, ConText.

Nothing is downloaded: the pipeline starts from a blank English model and medspaCy's packaged
rules. TargetMatcher rules are generated from the lexicon's surface-form variants.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import spacy
from medspacy.custom_tokenizer import create_medspacy_tokenizer
from medspacy.target_matcher import TargetRule
from spacy.language import Language

from clinsearch.annotate.context_rules import context_rules
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.surface import abbreviation_variants, term_variants, tokenizer

logging.getLogger("PyRuSH").setLevel(logging.WARNING)


def target_rules(lexicon: Lexicon) -> Iterator[TargetRule]:
    """TargetMatcher rules per concept: each term variant (lowercase), each abbreviation (exact)."""
    for concept in lexicon.concepts.values():
        variants: set[tuple[str, ...]] = set()
        for form in concept.surface_forms:
            variants |= term_variants(form)
        for variant in sorted(variants):
            yield TargetRule(" ".join(variant), concept.id)
        for abbr in concept.abbreviations:
            words = [t.text for t in tokenizer()(abbr) if not t.is_space]
            last = {"ORTH": {"IN": sorted(abbreviation_variants(words[-1]))}}
            yield TargetRule(abbr, concept.id, pattern=[*({"ORTH": w} for w in words[:-1]), last])


def build_pipeline(lexicon: Lexicon, radiology_rules: bool = True) -> Language:
    """A spaCy pipeline that finds the lexicon's concepts and their ConText modifiers."""
    nlp = spacy.blank("en")
    nlp.tokenizer = create_medspacy_tokenizer(nlp)
    nlp.add_pipe("sentencizer")
    matcher = nlp.add_pipe("medspacy_target_matcher")
    matcher.add(list(target_rules(lexicon)))
    context = nlp.add_pipe("medspacy_context", config={"rules": None})
    context.add(context_rules(radiology=radiology_rules))
    return nlp
