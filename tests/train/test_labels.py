"""Weak labels: query keys, phrasings, matching, de-duplication and the JSONL round trip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinsearch.errors import InputError
from clinsearch.train.labelfile import read_labels, write_labels
from clinsearch.train.labels import FindingFacts, LabelSentence, QueryKey, build_labels


def test_queries_and_their_matched_sentences(tiny_sentences: list[LabelSentence]) -> None:
    labels = build_labels(tiny_sentences)
    by_text = {q.key.text: set(q.sentence_ids) for q in labels.queries}
    assert by_text["no pneumothorax"] == {"r1#0", "r2#0"}
    assert by_text["pneumothorax"] == {"r2#1", "r6#0"}
    assert by_text["left pneumothorax"] == {"r6#0"}
    assert by_text["left pleural effusion"] == {"r1#1"}
    assert by_text["pleural effusion"] == {"r1#1", "r5#0"}
    assert labels.count("positive") + labels.count("negative") == len(labels.queries)
    assert labels.entries == sum(len(v) for v in by_text.values())
    assert set(labels.texts) == {s.id for s in tiny_sentences}


def test_phrasing_variants() -> None:
    pos = QueryKey("present", "pleural_effusion", "pleural effusion", ("left",))
    neg = QueryKey("absent", "pneumothorax", "pneumothorax")
    assert pos.text == "left pleural effusion"
    assert "presence of left pleural effusion" in pos.variants()
    assert "left pleural effusion is seen" in pos.variants()
    assert neg.variants()[:3] == (
        "no pneumothorax",
        "no evidence of pneumothorax",
        "absence of pneumothorax",
    )
    assert (pos.kind, neg.kind) == ("positive", "negative")


def test_uncertain_hypothetical_and_unwanted_findings_make_no_label() -> None:
    facts = (
        FindingFacts("pneumonia", "pneumonia", "disease", "uncertain"),
        FindingFacts("pneumonia", "pneumonia", "disease", "present", ("hypothetical",)),
        FindingFacts("pneumonia", "pneumonia", "disease", "uncertain", ("historical",)),
        FindingFacts("ett", "endotracheal tube", "device", "present"),
    )
    labels = build_labels([LabelSentence("a#0", "Evaluate for pneumonia.", facts)])
    assert labels.queries == ()
    with_devices = build_labels([LabelSentence("a#0", "ETT in place.", facts)], types=("device",))
    assert [q.key.text for q in with_devices.queries] == ["endotracheal tube"]


def test_duplicate_sentences_count_once() -> None:
    fact = (FindingFacts("pneumothorax", "pneumothorax", "finding", "absent"),)
    labels = build_labels(
        [
            LabelSentence("a#0", "No pneumothorax.", fact),
            LabelSentence("b#3", "no  pneumothorax", fact),
        ]
    )
    assert [q.sentence_ids for q in labels.queries] == [("a#0",)]
    both = build_labels(
        [
            LabelSentence("a#0", "No pneumothorax.", fact),
            LabelSentence("b#3", "no  pneumothorax", fact),
        ],
        dedupe=False,
    )
    assert both.queries[0].sentence_ids == ("a#0", "b#3")


def test_jsonl_round_trip_and_bad_lines(
    tmp_path: Path, tiny_sentences: list[LabelSentence]
) -> None:
    labels = build_labels(tiny_sentences)
    path = tmp_path / "labels.jsonl"
    write_labels(path, labels)
    assert read_labels(path) == labels.queries
    first = json.loads(path.read_text().splitlines()[0])
    assert first["variants"][0] == first["text"] and first["kind"] in ("positive", "negative")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text().splitlines()[0] + "\n{not json\n")
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        read_labels(bad)
    bad.write_text('{"polarity": "present", "concept": "x", "name": "x", "modifiers": []}\n')
    with pytest.raises(InputError, match="field 'sentences'"):
        read_labels(bad)
