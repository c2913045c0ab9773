"""The annotator: concept mentions with polarity, context flags and modifiers, as Findings."""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import repeat

from medspacy.context import ConTextModifier
from spacy.tokens import Doc, Span

from clinsearch.annotate.anatomy_states import Span as StateSpan
from clinsearch.annotate.anatomy_states import StateWords
from clinsearch.annotate.context_rules import (
    ALTERNATIVE,
    HEDGING_MODIFIER,
    WITHIN_NORMAL,
    ListCue,
    applicable,
    context_of,
    deciding,
    hedging_modifiers,
    polarity_of,
    rule_name,
)
from clinsearch.annotate.finding import TARGET_TYPE, Finding, Modifier, Trigger
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.medspacy_pipeline import LazyConText, build_pipeline, spans_overlap
from clinsearch.annotate.modifiers import (
    SEGMENT_BREAKS,
    Anchor,
    Clauses,
    ModifierMatcher,
    ModifierMention,
    attach,
    inner_word_gaps,
    location_words,
    single_word_categories,
)
from clinsearch.annotate.pieces import PIECE_CHARS, cut
from clinsearch.annotate.surface import TextKeys, key_of, squeeze_spaces, text_keys
from clinsearch.annotate.surface_cache import cached_concept_index
from clinsearch.annotate.surface_index import SurfaceIndex

NORMAL_STATE = "NORMAL_STATE"  # the trigger category of a state word that rules findings out
TARGET_LABEL = "target:"  # span label prefix for caller-supplied target phrases
STATE_TYPE = "state"  # a state word's type while it is read (never a finding's)
TARGET_INDEXES = 32  # surface indexes of target phrases kept (each up to ~1 MB: see limits)
_WORDS = re.compile(r"\w+|[^\w\s]")  # words and punctuation marks, for segment breaks


