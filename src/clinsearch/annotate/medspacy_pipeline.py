"""Build the medspaCy pipeline: clinical tokenizer, sentencizer and ConText.

Nothing is downloaded: the pipeline starts from a blank English model and medspaCy's packaged
ConText rules. Concepts are found before it by surface_index.concept_index (see there for why
not medspaCy's TargetMatcher).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import medspacy.context.context_modifier as context_modifier
import spacy
from medspacy.context import ConText
from medspacy.custom_tokenizer import create_medspacy_tokenizer
from spacy.language import Language
from spacy.tokens import Doc

from clinsearch.annotate.context_rules import context_rules

logging.getLogger("PyRuSH").setLevel(logging.WARNING)
# ConText's token Matcher may hold no patterns once they are expanded into phrases.
warnings.filterwarnings("ignore", message=r"\[W036\]")


def spans_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two (start, end) token spans share a token, containment included.

    medspaCy 1.3.1's ``tuple_overlaps`` misses a span lying strictly inside the other, so a
    terminator ("which", "but"), whose scope is its whole sentence, never ended the scope of a
    cue with ``max_scope`` inside it: "blunting which is not evident on the lateral view"
    negated the opacity before "which". ``ContainmentAwareConText`` uses it for ConText's scope
    and target checks.
    """
    return a[0] < b[1] and b[0] < a[1]


@contextmanager
def _containment_aware_overlaps() -> Iterator[None]:
    """While the block runs, ConText's modifiers test overlap with ``spans_overlap``."""
    original = context_modifier.tuple_overlaps
    context_modifier.tuple_overlaps = spans_overlap
    try:
        yield
    finally:
        context_modifier.tuple_overlaps = original


class ContainmentAwareConText(ConText):
    """medspaCy's ConText with the containment fix of ``spans_overlap``, for this component's
    own calls only: other medspaCy pipelines in the process keep medspaCy's behaviour."""

    def __call__(self, doc: Doc, targets: str | None = None) -> Doc:
        with _containment_aware_overlaps():
            return super().__call__(doc, targets)


@Language.factory("clinsearch_context")
def _make_context(nlp: Language, name: str) -> ContainmentAwareConText:
    """The ConText component of ``build_pipeline`` (rules are added after it is made)."""
    return ContainmentAwareConText(nlp, name, rules=None)


def build_pipeline(radiology_rules: bool = True) -> Language:
    """A spaCy pipeline that splits sentences and applies ConText to the spans in ``doc.ents``."""
    nlp = spacy.blank("en")
    nlp.tokenizer = create_medspacy_tokenizer(nlp)
    nlp.add_pipe("sentencizer")
    context = nlp.add_pipe("clinsearch_context", validate=False)
    context.add(context_rules(radiology=radiology_rules))
    return nlp
