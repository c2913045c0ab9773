"""Build the medspaCy pipeline: clinical tokenizer, sentencizer and ConText.

Nothing is downloaded: the pipeline starts from a blank English model and medspaCy's packaged
ConText rules, built on first need (``LazyConText``). Concepts are found before it by
surface_index.concept_index (see there for why not medspaCy's TargetMatcher).
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

import medspacy.context.context_modifier as context_modifier
from medspacy.context import ConText, ConTextRule
from spacy.lang.en import English
from spacy.language import Language
from spacy.tokens import Doc

from clinsearch.annotate.context_rules import cached_rule_specs, rule_cues
from clinsearch.annotate.surface import blank_nlp

logging.getLogger("PyRuSH").setLevel(logging.WARNING)
# ConText's token Matcher may hold no patterns once they are expanded into phrases.
warnings.filterwarnings("ignore", message=r"\[W036\]")
CONTEXT_NAME = "clinsearch_context"


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


def build_pipeline() -> Language:
    """A spaCy pipeline that splits sentences, on the clinical tokenizer and vocabulary of
    ``surface.blank_nlp`` (shared, not rebuilt); ConText runs after it (``LazyConText``)."""
    base = blank_nlp()
    nlp = English(vocab=base.vocab, create_tokenizer=lambda _: base.tokenizer)
    nlp.add_pipe("sentencizer")
    return nlp


class LazyConText:
    """ConText over the spans in ``doc.ents``, its matchers built once a text needs them.

    Building matchers for the ~10,500 rules takes about 0.3 s, most of a cold query's parse,
    and most queries ("right lower lobe pneumonia") hold no cue. Until a Doc comes that one of
    the rules may match (``RuleCues``, a necessary condition, kept in the private cache, so the
    rules are not even read until then), Docs go through a ConText
    without rules: exactly what the full ConText does to a Doc none of its rules matches. The
    full ConText (every rule, in order) then handles that Doc and every later one.
    """

    def __init__(self, nlp: Language, radiology_rules: bool = True) -> None:
        """ConText for Docs of ``nlp``: medspaCy's rules, plus the radiology rules if asked."""
        self._nlp = nlp
        self._radiology = radiology_rules
        self._cues = rule_cues(radiology_rules)
        self._ruleless = ContainmentAwareConText(nlp, CONTEXT_NAME, rules=None)
        self._full: ContainmentAwareConText | None = None
        self._lock = threading.Lock()

    @cached_property
    def specs(self) -> list[dict[str, Any]]:
        """The rules, as ``ConTextRule`` keyword arguments (loaded on first need)."""
        return cached_rule_specs(radiology=self._radiology)

    @property
    def built(self) -> bool:
        """Whether the rules' matchers have been built (a Doc needed them)."""
        return self._full is not None

    def __call__(self, doc: Doc) -> Doc:
        """``doc`` with ConText applied to ``doc.ents``."""
        if self._full is None:
            if not self._cues.may_match([t.lower_ for t in doc]):
                return self._ruleless(doc)
            with self._lock:
                if self._full is None:
                    full = ContainmentAwareConText(self._nlp, CONTEXT_NAME, rules=None)
                    full.add([ConTextRule(**spec) for spec in self.specs])
                    self._full = full
        return self._full(doc)