class Annotator:
    """Finds a lexicon's concepts in text with ConText polarity, context flags and modifiers."""

    def __init__(self, lexicon: Lexicon | None = None, *, radiology_rules: bool = True) -> None:
        self.lexicon = lexicon if lexicon is not None else Lexicon.load()
        self.nlp = build_pipeline()
        self.context = LazyConText(self.nlp, radiology_rules=radiology_rules)
        self._concepts = cached_concept_index(self.lexicon)
        self._modifiers = ModifierMatcher(self.lexicon)
        self._states = StateWords(self.lexicon)
        self._inner_categories = {  # a word that is itself a concept term is never skipped
            word: cats
            for word, cats in single_word_categories(self.lexicon).items()
            if not self._concepts.lookup(word)
        }
        self._target_index = lru_cache(maxsize=TARGET_INDEXES)(_target_index)
        self._hedging = hedging_modifiers() if radiology_rules else frozenset()
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
        """Concept spans: caller targets first, then lexicon concepts that do not overlap them,
        then state words ("enlarged", "normal in size") in the words left."""
        spans: list[Span] = []
        taken: set[int] = set()
        indexes = [self._target_index(targets), self._concepts] if targets else [self._concepts]
        indexes.append(self._states.index)
        gaps = self._inner_words(keys)
        for index in indexes:
            for label, start, end in index.find_with_gaps(doc, keys,
                                                          () if index is self._states.index
                                                          else gaps):
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
        cues = [(m.modifier_span, m.category) for m in doc._.context_graph.modifiers]
        covers = [span for span, _ in cues] + [(m.start, m.end) for m in mentions]
        # "is normal" is both a state word and a ConText cue: the cue does not hide the state
        state_covers = [span for span, category in cues if category != WITHIN_NORMAL]
        state_covers += [(m.start, m.end) for m in mentions]
        ents = [
            e
            for e in sorted(doc.ents, key=lambda s: s.start)
            if e.label_.startswith(TARGET_LABEL)
            or not _covered((e.start, e.end),
                            state_covers if self._states.state(e.label_) else covers)
        ]
        spans = [StateSpan(e.start, e.end, self._type(e.label_) == "anatomy") for e in ents]
        skippable = frozenset(t for m in mentions for t in range(m.start, m.end))
        partners = {i: self._states.said_of(doc, spans, i, skippable)
                    for i, e in enumerate(ents) if self._states.state(e.label_)}
        # a state word said of no anatomy ("large" in "large effusion") is no mention at all
        kept = [i for i in range(len(ents)) if partners.get(i, True)]
        renumber = {old: new for new, old in enumerate(kept)}
        said_of = {renumber[i]: [renumber[a] for a in anatomies]
                   for i, anatomies in partners.items() if anatomies}
        ents, spans = [ents[i] for i in kept], [spans[i] for i in kept]
        # a state word anchors modifiers as an anatomy does: after the findings of its clause
        anchors = [
            Anchor(
                e.start,
                e.end,
                self._type(e.label_) in ("anatomy", STATE_TYPE),
                frozenset(self._concept(e.label_)[1].lower().split()),
            )
            for e in ents
        ]
        clauses = Clauses.of(doc)
        dropped = location_words(clauses, mentions, anchors)
        shown = [i for i in range(len(ents)) if i not in dropped]
        attached = dict(zip(shown, attach(doc, clauses, mentions, [anchors[i] for i in shown]),
                            strict=True))
        types = [self._type(e.label_) for e in ents]
        off_list = _off_list(doc, ents, types, skippable)
        findings: list[Finding] = []
        for i, ent in enumerate(ents):
            concept_type = types[i]
            cues = [m for m in ent._.modifiers
                    if not spans_overlap(m.modifier_span, (ent.start, ent.end))
                    and (i, tuple(m.modifier_span)) not in off_list]
            raw = [m.category for m in cues]
            categories = applicable(raw, concept_type)
            decided = deciding(categories)
            kept = [m for m in cues if m.category in categories]
            start, end = offsets[ent.start_char], offsets[ent.end_char - 1] + 1
            concept, name = self._concept(ent.label_)
            findings.append(Finding(
                concept=concept,
                name=name,
                type=concept_type,
                text=text[start:end],
                start=start,
                end=end,
                polarity=polarity_of(categories),  # type: ignore[arg-type]
                context=context_of(categories),
                modifiers=tuple(self._modifier(doc, m, text, offsets)
                                for m in attached.get(i, ())),
                trigger=None if decided is None else _trigger(doc, kept[decided], text, offsets),
            ))
        stated: dict[int, list[Finding]] = {}  # after the last of their words' mentions
        for i, anatomies in said_of.items():
            stated.setdefault(max(i, *anatomies), []).extend(
                self._stated(findings[i], ents[i].label_, [findings[a] for a in anatomies], text))
        out: list[Finding] = []
        for i, finding in enumerate(findings):
            if i not in said_of and i not in dropped:
                out.append(finding)
            out += stated.get(i, [])
        sentence_starts = [offsets[sent.start_char] for sent in doc.sents]
        return _hedged_alike(_alike_alternatives([self._hedged(f, text) for f in out]),
                             [bisect_right(sentence_starts, f.start) for f in out])

    def _hedged(self, finding: Finding, text: str) -> Finding:
        """``finding`` uncertain when it is present and a modifier of its own segment hedges it
        (the rule file's ``hedging_modifiers``: "borderline cardiomegaly"), that modifier its
        trigger. A hedge across a segment break is another finding's ("heart size upper limits
        of normal, aortic tortuosity": the tortuosity is not in doubt)."""
        if finding.polarity != "present" or finding.trigger is not None or (
                finding.type == "anatomy"):
            return finding
        for m in finding.modifiers:
            if (m.category, m.value) in self._hedging and not _segment_break_between(
                    text, (m.start, m.end), (finding.start, finding.end)):
                trigger = Trigger(f"{m.category}={m.value}", HEDGING_MODIFIER, m.text, m.start,
                                  m.end)
                return replace(finding, polarity="uncertain", trigger=trigger)
        return finding

    def _stated(self, word: Finding, label: str, anatomies: list[Finding],
                text: str) -> list[Finding]:
        """The findings a state word (read by ConText as ``word``) said of ``anatomies`` stands
        for: "heart is not enlarged" -> cardiomegaly absent, over the anatomy and state words,
        with both their modifiers. A state that rules its findings out ("normal") makes them
        absent, or uncertain when hedged; denied ("not normal") it says nothing."""
        state = self._states.state(label)
        assert state is not None
        polarity, trigger = word.polarity, word.trigger
        if state.polarity == "absent":
            if polarity == "absent":
                return []
            if polarity != "uncertain":
                polarity = "absent"
                trigger = Trigger(f"state {state.name}", NORMAL_STATE, word.text, word.start,
                                  word.end)
        out = []
        for anatomy in anatomies:
            start, end = min(anatomy.start, word.start), max(anatomy.end, word.end)
            modifiers = tuple(sorted({*anatomy.modifiers, *word.modifiers},
                                     key=lambda m: (m.start, m.category)))
            for cid in self.lexicon.concepts[anatomy.concept].findings_in(state.name):
                concept = self.lexicon.concepts[cid]
                out.append(replace(word, concept=cid, name=concept.name, type=concept.type,
                                   text=text[start:end], start=start, end=end,
                                   polarity=polarity, modifiers=modifiers,  # type: ignore[arg-type]
                                   trigger=trigger))
        return out

    def _concept(self, label: str) -> tuple[str, str]:
        """Concept id and preferred name for a span label (a state word: its state's name)."""
        if label.startswith(TARGET_LABEL):
            key = label[len(TARGET_LABEL) :]
            return key, key
        if state := self._states.state(label):
            return label, state.name
        concept = self.lexicon.concepts[label]
        return concept.id, concept.name

    def _type(self, label: str) -> str:
        """Concept type for a span label (``target`` for caller-supplied phrases, ``anatomy``
        for state words, so that ConText's normality cues leave them to their state)."""
        if label.startswith(TARGET_LABEL):
            return TARGET_TYPE
        if self._states.state(label):
            return STATE_TYPE
        return self.lexicon.concepts[label].type

    @staticmethod
    def _modifier(
        doc: Doc, mention: ModifierMention, text: str, offsets: Sequence[int]
    ) -> Modifier:
        """A Modifier record with character offsets into the original text."""
        span = doc[mention.start : mention.end]
        start, end = offsets[span.start_char], offsets[span.end_char - 1] + 1
        return Modifier(mention.category, mention.value, text[start:end], start, end)


