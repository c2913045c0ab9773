"""Polarity of finding mentions against BioScope's negation and speculation scopes.

BioScope's clinical sub-corpus marks, in the CMC 2007 radiology reports, negation and
speculation cues and their linguistic scopes (two linguists, written guidelines). An *item* is
a finding mention the annotator finds in a sentence: a lexicon concept of type finding, disease
or device named by its own words (anatomy words and technical terms are no findings to assert,
and the findings a normal statement about anatomy denies, "heart size is normal" ->
cardiomegaly absent, name none). Its gold class: ``negated`` when a negation scope contains the
whole mention, else ``speculated`` when a speculation scope does, else ``affirmed``. Negation
comes first as in our polarity: BioScope marks the "or" of "no infiltrate or effusion" as a
speculation cue inside the negation's scope, and a coder codes neither finding. A prediction
maps polarity onto the classes: absent -> negated, uncertain -> speculated, present ->
affirmed (context flags do not count: BioScope marks no history or family).

Where BioScope's conventions differ from ours (``CONVENTIONS``; docs: "What a finding counts
as"), items are flagged, not dropped, and scored both with and without them.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from clinsearch.annotate.annotator import NORMAL_STATE, Annotator
from clinsearch.annotate.context_rules import HEDGING_MODIFIER, INDICATION, WITHIN_NORMAL
from clinsearch.annotate.finding import Finding
from clinsearch.evaluate.finding_sets import PRF
from clinsearch.jsonl import read_json_lines

CLASSES = ("affirmed", "negated", "speculated")
POLARITY_CLASS = {"present": "affirmed", "absent": "negated", "uncertain": "speculated"}
ITEM_TYPES = frozenset({"finding", "disease", "device"})
# Our rules that read a finding as gone now (resolved, removed), which BioScope leaves affirmed.
RESOLUTION_RULES = frozenset({"resolved", "resolution of", "removal of", "has been removed",
                              "removed.", "no longer", "no longer seen"})
CONVENTIONS = {
    "normal statement": "BioScope marks no scope for '... within normal limits'; we deny",
    "resolution": "BioScope marks no scope for 'resolved', 'removal of'; we read absent now",
    "indication": "BioScope negates some 'rule out X'; we read the question as uncertain",
    "with or without": "BioScope negates X in 'with or without X'; we read it uncertain",
    "hedging modifier": "BioScope marks no cue in 'borderline X'; we read it uncertain",
    "no change": "BioScope negates X in 'no change in X'; we read X as still there",
}
NO_CHANGE = re.compile(r"\bno (?:significant |interval |appreciable )*change\b")
HALVES = ("tune", "held-out")


@dataclass(frozen=True, slots=True)
class Scope:
    """A BioScope scope: its type (negation, speculation), character span and cue words."""

    type: str
    start: int
    end: int
    cue: str


@dataclass(frozen=True, slots=True)
class ScopedSentence:
    """A BioScope sentence of a report, with its scopes."""

    doc_id: str
    sentence_id: str
    text: str
    scopes: tuple[Scope, ...]


@dataclass(frozen=True, slots=True)
class Item:
    """A finding mention with its gold class and the annotator's prediction."""

    sentence: ScopedSentence
    finding: Finding
    gold: str
    predicted: str
    convention: str  # "" or why BioScope's reading differs from ours by convention

    @property
    def half(self) -> str:
        """Which half of the items the document falls in (``split_half``)."""
        return split_half(self.sentence.doc_id)


def split_half(doc_id: str) -> str:
    """``tune`` or ``held-out``, by a hash of the document id: rules are chosen on one half and
    checked on the other. (The dev subset itself holds the ids whose plain SHA-256 is even, so
    the split hashes the id with a prefix.)"""
    digest = hashlib.sha256(f"clinsearch-split:{doc_id}".encode()).hexdigest()
    return HALVES[int(digest, 16) % 2]


def read_sentences(path: Path) -> list[ScopedSentence]:
    """The sentences of a ``bioscope_dev.jsonl`` file (doc_id, sentence_id, text, cues, scopes)."""
    out = []
    for _, obj in read_json_lines(path):
        cues = obj["cues"]
        scopes = tuple(
            Scope(s["type"], s["start"], s["end"], cues[s["cue_index"]]["text"].lower())
            for s in obj["scopes"]
        )
        out.append(ScopedSentence(str(obj["doc_id"]), str(obj["sentence_id"]), obj["text"], scopes))
    return out


def gold_class(sentence: ScopedSentence, start: int, end: int) -> tuple[str, Scope | None]:
    """The class of a mention at ``start:end`` and the scope deciding it (the innermost of
    its type): negated if a negation scope holds it, else speculated if a speculation scope
    does, else affirmed."""
    holding = [s for s in sentence.scopes if s.start <= start and end <= s.end]
    for kind, label in (("negation", "negated"), ("speculation", "speculated")):
        scopes = [s for s in holding if s.type == kind]
        if scopes:
            return label, min(scopes, key=lambda s: s.end - s.start)
    return "affirmed", None


