"""Small-set honesty: the change of one question, and the smallest difference a paired test on
these questions would reliably detect (normal approximation; scipy is not needed)."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any, Optional

import numpy as np

from ragexam.stats._checks import _check_fraction, _check_int, _paired

__all__ = ["normal_quantile", "resolution", "minimum_detectable_difference"]


def normal_quantile(q: float) -> float:
    """Inverse CDF of the standard normal distribution, ``z`` with ``Phi(z) = q``, 0 < q < 1.

    Uses the standard library (``statistics.NormalDist().inv_cdf``, Wichura's AS241, accurate
    to about 1e-15); scipy is not needed at run time.
    """
    q = _check_fraction(q, func="normal_quantile", param="q")
    return NormalDist().inv_cdf(q)


def resolution(n: int) -> float:
    """The change of one question in a mean over ``n`` questions: ``1 / n``.

    For 0/1 values (correct or not) the mean moves in steps of exactly ``1/n``; for values in
    [0, 1] one question moves it by at most ``1/n``.

    :param n: number of questions, an integer >= 1.
    """
    return 1.0 / _check_int(n, func="resolution", param="n", minimum=1)


def minimum_detectable_difference(a: Any, b: Any, *, alpha: float = 0.05,
                                  power: float = 0.8) -> Optional[float]:
    """The smallest mean difference a paired test on these n questions would reliably detect.

    Definition (normal approximation to a two-sided paired test):
    ``mdd = (z_{1 - alpha/2} + z_{power}) * sd / sqrt(n)`` where ``d_i = b_i - a_i``,
    ``sd`` is the sample standard deviation of the ``d_i`` (divisor ``n - 1``) and ``z_q`` the
    standard normal quantile (``alpha=0.05, power=0.8``: 2.8016 * sd / sqrt(n)).  A true
    difference of this size would be found significant at level alpha with probability about
    ``power``; smaller ones usually would not.  The normal approximation is optimistic for
    small n (a t quantile would be larger), and ``sd`` is estimated from the same data.

    If all differences are equal (two identical runs, every question moved by the same amount, or
    n = 1, where sd is undefined) the spread gives no scale and there is no such difference to
    state: the function returns ``None`` (say instead that the per-question values did not vary).

    :param a: per-question values of pipeline A (1-D).
    :param b: the same questions in the same order for pipeline B.
    :param alpha: two-sided significance level, 0 < alpha < 1.
    :param power: wanted probability of detection, 0 < power < 1.
    :return: the minimum detectable difference, a positive float; ``None`` without spread.
    """
    func = "minimum_detectable_difference"
    a, b = _paired(a, b, func=func)
    alpha = _check_fraction(alpha, func=func, param="alpha")
    power = _check_fraction(power, func=func, param="power")
    d = b - a
    n = d.size
    if n < 2 or bool(np.all(d == d[0])):
        return None
    sd = float(d.std(ddof=1))
    z = NormalDist().inv_cdf
    return (z(1.0 - alpha / 2.0) + z(power)) * sd / math.sqrt(n)

