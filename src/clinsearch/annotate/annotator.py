"""The annotator: concept mentions with polarity, context flags and modifiers, as Findings."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import repeat

from medspacy.common.util import prune_overlapping_matches
from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc, Span

from clinsearch.annotate.context_rules import context_of, polarity_of
from clinsearch.annotate.finding import Finding, Modifier
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.modifiers import Anchor, ModifierMatcher, ModifierMention, attach
from clinsearch.annotate.pipeline import build_pipeline
from clinsearch.annotate.surface import squeeze_spaces, term_tokens, term_variants

TARGET_LABEL = "target:"  # span label prefix for caller-supplied target phrases
TARGET_TYPE = "target"


class Annotator:
    """Finds a lexicon's concepts in text with ConText polarity, context flags and modifiers."""

    def __init__(self, lexicon: Lexicon | None = None, *, radiology_rules: bool = True) -> None:
        self.lexicon = lexicon if lexicon is not None else Lexicon.load()
        self.nlp = build_pipeline(self.lexicon, radiology_rules=radiology_rules)
        self._modifiers = ModifierMatcher(self.lexicon, self.nlp.vocab)
        self._target_matcher = lru_cache(maxsize=256)(self._build_target_matcher)

    def annotate(self, text: str, targets: Sequence[str] = ()) -> list[Finding]:
        """The findings in ``text``; ``targets`` are extra phrases to find (they win overlaps)."""
        return next(self.annotate_many([text], [targets]))

    def annotate_many(
        self,
        texts: Iterable[str],
        targets: Iterable[Sequence[str]] | None = None,
        batch_size: int = 256,
    ) -> Iterator[list[Finding]]:
        """Findings for each text, in order, processed in batches by ``nlp.pipe``."""
        squeezed: deque[tuple[str, list[int]]] = deque()

        def prepared() -> Iterator[Doc]:
            for text, extra in zip(
                texts, targets if targets is not None else repeat(()), strict=False
            ):
                clean, offsets = squeeze_spaces(text)
                squeezed.append((text, offsets))
                doc = self.nlp.make_doc(clean)
                if extra:
                    doc.ents = self._target_spans(doc, tuple(extra))
                yield doc

        for doc in self.nlp.pipe(prepared(), batch_size=batch_size):
            text, offsets = squeezed.popleft()
            yield self._findings(doc, text, offsets)

    def _build_target_matcher(self, targets: tuple[str, ...]) -> PhraseMatcher:
        """A phrase matcher for caller-supplied targets, keyed by the target's normalised text."""
        matcher = PhraseMatcher(self.nlp.vocab, attr="LOWER")
        for phrase in targets:
            key = " ".join(term_tokens(phrase))
            if key:
                matcher.add(
                    TARGET_LABEL + key,
                    [Doc(self.nlp.vocab, words=list(v)) for v in term_variants(phrase)],
                )
        return matcher

    def _target_spans(self, doc: Doc, targets: tuple[str, ...]) -> list[Span]:
        """Spans of the targets in ``doc``, longest match winning."""
        matches = prune_overlapping_matches(self._target_matcher(targets)(doc))
        return [Span(doc, start, end, label=match_id) for match_id, start, end in matches]

    def _findings(self, doc: Doc, text: str, offsets: list[int]) -> list[Finding]:
        """Findings of an annotated ``doc``, offsets mapped back to the original ``text``."""
        ents = sorted(doc.ents, key=lambda s: s.start)
        anchors = [Anchor(e.start, e.end, self._type(e.label_) == "anatomy") for e in ents]
        attached = attach(doc, self._modifiers(doc), anchors)
        findings: list[Finding] = []
        for ent, mods in zip(ents, attached, strict=True):
            categories = [m.category for m in ent._.modifiers]
            start, end = offsets[ent.start_char], offsets[ent.end_char - 1] + 1
            concept, name = self._concept(ent.label_)
            findings.append(
                Finding(
                    concept=concept,
                    name=name,
                    type=self._type(ent.label_),
                    text=text[start:end],
                    start=start,
                    end=end,
                    polarity=polarity_of(categories),  # type: ignore[arg-type]
                    context=context_of(categories),
                    modifiers=tuple(self._modifier(doc, m, text, offsets) for m in mods),
                )
            )
        return findings

    def _concept(self, label: str) -> tuple[str, str]:
        """Concept id and preferred name for a span label."""
        if label.startswith(TARGET_LABEL):
            key = label[len(TARGET_LABEL) :]
            return key, key
        concept = self.lexicon.concepts[label]
        return concept.id, concept.name

    def _type(self, label: str) -> str:
        """Concept type for a span label (``target`` for caller-supplied phrases)."""
        return TARGET_TYPE if label.startswith(TARGET_LABEL) else self.lexicon.concepts[label].type

    @staticmethod
    def _modifier(doc: Doc, mention: ModifierMention, text: str, offsets: list[int]) -> Modifier:
        """A Modifier record with character offsets into the original text."""
        span = doc[mention.start : mention.end]
        start, end = offsets[span.start_char], offsets[span.end_char - 1] + 1
        return Modifier(mention.category, mention.value, text[start:end], start, end)
