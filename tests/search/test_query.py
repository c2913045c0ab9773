"""Query understanding: polarity, modifiers, synonyms, alternatives and unknown words."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.search.query_parser import MAP_THRESHOLD, QueryParser
from clinsearch.search.vocabulary import TermVectors


def test_modifiers_and_polarity(parser: QueryParser) -> None:
    q = parser.parse("right lower lobe pneumonia")
    assert q.patterns == ["disease|present|pneumonia|right|lower lobe"]
    assert q.mappings == ()
    assert parser.parse("no pneumothorax").patterns == ["finding|absent|pneumothorax"]
    assert parser.parse("possible pneumonia").patterns == ["disease|uncertain|pneumonia"]
    assert parser.parse("RLL pneumonia").patterns == ["disease|present|pneumonia|right|lower lobe"]


def test_synonyms_resolve_through_the_lexicon(parser: QueryParser) -> None:
    q = parser.parse("enlarged heart")
    assert [f.concept for g in q.groups for f in g] == ["cardiomegaly"]
    assert parser.parse("chest infection").groups[0][0].concept == "pneumonia"


def test_or_makes_alternative_groups_and_with_keeps_one_group(parser: QueryParser) -> None:
    q = parser.parse("copd or pleural effusion or pneumothorax")
    assert [[f.concept for f in g] for g in q.groups] == [["pleural_effusion"], ["pneumothorax"]]
    both = parser.parse("pneumonia with pleural effusion")
    assert [[f.concept for f in g] for g in both.groups] == [["pneumonia", "pleural_effusion"]]


def test_unknown_words_map_to_the_nearest_lexicon_terms(parser: QueryParser) -> None:
    q = parser.parse("fluid overload")
    (mapping,) = q.mappings
    assert (mapping.phrase, mapping.start, mapping.end) == ("fluid overload", 0, 14)
    assert len(mapping.nearest) == 3
    sims = [s for _, s in mapping.nearest]
    assert sims == sorted(sims, reverse=True)
    assert mapping.used == (sims[0] >= MAP_THRESHOLD)
    if mapping.used:
        assert q.groups[0][0].concept == mapping.nearest[0][0].ref


def test_unknown_word_beside_known_finding_keeps_the_finding(parser: QueryParser) -> None:
    q = parser.parse("zebra pneumothorax")
    assert "pneumothorax" in [f.concept for g in q.groups for f in g]
    assert [m.phrase for m in q.mappings] == ["zebra"]


def test_function_words_and_cues_are_not_unknown(parser: QueryParser) -> None:
    q = parser.parse("no evidence of pneumonia at the right base")
    assert q.mappings == ()
    assert q.patterns == ["disease|absent|pneumonia|right|base"]


def test_term_vectors_are_cached_per_lexicon(lexicon: Lexicon, tmp_path: Path) -> None:
    class Counting:
        fingerprint = "test-encoder"
        calls = 0

        def encode_queries(self, texts: list[str]) -> np.ndarray:
            Counting.calls += 1
            rng = np.random.default_rng(len(texts))
            v = rng.normal(size=(len(texts), 8)).astype(np.float32)
            return v / np.linalg.norm(v, axis=1, keepdims=True)

    first = TermVectors.for_lexicon(lexicon, Counting(), tmp_path)
    second = TermVectors.for_lexicon(lexicon, Counting(), tmp_path)
    assert Counting.calls == 1
    assert np.array_equal(first.vectors, second.vectors)
    assert len(list(tmp_path.iterdir())) == 1
    assert first.vector("Enlarged Heart") is not None
    assert first.vector("zebra") is None
