"""Batching: opposite-polarity pairing puts "M" and "no M" sentences of a finding in one batch."""

from __future__ import annotations

import random

from clinsearch.train.batching import (
    epoch_batches,
    opposite_queries,
    training_pairs,
    training_queries,
    with_opposites,
)
from clinsearch.train.labels import LabelSentence, build_labels


def test_opposites_share_the_finding_and_its_modifiers(
    tiny_sentences: list[LabelSentence],
) -> None:
    queries = training_queries(build_labels(tiny_sentences).queries, phrasings=False)
    names = [q.variants[0] for q in queries]
    opposite = {
        names[i]: names[j] for i, j in enumerate(opposite_queries(queries)) if j is not None
    }
    assert opposite["pneumothorax"] == "no pneumothorax"
    assert opposite["no cardiomegaly"] == "cardiomegaly"
    assert "left pneumothorax" not in opposite  # nothing says "no left pneumothorax"


def test_each_pair_brings_a_sentence_of_its_opposite(tiny_sentences: list[LabelSentence]) -> None:
    queries = training_queries(build_labels(tiny_sentences).queries, phrasings=False)
    opposite = opposite_queries(queries)
    pairs = training_pairs(queries)
    paired = with_opposites(queries, pairs, random.Random(0))
    with_partner = [p for p in pairs if opposite[p.query] is not None]
    assert len(paired) == len(pairs) + len(with_partner)
    position = 0
    for pair in pairs:
        assert paired[position] == pair
        other = opposite[pair.query]
        if other is not None:
            partner = paired[position + 1]
            assert partner.query == other
            assert partner.text_id in queries[other].matched
            position += 1
        position += 1


def test_paired_batches_hold_both_polarities(tiny_sentences: list[LabelSentence]) -> None:
    labels = build_labels(tiny_sentences)
    queries = training_queries(labels.queries, phrasings=False)
    pairs = training_pairs(queries)
    plain = epoch_batches(queries, pairs, labels.texts, batch_size=2, seed=3)
    paired = epoch_batches(
        queries, pairs, labels.texts, batch_size=2, seed=3, pair_opposites=True
    )
    assert sum(len(b.queries) for b in paired) > sum(len(b.queries) for b in plain)
    both = [
        b for b in paired if {q.startswith("no ") for q in b.queries} == {True, False}
    ]
    assert len(both) >= len(paired) // 2
