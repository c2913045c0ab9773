"""Build the medspaCy pipeline: clinical tokenizer, sentencizer and ConText.

Nothing is downloaded: the pipeline starts from a blank English model and medspaCy's packaged
ConText rules, built on first need (``LazyConText``). Concepts are found before it by
surface_index.concept_index (see there for why not medspaCy's TargetMatcher).
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cached_property
from typing import Any

import medspacy.context.context_modifier as context_modifier
from medspacy.context import ConText, ConTextRule
from spacy.lang.en import English
from spacy.language import Language
from spacy.tokens import Doc

from clinsearch.annotate.context_rules import cached_rule_specs, cue_words, rule_cues
from clinsearch.annotate.surface import blank_nlp

logging.getLogger("PyRuSH").setLevel(logging.WARNING)
# ConText's token Matcher may hold no patterns once they are expanded into phrases.
warnings.filterwarnings("ignore", message=r"\[W036\]")
CONTEXT_NAME = "clinsearch_context"
SUBSET_RULES = 64  # a text with at most this many candidate rules gets a ConText of them alone
SUBSETS = 64  # ... for this many distinct sets of candidates; then all rules are built


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
    """ConText over the spans in ``doc.ents``, its matchers built for the rules a text needs.

    Building matchers for all the rules is most of a cold query's parse (benchmarks/README.md).
    ``RuleCues`` (a necessary condition, kept in the private cache) names the rules that may
    match a Doc; no other rule can match it, and ConText's result depends only on the rules
    that match. So a Doc with no candidate goes through a ConText without rules, and a Doc
    with few (a query: "no pneumothorax") through a ConText of its candidates alone, added in
    the full ConText's order under the same rule ids (medspaCy orders matches of one span by
    their ids), built in milliseconds and kept for Docs with the same candidates. Once many
    texts have needed rules (a corpus), the full ConText (every rule, in order) is built and
    handles every later Doc.
    """

    def __init__(self, nlp: Language, radiology_rules: bool = True,
                 subset_rules: int = SUBSET_RULES, subsets: int = SUBSETS) -> None:
        """ConText for Docs of ``nlp``: medspaCy's rules, plus the radiology rules if asked;
        Docs with at most ``subset_rules`` candidate rules get a ConText of those alone, for
        up to ``subsets`` distinct sets of candidates (then the full ConText is built)."""
        self._nlp = nlp
        self._radiology = radiology_rules
        self._cues = rule_cues(radiology_rules)
        self._ruleless = ContainmentAwareConText(nlp, CONTEXT_NAME, rules=None)
        self._subset_rules, self._subsets_left = subset_rules, subsets
        self._subsets: dict[tuple[int, ...], ContainmentAwareConText] = {}
        self._full: ContainmentAwareConText | None = None
        self._lock = threading.Lock()

    @cached_property
    def specs(self) -> list[dict[str, Any]]:
        """The rules, as ``ConTextRule`` keyword arguments (loaded on first need)."""
        return cached_rule_specs(radiology=self._radiology)

    @cached_property
    def cue_words(self) -> frozenset[str]:
        """The words of the rules' literals (``context_rules.cue_words``)."""
        return cue_words(radiology=self._radiology)

    @property
    def built(self) -> bool:
        """Whether the matchers of every rule have been built (texts needed them)."""
        return self._full is not None

    @property
    def subsets(self) -> int:
        """How many ConTexts of a text's candidate rules have been built."""
        return len(self._subsets)

    def __call__(self, doc: Doc) -> Doc:
        """``doc`` with ConText applied to ``doc.ents``."""
        if self._full is not None:
            return self._full(doc)
        rules = self._cues.candidates([t.lower_ for t in doc])
        if not rules:
            return self._ruleless(doc)
        with self._lock:
            context = self._full or self._subset(rules)
            if context is None:
                context = self._full = ContainmentAwareConText(self._nlp, CONTEXT_NAME,
                                                               rules=None)
                context.add([ConTextRule(**spec) for spec in self.specs])
        return context(doc)

    def _subset(self, rules: tuple[int, ...]) -> ContainmentAwareConText | None:
        """The ConText of ``rules`` alone, or None when there are too many of them, too many
        such ConTexts were built already, or this medspaCy gave them other ids (never again)."""
        if rules not in self._subsets:
            if len(rules) > self._subset_rules or not self._subsets_left:
                return None
            self._subsets_left -= 1
            context = self._context(rules)
            if context is None:
                self._subsets_left = 0
                return None
            self._subsets[rules] = context
        return self._subsets[rules]

    def _context(self, rules: Iterable[int]) -> ContainmentAwareConText | None:
        """A ConText of the rules at ``rules`` (ascending), each under the id it has among
        all the rules (``{category}_{index}``, medspaCy 1.3's numbering), or None if a rule got
        another id (the numbering is medspaCy's private counter)."""
        context = ContainmentAwareConText(self._nlp, CONTEXT_NAME, rules=None)
        matcher = context._ConText__matcher  # type: ignore[attr-defined]
        for index in rules:
            matcher._MedspacyMatcher__rule_count = index
            rule = ConTextRule(**self.specs[index])
            context.add([rule])
            if matcher.rule_map.get(f"{rule.category}_{index}") is not rule:
                return None
        return context
