"""The annotator: concept mentions with polarity, context flags and modifiers, as Findings."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import repeat

from spacy.tokens import Doc, Span

from clinsearch.annotate.context_rules import applicable, context_of, polarity_of, states_normal
from clinsearch.annotate.finding import Finding, Modifier
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.medspacy_pipeline import LazyConText, build_pipeline, spans_overlap
from clinsearch.annotate.modifiers import (
    Anchor,
    Clauses,
    ModifierMatcher,
    ModifierMention,
    attach,
    inner_word_gaps,
    location_words,
    single_word_categories,
)
from clinsearch.annotate.phrase import TARGET_TYPE
from clinsearch.annotate.pieces import PIECE_CHARS, cut
from clinsearch.annotate.surface import TextKeys, key_of, squeeze_spaces, text_keys
from clinsearch.annotate.surface_cache import cached_concept_index
from clinsearch.annotate.surface_index import SurfaceIndex

TARGET_LABEL = "target:"  # span label prefix for caller-supplied target phrases


class Annotator:
    """Finds a lexicon's concepts in text with ConText polarity, context flags and modifiers."""

    def __init__(self, lexicon: Lexicon | None = None, *, radiology_rules: bool = True) -> None:
        self.lexicon = lexicon if lexicon is not None else Lexicon.load()
        self.nlp = build_pipeline()
        self.context = LazyConText(self.nlp, radiology_rules=radiology_rules)
        self._concepts = cached_concept_index(self.lexicon)
        self._modifiers = ModifierMatcher(self.lexicon)
        self._inner_categories = {  # a word that is itself a concept term is never skipped
            word: cats
            for word, cats in single_word_categories(self.lexicon).items()
            if not self._concepts.lookup(word)
        }
        self._target_index = lru_cache(maxsize=256)(_target_index)
        self.long_sentences = 0  # texts annotated since creation with a sentence cut in pieces

    def annotate(self, text: str, targets: Sequence[str] = ()) -> list[Finding]:
        """The findings in ``text``; ``targets`` are extra phrases to find (they win overlaps)."""
        return next(self.annotate_many([text], [targets]))

    def cues(self, text: str) -> list[tuple[int, int, str]]:
        """The ConText cues of ``text`` as (start, end, category), by the rules that read
        findings ("no" NEGATED_EXISTENCE in "no free air")."""
        clean, offsets = squeeze_spaces(text)
        doc = self.context(next(self.nlp.pipe([self.nlp.make_doc(clean)])))
        out = []
        for m in doc._.context_graph.modifiers:
            span = doc[m.modifier_span[0] : m.modifier_span[1]]
            out.append((offsets[span.start_char], offsets[span.end_char - 1] + 1, m.category))
        return sorted(out)

    def annotate_many(
        self,
        texts: Iterable[str],
        targets: Iterable[Sequence[str]] | None = None,
        batch_size: int = 256,
    ) -> Iterator[list[Finding]]:
        """Findings for each text, in order, processed in batches by ``nlp.pipe``.

        ``targets``, if given, holds one sequence of extra phrases per text (same length).
        A long text is annotated in pieces (see ``annotate.pieces``), so time stays linear in
        its length; texts with a sentence too long for one piece add to ``long_sentences``.
        """
        pairs: Iterable[tuple[str, Sequence[str]]] = (
            zip(texts, targets, strict=True) if targets is not None else zip(texts, repeat(()))
        )
        plan: deque[tuple[int, bool]] = deque()  # each piece's offset, and if its text ends

        def pieces() -> Iterator[tuple[str, Sequence[str]]]:
            for text, extra in pairs:
                cuts = cut(text, min(PIECE_CHARS, self.nlp.max_length))
                self.long_sentences += cuts.long_sentence
                bounds = (*cuts.starts, len(text))
                for i, start in enumerate(cuts.starts):
                    plan.append((start, i == len(cuts.starts) - 1))
                    yield text[start : bounds[i + 1]], extra

        findings: list[Finding] = []
        for piece_findings in self._annotate_pieces(pieces(), batch_size):
            offset, last = plan.popleft()
            findings += [_shifted(f, offset) for f in piece_findings] if offset else piece_findings
            if last:
                yield findings
                findings = []

    def _annotate_pieces(
        self, pairs: Iterable[tuple[str, Sequence[str]]], batch_size: int
    ) -> Iterator[list[Finding]]:
        """Findings for each (text, targets) pair, in order, by ``nlp.pipe``."""
        squeezed: deque[tuple[str, Sequence[int]]] = deque()
        prepared_keys: deque[TextKeys] = deque()

        def prepared() -> Iterator[Doc]:
            for text, extra in pairs:
                clean, offsets = squeeze_spaces(text)
                squeezed.append((text, offsets))
                doc = self.nlp.make_doc(clean)
                keys = text_keys(doc)
                doc.ents = self._spans(doc, keys, tuple(extra))
                prepared_keys.append(keys)
                yield doc

        for doc in self.nlp.pipe(prepared(), batch_size=batch_size):
            text, offsets = squeezed.popleft()
            yield self._findings(self.context(doc), prepared_keys.popleft(), text, offsets)

    def _spans(self, doc: Doc, keys: TextKeys, targets: tuple[str, ...]) -> list[Span]:
        """Concept spans: caller targets first, then lexicon concepts that do not overlap them."""
        spans: list[Span] = []
        taken: set[int] = set()
        indexes = [self._target_index(targets), self._concepts] if targets else [self._concepts]
        gaps = self._inner_words(keys)
        for index in indexes:
            for label, start, end in index.find_with_gaps(doc, keys, gaps):
                if taken.isdisjoint(range(start, end)):
                    spans.append(Span(doc, start, end, label=label))
                    taken.update(range(start, end))
        return sorted(spans, key=lambda s: s.start)

    def _inner_words(self, keys: TextKeys) -> tuple[frozenset[int], ...]:
        """Token positions a term may be matched across (see ``inner_word_gaps``)."""
        return inner_word_gaps(keys, self._inner_categories)

    def _findings(
        self, doc: Doc, keys: TextKeys, text: str, offsets: Sequence[int]
    ) -> list[Finding]:
        """Findings of an annotated ``doc``, offsets mapped back to the original ``text``.

        A concept whose words are all part of a ConText cue ("excluded" in "cannot be excluded")
        or of a longer modifier ("lobe" in "right lower lobe") is not a finding, nor is an
        anatomy word that locates another finding ("opacity in the lingula"); a cue that
        overlaps a finding's own words does not modify it.
        """
        mentions = self._modifiers(doc, keys)
        covers = [m.modifier_span for m in doc._.context_graph.modifiers]
        covers += [(m.start, m.end) for m in mentions]
        ents = [
            e
            for e in sorted(doc.ents, key=lambda s: s.start)
            if e.label_.startswith(TARGET_LABEL) or not _covered((e.start, e.end), covers)
        ]
        anchors = [
            Anchor(
                e.start,
                e.end,
                self._type(e.label_) == "anatomy",
                frozenset(self._concept(e.label_)[1].lower().split()),
            )
            for e in ents
        ]
        clauses = Clauses.of(doc)
        dropped = location_words(clauses, mentions, anchors)
        ents = [e for i, e in enumerate(ents) if i not in dropped]
        anchors = [a for i, a in enumerate(anchors) if i not in dropped]
        attached = attach(doc, clauses, mentions, anchors)
        findings: list[Finding] = []
        for ent, mods in zip(ents, attached, strict=True):
            concept_type = self._type(ent.label_)
            raw = [
                m.category
                for m in ent._.modifiers
                if not spans_overlap(m.modifier_span, (ent.start, ent.end))
            ]
            categories = applicable(raw, concept_type)
            start, end = offsets[ent.start_char], offsets[ent.end_char - 1] + 1
            concept, name = self._concept(ent.label_)
            finding = Finding(
                concept=concept,
                name=name,
                type=concept_type,
                text=text[start:end],
                start=start,
                end=end,
                polarity=polarity_of(categories),  # type: ignore[arg-type]
                context=context_of(categories),
                modifiers=tuple(self._modifier(doc, m, text, offsets) for m in mods),
            )
            findings.append(finding)
            if concept_type == "anatomy" and states_normal(raw):
                findings += self._denied(finding)
        return findings

    def _denied(self, anatomy: Finding) -> list[Finding]:
        """The findings a normal statement about ``anatomy`` rules out (the lexicon's
        ``normal_denies``): "heart size is normal" -> cardiomegaly absent, at the same words."""
        out = []
        for cid in self.lexicon.concepts[anatomy.concept].normal_denies:
            denied = self.lexicon.concepts[cid]
            out.append(replace(anatomy, concept=cid, name=denied.name, type=denied.type,
                               polarity="absent"))
        return out

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
    def _modifier(
        doc: Doc, mention: ModifierMention, text: str, offsets: Sequence[int]
    ) -> Modifier:
        """A Modifier record with character offsets into the original text."""
        span = doc[mention.start : mention.end]
        start, end = offsets[span.start_char], offsets[span.end_char - 1] + 1
        return Modifier(mention.category, mention.value, text[start:end], start, end)


def _shifted(finding: Finding, offset: int) -> Finding:
    """``finding`` of a piece, with offsets into the whole text the piece starts ``offset`` in."""
    modifiers = tuple(
        replace(m, start=m.start + offset, end=m.end + offset) for m in finding.modifiers
    )
    return replace(
        finding, start=finding.start + offset, end=finding.end + offset, modifiers=modifiers
    )


def _covered(span: tuple[int, int], covers: list[tuple[int, int]]) -> bool:
    """Whether a longer span in ``covers`` contains ``span``."""
    return any(
        c[0] <= span[0] and span[1] <= c[1] and c[1] - c[0] > span[1] - span[0] for c in covers
    )


def _target_index(targets: tuple[str, ...]) -> SurfaceIndex:
    """A surface index of caller-supplied target phrases, labelled by their normalised text."""
    index = SurfaceIndex()
    for phrase in targets:
        key = " ".join(key_of(phrase))
        if key:
            index.add_term(phrase, TARGET_LABEL + key)
    return index


@lru_cache(maxsize=4)
def annotator_for(lexicon_path: str | None = None) -> Annotator:
    """A shared Annotator for a lexicon file (None: the shipped one), built once per process."""
    return Annotator(Lexicon.load(lexicon_path))
