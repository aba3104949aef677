"""How often a 95% interval of a proportion (hit@k, a pass rate) holds the true rate: the percentile bootstrap that
run tables used to draw for every metric, against Wilson's (:mod:`ragexam.stats.proportion`) -- computed exactly,
no simulation.

For ``k`` successes in ``n`` items the percentile bootstrap of the mean resamples ``n`` items from the observed
``k/n``: its distribution is Binomial(n, k/n) / n, so its 2.5 % and 97.5 % points are binomial quantiles (with
infinitely many resamples).  The coverage at a true rate ``p`` is the probability, over ``k ~ Binomial(n, p)``,
that the interval drawn from ``k`` holds ``p``.  Printed: the coverage at each ``n`` and ``p``, and the worst over
``p`` in [0.05, 0.95] -- where the bootstrap falls short of 95 % (it is [1.00-1.00] at k = n, whatever n is) -- for
the bootstrap, Wilson's, and ragexam's rule for run tables (:func:`ragexam.stats.proportion.table_interval`:
Wilson's below :data:`~ragexam.stats.proportion.BOOTSTRAP_FROM` items or with fewer than
:data:`~ragexam.stats.proportion.MIN_EACH` of an outcome, the bootstrap otherwise).

    python benchmarks/proportion_intervals.py
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ragexam.stats.proportion import BOOTSTRAP_FROM, MIN_EACH, wilson  # noqa: E402


def _pmf(n: int, p: float):
    return [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)]


def _quantile(cdf, q: float) -> int:
    return next(k for k, c in enumerate(cdf) if c >= q - 1e-12)


def bootstrap_interval(k: int, n: int):
    """The percentile bootstrap interval of ``k`` of ``n`` (infinitely many resamples)."""
    pmf = _pmf(n, k / n)
    cdf, acc = [], 0.0
    for x in pmf:
        acc += x
        cdf.append(acc)
    return _quantile(cdf, 0.025) / n, _quantile(cdf, 0.975) / n


def ragexam_rule(k: int, n: int):
    """:func:`ragexam.stats.proportion.table_interval` on ``k`` of ``n`` (its bootstrap: :func:`bootstrap_interval`)."""
    if n < BOOTSTRAP_FROM or min(k, n - k) < MIN_EACH:
        return wilson(k / n, n)
    return bootstrap_interval(k, n)


def coverage(n: int, p: float, interval) -> float:
    return sum(w for k, w in enumerate(_pmf(n, p)) if interval(k, n)[0] <= p <= interval(k, n)[1])


def main() -> None:
    ps = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95]
    grid = [i / 100 for i in range(5, 96)]
    print("coverage of a nominal 95% interval of a proportion (exact)")
    print(f"{'n':>4}  {'method':<9}" + "".join(f"{p:>7.2f}" for p in ps) + "   worst p in [0.05, 0.95]")
    for n in (5, 10, 20, 30, 50, 65, 100):
        for name, iv in (("bootstrap", bootstrap_interval), ("wilson", lambda k, n: wilson(k / n, n)),
                         ("ragexam", ragexam_rule)):
            row = [coverage(n, p, iv) for p in ps]
            worst = min(coverage(n, p, iv) for p in grid)
            print(f"{n:>4}  {name:<9}" + "".join(f"{c:>7.3f}" for c in row) + f"   {worst:.3f}")
    print(f"ragexam: Wilson's below n = {BOOTSTRAP_FROM} or with fewer than {MIN_EACH} of an outcome; the bootstrap "
          "otherwise")


if __name__ == "__main__":
    main()
