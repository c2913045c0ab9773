"""Report-level comparison of predicted and gold concept sets, aware of the lexicon's hierarchy.

Predicted findings are reduced to the report's present concepts, lifted onto the concepts the gold
can contain (a concept outside that set counts as its nearest ancestors inside it), optionally
credited to a gold ancestor (a child counts for its parent), then scored per concept and overall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from clinsearch.annotate.finding import Finding, asserted
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.annotate.lexicon import Concept


def present_concepts(findings: Iterable[Finding], *, uncertain: bool = False) -> set[str]:
    """Concepts asserted present (or also hedged, with ``uncertain``), not hypothetical."""
    wanted = {"present", "uncertain"} if uncertain else {"present"}
    return {
        f.concept
        for f in findings
        if f.polarity in wanted and asserted(f.context, of_patient=True)
    }


def ancestors(concepts: Mapping[str, Concept], concept: str) -> list[set[str]]:
    """The ancestors of ``concept`` by distance: ``[parents, grandparents, ...]`` (no repeats;
    each at its shortest distance, as the lexicon's ``Hierarchy`` measures it)."""
    depths = _hierarchy(concepts).ancestors(concept)
    levels: list[set[str]] = [set() for _ in range(max(depths.values()))]
    for ancestor, depth in depths.items():
        if depth:
            levels[depth - 1].add(ancestor)
    return levels


_built: list[tuple[Mapping[str, Concept], Hierarchy]] = []  # the last concept table's


def _hierarchy(concepts: Mapping[str, Concept]) -> Hierarchy:
    """The ``Hierarchy`` of ``concepts``, built once per concept table (a benchmark asks for
    the ancestors of every predicted concept of every report: building it for each call cost
    time in proportion to the lexicon's size)."""
    if not _built or _built[0][0] is not concepts:
        _built[:] = [(concepts, Hierarchy({c: v.parents for c, v in concepts.items()}))]
    return _built[0][1]


def lift(
    concepts: Mapping[str, Concept], found: Iterable[str], targets: frozenset[str]
) -> set[str]:
    """Each found concept if it is a target, else its nearest ancestors among the targets."""
    out: set[str] = set()
    for c in found:
        if c in targets:
            out.add(c)
            continue
        for level in ancestors(concepts, c):
            if hits := level & targets:
                out |= hits
                break
    return out


def credit_to_gold(
    concepts: Mapping[str, Concept], predicted: set[str], gold: set[str]
) -> set[str]:
    """Predicted concepts; one missing from ``gold`` is replaced by its gold ancestors, if any."""
    out: set[str] = set()
    for c in predicted:
        if c in gold:
            out.add(c)
            continue
        hits = {a for level in ancestors(concepts, c) for a in level} & gold
        out |= hits or {c}
    return out


@dataclass(frozen=True, slots=True)
class PRF:
    """Counts and precision / recall / F1 of one concept or of the whole set."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        """tp / (tp + fp); 0 when nothing was predicted."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        """tp / (tp + fn); 0 when there is no gold."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class SetScores:
    """Per-concept true/false positives and false negatives accumulated over reports."""

    tp: Counter[str] = field(default_factory=Counter)
    fp: Counter[str] = field(default_factory=Counter)
    fn: Counter[str] = field(default_factory=Counter)

    def add(self, predicted: set[str], gold: set[str]) -> None:
        """Score one report's predicted set against its gold set."""
        self.tp.update(predicted & gold)
        self.fp.update(predicted - gold)
        self.fn.update(gold - predicted)

    def concept(self, concept: str) -> PRF:
        """Scores of one concept."""
        return PRF(self.tp[concept], self.fp[concept], self.fn[concept])

    @property
    def micro(self) -> PRF:
        """Scores pooled over all concepts."""
        return PRF(sum(self.tp.values()), sum(self.fp.values()), sum(self.fn.values()))

    def macro_f1(self, concepts: Sequence[str]) -> float:
        """Mean F1 over ``concepts``."""
        return sum(self.concept(c).f1 for c in concepts) / len(concepts) if concepts else 0.0

    def concepts(self) -> list[str]:
        """Every concept seen in gold or predictions, most gold first."""
        support = self.tp + self.fn
        names = set(self.tp) | set(self.fp) | set(self.fn)
        return sorted(names, key=lambda c: (-support[c], -self.fp[c], c))
