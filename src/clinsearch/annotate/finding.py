"""Finding records: a concept mention with polarity, context and modifiers.

A finding renders as a fine-grained finding pattern ([SyedaMahmood2021]), e.g.
``disease|present|pneumonia|right|lower lobe``: type, polarity, core concept, then the
modifier values in the fixed order of ``MODIFIER_ORDER``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Polarity = Literal["present", "absent", "uncertain"]
POLARITIES: tuple[Polarity, ...] = ("present", "absent", "uncertain")

MODIFIER_ORDER: tuple[str, ...] = ("laterality", "location", "severity", "temporal")
# Context flags: a finding carrying one is not asserted for this patient now ("mother had lung
# cancer", "history of pneumonia", "evaluate for pneumonia", "CLINICAL HISTORY: Fever." - the
# reason for the exam, not what the report finds); search and cohorts leave such findings out
# unless asked (``--context``). The flags are a set: "History of UTI." in the clinical history
# is historical and indication. New flags go last: indexes store them as bits in this order.
CONTEXTS: tuple[str, ...] = ("family", "historical", "hypothetical", "indication")
HYPOTHETICAL = "hypothetical"
FAMILY = "family"
NO_CONTEXT = "none"  # a section meaning: its findings are the report's own
# The trigger category of a de-identification mask right before a finding: uncertain, since
# the mask may hide a hedge or a "no", but no hedge of the radiologist's (``index.conclusion``).
MASKED = "MASKED_QUALIFIER"
TARGET_TYPE = "target"  # the type of a caller-supplied target's findings (annotate.phrase)


def section_flag(flag: str, fail: Callable[[str], Exception]) -> str:
    """``flag`` if it is a context flag or ``none`` (a section's meaning), else the error
    ``fail`` makes."""
    if flag not in (*CONTEXTS, NO_CONTEXT):
        raise fail(f"unknown context '{flag}' (allowed: {', '.join((*CONTEXTS, NO_CONTEXT))})")
    return flag


def section_flags(sections: Mapping[str, str], names: Sequence[str | None]) -> list[str | None]:
    """The context flag each section name gives its findings (``sections``: lower-case name ->
    flag, a corpus's section meanings), None for most."""
    return [sections.get((name or "").lower()) for name in names]


def asserted(context: Sequence[str], *, of_patient: bool = False) -> bool:
    """Whether a finding with these ConText flags is asserted: not hypothetical and, with
    ``of_patient``, not about a family member."""
    return HYPOTHETICAL not in context and not (of_patient and FAMILY in context)


@dataclass(frozen=True, slots=True)
class Modifier:
    """A modifier in the scope of a finding, normalised to the lexicon's value."""

    category: str  # laterality | location | severity | temporal
    value: str  # normalised, e.g. "right", "lower lobe", "mild", "new"
    text: str  # as written
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Trigger:
    """What made a finding other than present and asserted: the cue's words and span (offsets
    like the finding's; None for a section, which has no words in the sentence), the rule
    that fired (its literal in the rule file, e.g. "rule out"; ``section`` for a section's
    meaning) and its category (e.g. INDICATION, or SECTION with the section's name as text)."""

    rule: str
    category: str
    text: str
    start: int | None
    end: int | None


@dataclass(frozen=True, slots=True)
class Finding:
    """A concept mention in a sentence; offsets are relative to the annotated text."""

    concept: str  # the lexicon's concept id, e.g. "pneumonia"
    name: str  # preferred name, e.g. "pneumonia"
    type: str  # finding | disease | anatomy | device | technical
    text: str
    start: int
    end: int
    polarity: Polarity
    context: tuple[str, ...] = ()  # e.g. ("historical",), ("hypothetical",)
    modifiers: tuple[Modifier, ...] = ()
    trigger: Trigger | None = None  # the cue deciding a non-present or in-context reading

    @property
    def pattern(self) -> str:
        """The finding pattern ``type|polarity|concept|modifier values...``."""
        return "|".join([self.type, self.polarity, self.name, *modifier_values(self.modifiers)])


def modifier_values(modifiers: tuple[Modifier, ...]) -> list[str]:
    """Modifier values in pattern order: by category rank, then by position in the text."""
    rank = {c: i for i, c in enumerate(MODIFIER_ORDER)}
    ordered = sorted(modifiers, key=lambda m: (rank.get(m.category, len(rank)), m.start))
    seen: list[str] = []
    for m in ordered:
        if m.value not in seen:
            seen.append(m.value)
    return seen
