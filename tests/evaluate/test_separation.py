"""Embedding separation with a real encoder (MiniLM) and with a known scoring function."""

from __future__ import annotations

import numpy as np
import pytest

from clinsearch.evaluate.separation import Labelled, cosine_scorer, finding_query, separation
from clinsearch.models.encoder import load_encoder

TRIPLES = [
    Labelled("No pneumothorax.", "pneumothorax", "absent"),
    Labelled("There is a small right pleural effusion.", "pleural effusion", "present"),
    Labelled("The heart is normal in size without cardiomegaly.", "cardiomegaly", "absent"),
    Labelled("Mild cardiomegaly is again noted.", "cardiomegaly", "present"),
    Labelled("Lungs are clear without focal consolidation.", "consolidation", "absent"),
    Labelled("Patchy left lower lobe consolidation.", "consolidation", "present"),
]


def test_query_forms():
    assert finding_query("edema", "present") == "edema"
    assert finding_query("edema", "absent") == "no edema"


def test_a_negation_aware_scorer_separates_fully():
    def score(queries, sentences):
        # 1 when the query's polarity matches the sentence's "no"/"without", else 0
        neg = [("no " in s.lower() or "without" in s.lower()) for s in sentences]
        return [float(q.startswith("no ") == n) for q, n in zip(queries, neg, strict=True)]

    result = separation(TRIPLES, score)
    assert (result.n, result.mean, result.std) == (6, 1.0, 0.0)


def test_a_negation_blind_scorer_separates_not_at_all():
    result = separation(TRIPLES, lambda q, s: np.ones(len(q)))
    assert result.mean == 0.0 and str(result) == "0.00±0.00 (n=6)"


def test_scorer_shape_is_checked():
    with pytest.raises(ValueError, match="one score per"):
        separation(TRIPLES, lambda q, s: [1.0])


@pytest.mark.slow
def test_minilm_separation_is_measured_on_real_sentences():
    encoder = load_encoder()  # the packaged all-MiniLM-L6-v2, offline
    result = separation(TRIPLES, cosine_scorer(encoder))
    assert result.n == 6
    assert all(-1.0 <= d <= 1.0 for d in result.differences)
    # An off-the-shelf encoder sees "no M" and "M" as near neighbours ([Shi2022], Table 3):
    assert abs(result.mean) < 0.3
    direct = cosine_scorer(encoder)(["pleural effusion"], [TRIPLES[1].sentence])[0]
    vectors = encoder.model.encode(["pleural effusion", TRIPLES[1].sentence])
    expected = np.dot(vectors[0], vectors[1]) / np.linalg.norm(vectors, axis=1).prod()
    assert direct == pytest.approx(float(expected), abs=1e-5)
