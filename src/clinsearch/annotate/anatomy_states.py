"""Anatomy x state: a state word said of an anatomy is the finding the lexicon maps it to.

"The heart is not enlarged" -> cardiomegaly absent, "enlarged liver" -> hepatomegaly present,
"no dilatation of the collecting system" -> hydronephrosis absent, "normal heart size" ->
cardiomegaly absent. The lexicon's ``anatomy_states`` hold the state words (each state present
or absent) and the words that may stand between an anatomy and its state; an anatomy concept's
``states`` say which findings each state stands for (docs/reference/lexicon.md). State words
are found like concept terms and read by ConText like any finding, so negation and hedges apply
to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spacy.tokens import Doc

from clinsearch.annotate.lexicon import AnatomyState, Lexicon, StateVocabulary
from clinsearch.annotate.surface_cache import cached_index
from clinsearch.annotate.surface_index import SurfaceIndex

STATE_LABEL = "state:"  # span label prefix of state words


@dataclass(frozen=True, slots=True)
class Span:
    """A mention's token span, and whether it is an anatomy concept."""

    start: int
    end: int
    anatomy: bool


class StateWords:
    """Finds the lexicon's state words and pairs each with the anatomies it is said of."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.vocabulary: StateVocabulary = lexicon.anatomy_states
        self.index: SurfaceIndex = cached_index(
            [(word, STATE_LABEL + state.name)
             for state in self.vocabulary.states.values() for word in state.words])

    def state(self, label: str) -> AnatomyState | None:
        """The state a span label names, or None for any other label."""
        if not label.startswith(STATE_LABEL):
            return None
        return self.vocabulary.states[label[len(STATE_LABEL):]]

    def said_of(self, doc: Doc, spans: Sequence[Span], state: int,
                skippable: frozenset[int]) -> list[int]:
        """The anatomy spans the state word ``spans[state]`` is said of, in its sentence: the
        anatomy before it with only link words (or ``skippable`` modifier words) between ("heart
        is not enlarged"), else the one after it ("enlarged liver", "dilatation of the
        collecting system"), each with the anatomies coordinated with it ("liver and spleen")."""
        ends = {s.end: i for i, s in enumerate(spans) if s.anatomy}
        starts = {s.start: i for i, s in enumerate(spans) if s.anatomy}
        word = spans[state]
        lo = word.start
        while lo > 0 and not doc[lo].is_sent_start:
            lo -= 1
        hi = word.end
        while hi < len(doc) and not doc[hi].is_sent_start:
            hi += 1
        before = self._chain(doc, range(word.start - 1, lo - 1, -1), ends, spans, skippable)
        return before or self._chain(doc, range(word.end, hi), starts, spans, skippable)

    def _chain(self, doc: Doc, tokens: range, edges: dict[int, int], spans: Sequence[Span],
               skippable: frozenset[int]) -> list[int]:
        """Anatomies reached walking ``tokens`` (one sentence, away from the state word): link
        words, then an anatomy, then coordinated anatomies (coordinator, link words, anatomy)."""
        links, coordinators = self.vocabulary.links, self.vocabulary.coordinators
        backward = tokens.step < 0
        out: list[int] = []
        joined = True  # the first anatomy needs no coordinator before it
        t = tokens.start
        while t in tokens:
            edge = t + 1 if backward else t
            if joined and edge in edges:
                i = edges[edge]
                out.append(i)
                t = spans[i].start - 1 if backward else spans[i].end
                joined = False
                continue
            lower = doc[t].lower_
            if lower in coordinators and out:
                joined = True
            elif not (lower in links or t in skippable):
                break
            t += tokens.step
        return out
