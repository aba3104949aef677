"""How many of a finite set are bad, from a random sample of it: the exact (hypergeometric) interval.

A question set of ``N`` questions holds an unknown number ``D`` of bad ones.  A person reads a simple random
sample of ``n`` of them (drawn without replacement) and finds ``x`` bad.  ``X``, the number of bad ones in such
a sample, follows the hypergeometric distribution

    P(X = k | D) = C(D, k) * C(N - D, n - k) / C(N, n)

and :func:`hypergeometric_interval` inverts its distribution function, as the Clopper-Pearson interval inverts
the binomial one, but without the binomial's assumption of an infinite population -- the finite population
correction is exact, not an approximation: with every question read (``n == N``) the interval is the one
number ``x``.  For the two-sided confidence ``1 - alpha``:

* the **upper bound** ``U`` is the largest ``D`` for which ``P(X <= x | D) > alpha / 2`` (``N`` when ``x == n``);
* the **lower bound** ``L`` is the smallest ``D`` for which ``P(X >= x | D) > alpha / 2`` (``0`` when ``x == 0``);

so each bound alone is a one-sided ``1 - alpha/2`` bound (the 95 % interval's upper end is 97.5 % sure).  Both
are counts of the whole set; the rates are ``L / N`` and ``U / N``, the point estimate ``x / n`` (unbiased for
``D / N``), held within them: the two differ only when nearly every item was read (1 bad of 80 read of 81 is a set
of 81 holding exactly 1 bad one at 95 %, 1/81, not 1/80).  Because
``P(X <= x | D)`` falls as ``D`` grows, the bounds are found by bisection, each step one sum of at most
``n + 1`` terms of the probability function, computed from a table of log-factorials (numpy only; no scipy at
run time -- ``tests/test_stats_hypergeometric.py`` checks it against ``scipy.stats.hypergeom``, its coverage
and its monotonicity).  Coverage is at least the nominal level for every ``D`` (exact intervals are
conservative: the discrete distribution cannot hit the level exactly).

With ``n == 0`` nothing was read: the interval is the whole range ``[0, N]`` and there is no point estimate.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

import numpy as np

from ragexam._version import __version__
from ragexam.errors import InputError, integer_in
from ragexam.stats._checks import _check_fraction

__all__ = ["FiniteInterval", "hypergeometric_interval", "hypergeometric_cdf", "hypergeometric_sf"]


def _int(value: Any, name: str, minimum: int = 0) -> int:
    return integer_in(value, minimum, source="hypergeometric_interval()", field=name)


class _LogFactorials:
    """``log(k!)`` for ``k = 0 .. N`` (one cumulative sum of logs)."""

    def __init__(self, top: int) -> None:
        self.table = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1, dtype=float)))])

    def choose(self, a: int, b: np.ndarray) -> np.ndarray:
        """``log C(a, b)`` for an array of ``b`` (all within ``0 .. a``)."""
        return self.table[a] - self.table[b] - self.table[a - b]


def _pmf(lf: _LogFactorials, population: int, bad: int, draws: int) -> "tuple[int, np.ndarray]":
    """``(first k, P(X = k) for k = first .. last)`` of the hypergeometric distribution."""
    lo, hi = max(0, draws - (population - bad)), min(draws, bad)
    k = np.arange(lo, hi + 1)
    logp = lf.choose(bad, k) + lf.choose(population - bad, draws - k) - lf.table[population] + \
        lf.table[draws] + lf.table[population - draws]
    return lo, np.exp(logp)


def _check(k: int, population: int, bad: int, draws: int) -> None:
    if bad > population or draws > population:
        raise InputError(f"received {bad} bad and {draws} drawn of a population of {population}; expected both at "
                         "most the population", source="hypergeometric", field="population")


def hypergeometric_cdf(k: int, population: int, bad: int, draws: int) -> float:
    """``P(X <= k)`` for ``X`` the bad items among ``draws`` drawn without replacement from ``population`` items of
    which ``bad`` are bad (``scipy.stats.hypergeom(population, bad, draws).cdf(k)``)."""
    _check(k, population, bad, draws)
    lo, p = _pmf(_LogFactorials(population), population, bad, draws)
    return float(min(1.0, p[: max(0, k - lo + 1)].sum()))


def hypergeometric_sf(k: int, population: int, bad: int, draws: int) -> float:
    """``P(X >= k)`` (``scipy.stats.hypergeom(population, bad, draws).sf(k - 1)``)."""
    _check(k, population, bad, draws)
    lo, p = _pmf(_LogFactorials(population), population, bad, draws)
    return float(min(1.0, p[max(0, k - lo):].sum()))


@dataclass(frozen=True)
class FiniteInterval:
    """``bad`` of ``n`` sampled from ``population``: the count interval ``[low_count, high_count]`` of bad items in
    the whole population, and the same as rates (module docstring)."""

    bad: int
    n: int
    population: int
    low_count: int
    high_count: int
    confidence: float

    @property
    def estimate(self) -> Optional[float]:
        """``bad / n`` held within ``[low, high]``; ``None`` when nothing was sampled (module docstring)."""
        return min(max(self.bad / self.n, self.low), self.high) if self.n else None

    @property
    def low(self) -> float:
        return self.low_count / self.population if self.population else 0.0

    @property
    def high(self) -> float:
        return self.high_count / self.population if self.population else 0.0

    @property
    def signature(self) -> str:
        return (f"stat:proportion|ci:hypergeometric-exact|conf:{self.confidence:g}|n:{self.n}|N:{self.population}"
                f"|version:{__version__}")

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d.update(estimate=self.estimate, low=self.low, high=self.high, signature=self.signature)
        return d


def _largest(predicate: Any, lo: int, hi: int) -> int:
    """The largest ``D`` in ``[lo, hi]`` with ``predicate(D)``, for a predicate true up to some point and false
    after it (``predicate(lo)`` is true)."""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if predicate(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def hypergeometric_interval(bad: int, n: int, population: int, confidence: float = 0.95) -> FiniteInterval:
    """The exact interval of the number of bad items in a population of ``population``, from ``bad`` bad among a
    simple random sample of ``n`` (module docstring: the definition).

    >>> iv = hypergeometric_interval(3, 20, 60)
    >>> (iv.low_count, iv.high_count)
    (3, 20)
    >>> hypergeometric_interval(5, 10, 10).high_count     # every item read: no uncertainty
    5
    """
    population = _int(population, "population")
    n = _int(n, "n")
    bad = _int(bad, "bad")
    _check_fraction(confidence, func="hypergeometric_interval", param="confidence")
    if n > population:
        raise InputError(f"received a sample of {n} from a population of {population}; expected at most the "
                         "population", source="hypergeometric_interval()", field="n")
    if bad > n:
        raise InputError(f"received {bad} bad in a sample of {n}; expected at most {n}",
                         source="hypergeometric_interval()", field="bad")
    alpha = (1.0 - confidence) / 2.0
    lf = _LogFactorials(population)
    good = n - bad
    # D can be no less than the bad ones seen and no more than the population less the good ones seen
    d_min, d_max = bad, population - good

    def cdf_above(d: int) -> bool:  # P(X <= bad | D = d) > alpha
        lo, p = _pmf(lf, population, d, n)
        return p[: max(0, bad - lo + 1)].sum() > alpha

    def sf_above(d: int) -> bool:  # P(X >= bad | D = d) > alpha, tested from the top: true for every d >= L
        lo, p = _pmf(lf, population, d, n)
        return p[max(0, bad - lo):].sum() > alpha

    high = d_max if bad == n else _largest(cdf_above, d_min, d_max)
    if bad == 0:
        low = 0
    else:  # the smallest d with sf_above(d): mirror the search (sf_above is false below L and true from L on)
        low = d_max - _largest(lambda m: sf_above(d_max - m), 0, d_max - d_min)
    return FiniteInterval(bad, n, population, int(low), int(high), float(confidence))