def convention_of(gold: str, finding: Finding) -> str:
    """Which of ``CONVENTIONS`` makes BioScope's class of an item differ from ours ("" if
    none): told by the rule our trigger names."""
    trigger = finding.trigger
    if trigger is None or gold == POLARITY_CLASS[finding.polarity]:
        return ""
    if trigger.category == WITHIN_NORMAL:
        return "normal statement"
    if gold == "affirmed" and trigger.rule in RESOLUTION_RULES:
        return "resolution"
    if gold == "negated" and trigger.category == INDICATION:
        return "indication"
    if gold == "negated" and trigger.rule == "with or without":
        return "with or without"
    if gold == "affirmed" and trigger.category == HEDGING_MODIFIER:
        return "hedging modifier"
    return ""


def _no_change(gold: str, sentence: ScopedSentence, finding: Finding) -> str:
    """``no change`` when BioScope negates a finding our pseudo-negation "no change in" keeps."""
    if gold == "negated" and finding.polarity != "absent" and NO_CHANGE.search(
            sentence.text.lower()):
        return "no change"
    return ""


def items(sentences: Sequence[ScopedSentence], annotator: Annotator) -> list[Item]:
    """Every finding mention of ``sentences``, with its gold class and the prediction."""
    out = []
    found = annotator.annotate_many([s.text for s in sentences])
    for sentence, findings in zip(sentences, found, strict=True):
        for f in findings:
            if f.type not in ITEM_TYPES or (
                    f.trigger is not None and f.trigger.category == NORMAL_STATE):
                continue
            gold, _ = gold_class(sentence, f.start, f.end)
            convention = convention_of(gold, f) or _no_change(gold, sentence, f)
            out.append(Item(sentence, f, gold, POLARITY_CLASS[f.polarity], convention))
    return out


@dataclass(frozen=True, slots=True)
class Scores:
    """Accuracy and per-class counts (precision, recall, F1) of predictions against gold."""

    items: int
    accuracy: float
    classes: dict[str, PRF]


def score(pairs: Iterable[tuple[str, str]]) -> Scores:
    """Scores of (gold, predicted) class pairs."""
    counts = Counter(pairs)
    classes = {
        c: PRF(tp=counts[(c, c)],
               fp=sum(n for (g, p), n in counts.items() if p == c and g != c),
               fn=sum(n for (g, p), n in counts.items() if g == c and p != c))
        for c in CLASSES
    }
    total = sum(counts.values())
    correct = sum(n for (g, p), n in counts.items() if g == p)
    return Scores(total, correct / total if total else 0.0, classes)


def medspacy_predictions(found: Sequence[Item]) -> list[str]:
    """medspaCy's default ConText (its tokenizer, PyRuSH sentences, default rules) on the same
    mentions: negated -> negated, uncertain or hypothetical -> speculated, else affirmed."""
    import logging

    import medspacy

    logging.getLogger("PyRuSH").setLevel(logging.WARNING)
    try:  # PyRuSH logs every sentence through loguru when it is installed
        from loguru import logger

        logger.remove()
    except ImportError:
        pass
    nlp = medspacy.load(
        medspacy_enable=["medspacy_tokenizer", "medspacy_pyrush", "medspacy_context"])
    pipes = [proc for _, proc in nlp.pipeline]
    by_sentence: dict[tuple[str, str], list[int]] = {}
    for i, item in enumerate(found):
        by_sentence.setdefault((item.sentence.doc_id, item.sentence.sentence_id), []).append(i)
    out = ["affirmed"] * len(found)
    for positions in by_sentence.values():
        sentence = found[positions[0]].sentence
        doc = nlp.make_doc(sentence.text)
        spans = {i: doc.char_span(found[i].finding.start, found[i].finding.end,
                                  label="FINDING", alignment_mode="expand") for i in positions}
        doc.ents = _disjoint([s for s in spans.values() if s is not None])
        for proc in pipes:
            doc = proc(doc)
        classes = {(e.start, e.end): _medspacy_class(e) for e in doc.ents}
        for i, span in spans.items():
            if span is not None:
                out[i] = classes.get((span.start, span.end), "affirmed")
    return out


def _disjoint(spans: list) -> list:
    """Spans without overlaps (the earlier, then longer one kept), as ``doc.ents`` requires."""
    kept: list = []
    for span in sorted(spans, key=lambda s: (s.start, -len(s))):
        if not kept or span.start >= kept[-1].end:
            kept.append(span)
    return kept


def _medspacy_class(span: object) -> str:
    """The class medspaCy's ConText attributes give a target span."""
    if span._.is_negated:  # type: ignore[attr-defined]
        return "negated"
    if span._.is_uncertain or span._.is_hypothetical:  # type: ignore[attr-defined]
        return "speculated"
    return "affirmed"


