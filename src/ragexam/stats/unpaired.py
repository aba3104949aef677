"""B against A when they are not the same questions: an unpaired comparison of two independent groups.

:func:`unpaired_compare` is the unpaired counterpart of :func:`ragexam.stats.compare` (which pairs question by
question): two segments of production traffic that share too few questions (a model used last week, another this
week) are compared by their answers as two samples.

* ``diff`` = mean(b) - mean(a) (positive: B scores higher);
* its **percentile-bootstrap interval**: each group resampled on its own, with replacement, ``n_resamples`` times
  (group A from the first, group B from the second child stream of ``numpy.random.SeedSequence(seed)``, so the
  two are never drawn with the same indices), the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
  of the resampled differences;
* the **two-sided permutation test**: the group labels shuffled ``n_permutations`` times
  (``numpy.random.default_rng(seed)``), ``p = (count(|T*| >= |T|) + 1) / (n_permutations + 1)``, never 0, values
  equal up to rounding counted as extreme;
* the **minimum detectable difference** (normal approximation, Welch's standard error):
  ``(z_{1-alpha/2} + z_{power}) * sqrt(s_a^2 / n_a + s_b^2 / n_b)``; ``None`` when neither group varies (no
  spread gives no scale: as :func:`ragexam.stats.power.minimum_detectable_difference`);
* the verdict in the one wording of :func:`ragexam.stats.verdict.assess` (with ``n = min(n_a, n_b)``).

An unpaired comparison needs more data than a paired one for the same difference (the spread between questions
is not cancelled): say which one a number came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Optional, Sequence

import numpy as np

from ragexam.signature import Signature
from ragexam.stats.signed import Signed
from ragexam.stats._checks import (DEFAULT_SEED, _check_fraction, _check_int, _check_seed, _chunk_rows,
                                   _numeric)
from ragexam.stats.verdict import assess

__all__ = ["UnpairedComparison", "unpaired_compare", "unpaired_bootstrap_diff", "permutation_test"]


@dataclass(frozen=True)
class UnpairedComparison(Signed):
    """Group B against group A (:func:`unpaired_compare`); ``p_adjusted`` is the Holm-adjusted p-value when the
    comparison is one of a family (the verdict is then decided on it)."""

    names: tuple
    mean_a: float
    mean_b: float
    n_a: int
    n_b: int
    diff: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    alpha: float
    n_resamples: int
    n_permutations: int
    seed: int
    mdd: Optional[float]
    verdict: str
    reading: str
    p_adjusted: Optional[float] = None

    @property
    def signature(self) -> Signature:
        """``ci:percentile-2sample|conf:0.95|bs:2000|test:permutation|perm:10000|seed:12345|n_a:40|n_b:35|...``"""
        return Signature([("ci", "percentile-2sample"), ("conf", float(self.confidence)), ("bs", self.n_resamples),
                          ("test", "permutation"), ("perm", self.n_permutations), ("seed", self.seed),
                          ("n_a", self.n_a), ("n_b", self.n_b)]
                         + ([("mcc", "holm")] if self.p_adjusted is not None else []))


def _groups(a: Any, b: Any, func: str) -> tuple:
    return _numeric(a, func=func, param="a"), _numeric(b, func=func, param="b")


def unpaired_bootstrap_diff(a: Any, b: Any, *, n_resamples: int = 2000, confidence: float = 0.95,
                            seed: int = DEFAULT_SEED) -> tuple:
    """``(low, high)``: the percentile-bootstrap interval of mean(b) - mean(a), each group resampled on its own
    (module docstring)."""
    func = "unpaired_bootstrap_diff"
    a, b = _groups(a, b, func)
    n_resamples = _check_int(n_resamples, func=func, param="n_resamples", minimum=1)
    confidence = _check_fraction(confidence, func=func, param="confidence")
    seed = _check_seed(seed, func=func)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)]
    means = []
    for x, rng in zip((a, b), streams):
        chunk = _chunk_rows(n_resamples, x.size * 16)
        parts = [x[rng.integers(0, x.size, size=(min(chunk, n_resamples - s), x.size))].mean(axis=1)
                 for s in range(0, n_resamples, chunk)]
        means.append(np.concatenate(parts))
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means[1] - means[0], [tail, 1.0 - tail])
    return float(low), float(high)


def permutation_test(a: Any, b: Any, *, n_permutations: int = 10000, seed: int = DEFAULT_SEED) -> float:
    """The two-sided permutation-test p-value of mean(b) - mean(a) = 0 (module docstring)."""
    func = "permutation_test"
    a, b = _groups(a, b, func)
    n_permutations = _check_int(n_permutations, func=func, param="n_permutations", minimum=1)
    seed = _check_seed(seed, func=func)
    pooled = np.concatenate([a, b])
    total, n_b, n_a = float(pooled.sum()), b.size, a.size
    observed = abs(float(b.mean() - a.mean()))
    tol = (pooled.size + 1) * np.finfo(np.float64).eps * float(np.abs(pooled).sum()) / min(n_a, n_b)
    rng = np.random.default_rng(seed)
    chunk = _chunk_rows(n_permutations, pooled.size * 16)
    count = 0
    for start in range(0, n_permutations, chunk):
        order = rng.random((min(chunk, n_permutations - start), pooled.size)).argsort(axis=1)
        sum_b = pooled[order[:, :n_b]].sum(axis=1)
        stat = np.abs(sum_b / n_b - (total - sum_b) / n_a)
        count += int(np.count_nonzero(stat >= observed - tol))
    return (count + 1) / (n_permutations + 1)


def _mdd(a: np.ndarray, b: np.ndarray, alpha: float, power: float) -> Optional[float]:
    def spread(x: np.ndarray) -> float:  # a constant group has none (numpy's var of it may be 1e-33, not 0)
        return float(x.var(ddof=1)) / x.size if x.size > 1 and np.ptp(x) > 0 else 0.0

    var = spread(a) + spread(b)
    if var <= 0.0:
        return None
    z = NormalDist().inv_cdf
    return (z(1.0 - alpha / 2.0) + z(power)) * math.sqrt(var)


def unpaired_compare(a: Sequence[float], b: Sequence[float], *, names: tuple = ("A", "B"), alpha: float = 0.05,
                     power: float = 0.8, confidence: float = 0.95, n_resamples: int = 2000,
                     n_permutations: int = 10000, seed: int = DEFAULT_SEED) -> UnpairedComparison:
    """Group B against group A, two independent samples (module docstring).

    :param a: the values of group A (1-D, higher is better).
    :param b: the values of group B.
    :raises InputError: empty, NaN or non-numeric input, bad settings.
    """
    func = "unpaired_compare"
    x, y = _groups(a, b, func)
    alpha = _check_fraction(alpha, func=func, param="alpha")
    power = _check_fraction(power, func=func, param="power")
    low, high = unpaired_bootstrap_diff(x, y, n_resamples=n_resamples, confidence=confidence, seed=seed)
    p = permutation_test(x, y, n_permutations=n_permutations, seed=seed)
    mean_x, mean_y = math.fsum(x.tolist()) / x.size, math.fsum(y.tolist()) / y.size  # exact sums: the same values
    diff = mean_y - mean_x  # in another order are the same mean, not a difference of 1e-17
    mdd = _mdd(x, y, alpha, power)
    pair = (str(names[0]), str(names[1]))
    v = assess(diff, (low, high), p, min(x.size, y.size), mdd, alpha=alpha,
               confidence=confidence, names=pair, paired=False)
    return UnpairedComparison(pair, mean_x, mean_y, int(x.size), int(y.size), diff, low, high,
                              float(confidence), p, alpha, int(n_resamples), int(n_permutations), int(seed), mdd,
                              v.text, v.reading)
