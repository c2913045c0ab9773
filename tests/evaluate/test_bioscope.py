"""The BioScope items: gold classes from scopes, predictions, convention flags and scores."""

from __future__ import annotations

import json

import pytest

from clinsearch.annotate.annotator import annotator_for
from clinsearch.evaluate.bioscope import (
    HALVES,
    items,
    medspacy_predictions,
    read_sentences,
    score,
    split_half,
)


def sentence(doc_id: str, text: str, *scopes: tuple[str, str, str]) -> dict:
    """A BioScope JSONL object; each scope is (type, cue words, scope words) found in text."""
    cues, spans = [], []
    for kind, cue, words in scopes:
        start = text.index(cue)
        cues.append({"type": kind, "start": start, "end": start + len(cue), "text": cue})
        at = text.index(words)
        spans.append({"type": kind, "start": at, "end": at + len(words),
                      "cue_index": len(cues) - 1})
    return {"doc_id": doc_id, "sentence_id": "S1", "text": text, "cues": cues, "scopes": spans}


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> list:
    path = tmp_path_factory.mktemp("bioscope") / "dev.jsonl"
    rows = [
        sentence("1", "No infiltrate or effusion.",
                 ("negation", "No", "No infiltrate or effusion"),
                 ("speculation", "or", "infiltrate or effusion")),
        sentence("2", "Atelectasis or pneumonia.",
                 ("speculation", "or", "Atelectasis or pneumonia")),
        sentence("3", "Findings consistent with pneumonia.",
                 ("speculation", "consistent", "consistent with pneumonia")),
        sentence("4", "Right lower lobe pneumonia."),
        sentence("5", "Heart size is normal."),
        sentence("6", "No change in the left pleural effusion.",
                 ("negation", "No change", "No change in the left pleural effusion")),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return items(read_sentences(path), annotator_for(None))


def test_gold_classes_predictions_and_conventions(found: list) -> None:
    got = [(i.sentence.doc_id, i.finding.concept, i.gold, i.predicted, i.convention)
           for i in found]
    assert got == [
        # negation comes first: the "or" of a negated list is no speculation to a coder
        ("1", "infiltrate", "negated", "negated", ""),
        ("1", "pleural_effusion", "negated", "negated", ""),
        ("2", "atelectasis", "speculated", "speculated", ""),
        ("2", "pneumonia", "speculated", "speculated", ""),
        # coders and BioScope alike read "consistent with" as a hedge
        ("3", "pneumonia", "speculated", "speculated", ""),
        ("4", "pneumonia", "affirmed", "affirmed", ""),
        # "heart size is normal" denies cardiomegaly at anatomy words: no mention, no item
        ("6", "pleural_effusion", "negated", "affirmed", "no change"),
    ]


def test_scores_and_halves(found: list) -> None:
    scores = score((i.gold, i.predicted) for i in found)
    assert scores.items == 7 and scores.accuracy == pytest.approx(6 / 7)
    assert scores.classes["speculated"].recall == 1.0
    assert scores.classes["negated"].recall == pytest.approx(2 / 3)
    assert {split_half(str(n)) for n in range(20)} == set(HALVES)
    assert split_half("97638202") == split_half("97638202")


def test_medspacy_default_context_reads_the_same_mentions(found: list) -> None:
    predicted = medspacy_predictions(found)
    assert predicted[:2] == ["negated", "negated"] and predicted[5] == "affirmed"