def _off_list(doc: Doc, ents: Sequence[Span], types: Sequence[str],
              skippable: frozenset[int]) -> set[tuple[int, tuple[int, int]]]:
    """(finding index, cue span) pairs where a list cue (``ListCue``: "XXXX atelectasis,
    infiltrate or effusion") does not reach the finding: it is not in the list of findings
    right after the cue (joined by the cue's ``joins`` words, modifiers and anatomy alone), or
    that list is shorter than the cue's ``min_items``."""
    by_cue: dict[tuple[int, int], tuple[ListCue, list[int]]] = {}
    for i, ent in enumerate(ents):
        for m in ent._.modifiers:
            cue = ListCue.of(m.rule.metadata)
            if cue is not None and types[i] not in ("anatomy", STATE_TYPE):
                by_cue.setdefault(tuple(m.modifier_span), (cue, []))[1].append(i)
    if not by_cue:
        return set()
    passable = skippable | {t for i, e in enumerate(ents) if types[i] in ("anatomy", STATE_TYPE)
                            for t in range(e.start, e.end)}
    out: set[tuple[int, tuple[int, int]]] = set()
    for span, (cue, targets) in by_cue.items():
        items: list[int] = []
        at = span[1]
        for i in sorted(targets, key=lambda k: ents[k].start):
            gap = {doc[t].lower_ for t in range(at, ents[i].start) if t not in passable}
            if gap - cue.joins or (not items and gap) or (cue.types
                                                          and types[i] not in cue.types):
                break
            items.append(i)
            at = ents[i].end
        kept = items if len(items) >= cue.min_items else []
        out |= {(i, span) for i in targets if i not in kept}
    return out


