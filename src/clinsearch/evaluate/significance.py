"""Paired significance tests between two systems' per-query scores (scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

TESTS = ("randomization", "ttest")


@dataclass(frozen=True, slots=True)
class PairedTest:
    """Mean per-query difference (a - b) and two-sided p-values of two paired tests."""

    n: int
    mean_difference: float
    p_randomization: float
    p_ttest: float

    def p(self, test: str) -> float:
        """The p-value of ``test`` (``randomization`` or ``ttest``)."""
        return self.p_randomization if test == "randomization" else self.p_ttest


def _mean_difference(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    """The statistic of the randomization test: mean paired difference."""
    return np.mean(x - y, axis=axis)


def paired_test(
    a: Sequence[float], b: Sequence[float], resamples: int = 10_000, seed: int = 0
) -> PairedTest:
    """Paired randomization (sign-flip permutation) test and paired t-test of ``a`` vs ``b``.

    The randomization test is exact when ``2**n <= resamples``; otherwise Monte Carlo with a
    fixed seed, so results are reproducible. With fewer than two queries both p-values are NaN.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.shape} vs {y.shape}")
    n = int(x.size)
    diff = x - y
    mean = float(diff.mean()) if n else math.nan
    if n < 2:
        return PairedTest(n, mean, math.nan, math.nan)
    rand = stats.permutation_test(
        (x, y),
        _mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    if np.allclose(diff, diff[0], rtol=0, atol=1e-12):  # no variance: t is 0/0 or infinite
        p_t = 1.0 if abs(diff[0]) <= 1e-12 else 0.0
    else:
        p_t = float(stats.ttest_rel(x, y).pvalue)
    return PairedTest(n, mean, float(rand.pvalue), p_t)
