"""Build the medspaCy pipeline (clinical tokenizer, sentencizer, ConText) and the concept index.

Nothing is downloaded: the pipeline starts from a blank English model and medspaCy's packaged
ConText rules. Concepts are found by a SurfaceIndex built from the lexicon's surface-form
variants (see surface_index.py for why not medspaCy's TargetMatcher).
"""

from __future__ import annotations

import logging

import spacy
from medspacy.custom_tokenizer import create_medspacy_tokenizer
from spacy.language import Language

from clinsearch.annotate.context_rules import context_rules
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.surface_index import SurfaceIndex

logging.getLogger("PyRuSH").setLevel(logging.WARNING)


def concept_index(lexicon: Lexicon) -> SurfaceIndex:
    """Every concept's surface forms (case-insensitive) and abbreviations (exact case)."""
    index = SurfaceIndex()
    for concept in lexicon.concepts.values():
        for form in concept.surface_forms:
            index.add_term(form, concept.id)
        for abbr in concept.abbreviations:
            index.add_abbreviation(abbr, concept.id)
    return index


def build_pipeline(radiology_rules: bool = True) -> Language:
    """A spaCy pipeline that splits sentences and applies ConText to the spans in ``doc.ents``."""
    nlp = spacy.blank("en")
    nlp.tokenizer = create_medspacy_tokenizer(nlp)
    nlp.add_pipe("sentencizer")
    context = nlp.add_pipe("medspacy_context", config={"rules": None})
    context.add(context_rules(radiology=radiology_rules))
    return nlp
