"""Weak labels from lexicon findings ([Shi2022] section 2.2): "M" / "no M" queries, their sentences.

Each sentence's (polarity, finding) pairs become query keys; a key's matched sentences are every
sentence that asserts (or rules out) that finding. Keys may also carry one modifier value
("left pleural effusion"). Phrasing variants ("presence of M", "no evidence of M") serve as
training augmentation; the canonical "M" / "no M" form is used for evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from clinsearch.annotate.finding import Finding, Modifier, asserted, modifier_values

Kind = Literal["positive", "negative"]

POSITIVE_TEMPLATES: tuple[str, ...] = (
    "{m}",
    "presence of {m}",
    "{m} is seen",
    "evidence of {m}",
    "{m} is present",
)
NEGATIVE_TEMPLATES: tuple[str, ...] = (
    "no {m}",
    "no evidence of {m}",
    "absence of {m}",
    "{m} is not seen",
    "negative for {m}",
)
DEFAULT_TYPES: tuple[str, ...] = ("finding", "disease")
_POLARITY_KIND: dict[str, Kind] = {"present": "positive", "absent": "negative"}


@dataclass(frozen=True, slots=True)
class FindingFacts:
    """What labelling needs of a finding: concept, name, type, polarity, context, modifiers."""

    concept: str
    name: str
    type: str
    polarity: str
    context: tuple[str, ...] = ()
    modifiers: tuple[str, ...] = ()

    @classmethod
    def of(cls, finding: Finding) -> FindingFacts:
        """The facts of an annotator ``Finding``."""
        return cls(
            concept=finding.concept,
            name=finding.name,
            type=finding.type,
            polarity=finding.polarity,
            context=tuple(finding.context),
            modifiers=tuple(modifier_values(finding.modifiers)),
        )

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> FindingFacts:
        """The facts of a findings table row (its modifiers as records with a ``value``)."""
        modifiers = tuple(Modifier(**m) for m in row.get("modifiers") or ())
        return cls(
            concept=row["concept"],
            name=row["name"],
            type=row["type"],
            polarity=row["polarity"],
            context=tuple(row.get("context") or ()),
            modifiers=tuple(modifier_values(modifiers)),
        )


@dataclass(frozen=True, slots=True)
class LabelSentence:
    """A sentence (or passage) to label: id, text, findings, and the section it sits under."""

    id: str
    text: str
    findings: tuple[FindingFacts, ...]
    section: str = ""
    report_id: str = ""


@dataclass(frozen=True, slots=True, order=True)
class QueryKey:
    """A query surrogate ([Shi2022]): polarity and concept, optionally one modifier value."""

    polarity: str  # present | absent
    concept: str
    name: str
    modifiers: tuple[str, ...] = ()

    @property
    def kind(self) -> Kind:
        """``positive`` for "M" queries, ``negative`` for "no M" queries."""
        return _POLARITY_KIND[self.polarity]

    @property
    def qid(self) -> str:
        """A stable, readable query id, e.g. ``absent|pneumothorax|left``."""
        return "|".join([self.polarity, self.concept, *self.modifiers])

    @property
    def phrase(self) -> str:
        """The finding phrase M: modifier values before the name, e.g. ``left pleural effusion``."""
        return " ".join([*self.modifiers, self.name])

    @property
    def text(self) -> str:
        """The canonical query text: ``M`` or ``no M``."""
        return self.variants()[0]

    def variants(self) -> tuple[str, ...]:
        """All phrasings of this query, canonical first."""
        templates = POSITIVE_TEMPLATES if self.kind == "positive" else NEGATIVE_TEMPLATES
        return tuple(t.format(m=self.phrase) for t in templates)


@dataclass(frozen=True, slots=True)
class QueryLabel:
    """A query and the ids of every sentence it matches."""

    key: QueryKey
    sentence_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LabelSet:
    """Weak labels: queries with matched sentence ids, and the text of every labelled sentence."""

    queries: tuple[QueryLabel, ...]
    texts: dict[str, str] = field(default_factory=dict)

    def count(self, kind: Kind) -> int:
        """How many queries of a kind there are."""
        return sum(1 for q in self.queries if q.key.kind == kind)

    @property
    def entries(self) -> int:
        """The number of (query, matched sentence) pairs."""
        return sum(len(q.sentence_ids) for q in self.queries)


def keys_of(fact: FindingFacts, *, with_modifiers: bool = True) -> list[QueryKey]:
    """The query keys a finding answers: the bare finding, plus one key per modifier value."""
    base = QueryKey(fact.polarity, fact.concept, fact.name)
    if not with_modifiers:
        return [base]
    return [base, *(QueryKey(fact.polarity, fact.concept, fact.name, (m,)) for m in fact.modifiers)]


def usable(fact: FindingFacts, types: tuple[str, ...]) -> bool:
    """Whether a finding makes a label: asserted or ruled out (not uncertain), not hypothetical
    (the weak-label benchmark's rule), of a wanted type (any type when ``types`` is empty)."""
    return (
        fact.polarity in _POLARITY_KIND
        and asserted(fact.context)
        and (not types or fact.type in types)
    )


def normalise_text(text: str) -> str:
    """Text used to detect duplicate sentences: lower case, single spaces, no trailing period."""
    return re.sub(r"\s+", " ", text.strip().lower()).rstrip(" .")


def build_labels(
    sentences: Iterable[LabelSentence],
    *,
    types: tuple[str, ...] = DEFAULT_TYPES,
    with_modifiers: bool = True,
    dedupe: bool = True,
    min_matches: int = 1,
) -> LabelSet:
    """Group labelled sentences by query key ([Shi2022] section 2.2).

    With ``dedupe``, sentences with the same normalised text count once, under the first id seen
    (the paper prunes duplicates). Queries with fewer than ``min_matches`` sentences are dropped.
    """
    by_key: dict[QueryKey, list[str]] = {}
    texts: dict[str, str] = {}
    seen_text: dict[str, str] = {}
    for sentence in sentences:
        facts = [f for f in sentence.findings if usable(f, types)]
        if not facts:
            continue
        norm = normalise_text(sentence.text)
        if dedupe and norm in seen_text:
            continue
        seen_text[norm] = sentence.id
        texts[sentence.id] = sentence.text
        keys = {k for f in facts for k in keys_of(f, with_modifiers=with_modifiers)}
        for key in sorted(keys):
            by_key.setdefault(key, []).append(sentence.id)
    queries = tuple(
        QueryLabel(key, tuple(ids))
        for key, ids in sorted(by_key.items())
        if len(ids) >= min_matches
    )
    used = {sid for q in queries for sid in q.sentence_ids}
    return LabelSet(queries, {sid: t for sid, t in texts.items() if sid in used})
