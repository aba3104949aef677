"""The paired approximate randomization (sign-flip) test of mean(b - a) = 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ragexam.signature import Signature
from ragexam.stats.signed import Signed
from ragexam.stats._checks import (DEFAULT_SEED, _check_alternative, _check_int, _check_seed, _chunk_rows,
                                   _paired)

__all__ = ["RandomizationTest", "paired_randomization_test", "Alternative"]

Alternative = Literal["two-sided", "greater", "less"]


@dataclass(frozen=True)
class RandomizationTest(Signed):
    """Result of :func:`paired_randomization_test`.

    ``diff`` is mean(b - a) over all ``n`` questions; ``n_nonzero`` counts questions whose
    difference is not 0 (only those can change sign).  ``method`` is ``"exact"`` when all
    ``2**n_nonzero`` sign patterns were enumerated, else ``"approximate"``;
    ``n_permutations`` is the number of sign patterns actually evaluated (``2**n_nonzero``
    for the exact test).  ``seed`` is recorded in both cases but only used by the
    approximate test.
    """

    diff: float
    p_value: float
    method: str
    alternative: str
    n: int
    n_nonzero: int
    n_permutations: int
    seed: int

    @property
    def signature(self) -> Signature:
        """The settings that produced this result, e.g.
        ``test:paired-randomization|method:exact|alt:two-sided|perm:1024|seed:12345|n:10|version:ragexam-0.1.0``.
        """
        return Signature([("test", "paired-randomization"), ("method", self.method), ("alt", self.alternative),
                          ("perm", self.n_permutations), ("seed", self.seed), ("n", self.n)])


def _count_extreme(perm: np.ndarray, observed: float, tol: float, alternative: str) -> int:
    if alternative == "two-sided":
        return int(np.count_nonzero(np.abs(perm) >= abs(observed) - tol))
    if alternative == "greater":
        return int(np.count_nonzero(perm >= observed - tol))
    return int(np.count_nonzero(perm <= observed + tol))


def paired_randomization_test(a: Any, b: Any, *, n_permutations: int = 10000,
                              seed: int = DEFAULT_SEED,
                              alternative: Alternative = "two-sided") -> RandomizationTest:
    """Paired approximate randomization (sign-flip) test of mean(b - a) = 0.

    Definition: ``d_i = b_i - a_i``; the statistic is ``T(s) = sum_i s_i d_i`` over sign
    vectors ``s`` in {-1, +1}^n (swapping a question's A and B flips its sign), observed at
    ``s = (1, ..., 1)``.  Questions with ``d_i = 0`` are left out of the sign patterns (their
    flip changes nothing); ``m`` is the number of the others.  "Extreme" means
    ``|T(s)| >= |T_obs|`` (two-sided), ``T(s) >= T_obs`` (``"greater"``: B higher) or
    ``T(s) <= T_obs`` (``"less"``), where values equal up to floating-point rounding
    (``(m + 1) * eps * sum|d_i|``) count as equal, i.e. as extreme.

    * Exact (``method="exact"``), used when ``2**m <= n_permutations``: all ``2**m`` sign
      patterns are enumerated and ``p = count(extreme) / 2**m``.  The observed pattern is one
      of them, so ``p >= 2**-m``; with no nonzero differences ``p = 1``.
    * Approximate (``method="approximate"``): ``n_permutations`` sign vectors with independent
      fair signs from ``numpy.random.default_rng(seed)`` and
      ``p = (count(extreme) + 1) / (n_permutations + 1)``, never 0.

    Both are computed in chunks of vectorized matrix products, bounded in memory.

    :param a: per-question values of pipeline A (1-D).
    :param b: the same questions in the same order for pipeline B.
    :param n_permutations: number of random sign vectors (>= 1); also the threshold for the
        exact test.
    :param seed: non-negative integer seed (used by the approximate test only).
    :param alternative: ``"two-sided"``, ``"greater"`` (B > A) or ``"less"`` (B < A).
    :return: a :class:`RandomizationTest`.
    :raises InputError: mismatched lengths (naming both), empty, NaN or non-numeric input,
        2-D input, bad settings.
    """
    func = "paired_randomization_test"
    a, b = _paired(a, b, func=func)
    n_permutations = _check_int(n_permutations, func=func, param="n_permutations", minimum=1)
    seed = _check_seed(seed, func=func)
    alternative = _check_alternative(alternative, func=func)
    d = b - a
    nz = d[d != 0]
    m = int(nz.size)
    observed = float(nz.sum())
    tol = (m + 1) * np.finfo(np.float64).eps * float(np.abs(nz).sum())
    count = 0
    if m < 63 and (1 << m) <= n_permutations:
        total = 1 << m
        bits = np.arange(m, dtype=np.int64)
        chunk = _chunk_rows(total, max(1, m) * 16)
        for start in range(0, total, chunk):
            codes = np.arange(start, min(total, start + chunk), dtype=np.int64)
            signs = 1.0 - 2.0 * ((codes[:, None] >> bits) & 1)
            count += _count_extreme(signs @ nz, observed, tol, alternative)
        method, used, p = "exact", total, count / total
    else:
        rng = np.random.default_rng(seed)
        chunk = _chunk_rows(n_permutations, m * 16)
        for start in range(0, n_permutations, chunk):
            draws = rng.random((min(chunk, n_permutations - start), m))
            signs = np.where(draws < 0.5, -1.0, 1.0)
            count += _count_extreme(signs @ nz, observed, tol, alternative)
        method, used, p = "approximate", n_permutations, (count + 1) / (n_permutations + 1)
    return RandomizationTest(diff=float(d.mean()), p_value=float(min(1.0, p)), method=method,
                             alternative=alternative, n=int(d.size), n_nonzero=m,
                             n_permutations=used, seed=seed)

