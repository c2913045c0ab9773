"""Seeded synthetic corpora: the same seed gives the same reports; patients as asked."""

from __future__ import annotations

import pytest

from clinsearch.corpus.synthetic import synthetic_reports

POOL = {"findings": ["The lungs are clear.", "No pneumothorax."], "impression": ["Normal chest."]}


def test_same_seed_same_reports() -> None:
    first = [r.text for r in synthetic_reports(POOL, 5, seed=3)]
    assert first == [r.text for r in synthetic_reports(POOL, 5, seed=3)]


@pytest.mark.parametrize(("per_patient", "patients", "visits"), [(1, 6, 6), (3, 2, 4), (6, 1, 3)])
def test_reports_per_patient(per_patient: int, patients: int, visits: int) -> None:
    reports = list(synthetic_reports(POOL, 6, reports_per_patient=per_patient))
    assert len({r.patient_id for r in reports}) == patients
    assert len({r.visit_id for r in reports}) == visits


def test_reports_per_patient_must_be_positive() -> None:
    with pytest.raises(ValueError, match="reports_per_patient"):
        next(synthetic_reports(POOL, 1, reports_per_patient=0))