def _hedged_alike(findings: list[Finding], sentences: list[int]) -> list[Finding]:
    """A sentence that hedges a concept hedges its other plain mentions of that concept on the
    same side: in "mildly enlarged cardiac silhouette; cardiomegaly versus pericardial
    effusion" the enlarged silhouette is the cardiomegaly in question (not "small left effusion,
    possible right effusion": another side is another finding). A hedge whose cue stands
    between the plain mention and it is a reading offered for what was seen ("foreign body,
    which may represent a bullet fragment"): the plain mention stays asserted."""
    hedges = [(s, f) for s, f in zip(sentences, findings, strict=True)
              if f.polarity == "uncertain" and not f.context and f.trigger is not None]
    if not hedges:
        return findings
    out = []
    for sentence, f in zip(sentences, findings, strict=True):
        if f.polarity == "present" and not f.context and f.trigger is None:
            sides = _sides(f)
            hedge = next((h for s, h in hedges if s == sentence and h.concept == f.concept
                          and (not sides or not _sides(h) or sides & _sides(h))
                          and not _offered_reading(f, h)), None)
            if hedge is not None:
                f = replace(f, polarity="uncertain", trigger=hedge.trigger)
        out.append(f)
    return out


def _alike_alternatives(findings: list[Finding]) -> list[Finding]:
    """Alternatives that all name one concept assert it: in "tortuosity and/or ectasia of the
    aorta" or "loculated fluid or effusion in the pleural space" only the wording differs."""
    by_cue: dict[tuple[int | None, int | None], set[str]] = {}
    count: Counter[tuple[int | None, int | None]] = Counter()
    for f in findings:  # an anatomy in the cue's scope is where, not an alternative
        if f.trigger is not None and f.trigger.category == ALTERNATIVE and f.type != "anatomy":
            key = (f.trigger.start, f.trigger.end)
            by_cue.setdefault(key, set()).add(f.concept)
            count[key] += 1
    alike = {k for k, concepts in by_cue.items() if len(concepts) == 1 and count[k] > 1}
    if not alike:
        return findings
    return [replace(f, polarity="present", trigger=None)
            if f.trigger is not None and f.trigger.category == ALTERNATIVE and f.type != "anatomy"
            and (f.trigger.start, f.trigger.end) in alike else f
            for f in findings]


def _offered_reading(seen: Finding, hedged: Finding) -> bool:
    """Whether ``hedged`` follows ``seen`` with its cue between them ("X, possibly Y", "X
    which may represent Y", "X and probable Y"): the hedge is of the reading, not of X."""
    cue = hedged.trigger
    return (cue is not None and cue.start is not None and cue.end is not None
            and seen.end <= cue.start and cue.end <= hedged.start)


def _segment_break_between(text: str, a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether a segment break word (``SEGMENT_BREAKS``: a comma, "and", "with", ...) lies
    in ``text`` between the character spans ``a`` and ``b`` (none when they overlap)."""
    gap = text[min(a[1], b[1]) : max(a[0], b[0])]
    return any(w in SEGMENT_BREAKS for w in _WORDS.findall(gap.lower()))


def _sides(finding: Finding) -> set[str]:
    """The laterality values of a finding's modifiers."""
    return {m.value for m in finding.modifiers if m.category == "laterality"}


def _trigger(doc: Doc, cue: ConTextModifier, text: str, offsets: Sequence[int]) -> Trigger:
    """The Trigger record of a ConText cue, with character offsets into the original text."""
    span = doc[cue.modifier_span[0] : cue.modifier_span[1]]
    start, end = offsets[span.start_char], offsets[span.end_char - 1] + 1
    return Trigger(rule_name(cue.rule), cue.category, text[start:end], start, end)


def _shifted(finding: Finding, offset: int) -> Finding:
    """``finding`` of a piece, with offsets into the whole text the piece starts ``offset`` in."""
    modifiers = tuple(
        replace(m, start=m.start + offset, end=m.end + offset) for m in finding.modifiers
    )
    trigger = finding.trigger
    if trigger is not None and trigger.start is not None and trigger.end is not None:
        trigger = replace(trigger, start=trigger.start + offset, end=trigger.end + offset)
    return replace(
        finding, start=finding.start + offset, end=finding.end + offset, modifiers=modifiers,
        trigger=trigger,
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


_BUILDING = threading.Lock()  # a thread asking while another builds an annotator waits for it


def annotator_for(lexicon_path: str | None = None) -> Annotator:
    """A shared Annotator for a lexicon file (None: the shipped one), built once per process
    (lru_cache alone may build one twice when two threads ask at once)."""
    with _BUILDING:
        return _built_annotator(lexicon_path)


@lru_cache(maxsize=4)
def _built_annotator(lexicon_path: str | None) -> Annotator:
    """``annotator_for``, built."""
    return Annotator(Lexicon.load(lexicon_path))
