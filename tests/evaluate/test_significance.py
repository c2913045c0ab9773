"""Paired significance tests behave sanely: identical runs, consistent gains, pure noise."""

from __future__ import annotations

import numpy as np
import pytest

from clinsearch.evaluate.significance import paired_test


def test_identical_runs_are_not_different():
    t = paired_test([0.2, 0.5, 0.9], [0.2, 0.5, 0.9])
    assert (t.mean_difference, t.p_randomization, t.p_ttest) == (0.0, 1.0, 1.0)


def test_exact_randomization_p_for_a_consistent_gain():
    # 6 queries all +0.1: of the 2**6 sign flips only "all +" and "all -" are as extreme.
    t = paired_test([0.6, 0.7, 0.8, 0.5, 0.4, 0.3], [0.5, 0.6, 0.7, 0.4, 0.3, 0.2])
    assert t.mean_difference == pytest.approx(0.1)
    assert t.p_randomization == pytest.approx(2 / 64)
    assert t.p_ttest == 0.0


def test_large_shift_is_significant_and_noise_is_not():
    rng = np.random.default_rng(7)
    base = rng.random(60)
    better = np.clip(base + 0.15 + 0.05 * rng.standard_normal(60), 0, 1)
    t = paired_test(better, base)
    assert t.p_randomization < 0.001 and t.p_ttest < 0.001
    noise = paired_test(base, rng.permutation(base))
    assert noise.p_randomization > 0.05 and noise.p_ttest > 0.05


def test_randomization_is_reproducible_and_agrees_with_ttest():
    rng = np.random.default_rng(3)
    a, b = rng.random(40), rng.random(40)
    first, second = paired_test(a, b, seed=1), paired_test(a, b, seed=1)
    assert first == second
    assert first.p_randomization == pytest.approx(first.p_ttest, abs=0.05)


def test_too_few_queries_and_length_mismatch():
    assert np.isnan(paired_test([0.5], [0.2]).p_ttest)
    with pytest.raises(ValueError, match="differ in length"):
        paired_test([0.1, 0.2], [0.1])
