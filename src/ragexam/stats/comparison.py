"""Pipeline B against pipeline A on the same questions: every number and the verdict.

* :func:`compare`: one metric — paired bootstrap interval, randomization p-value, MDD, verdict.
* :func:`compare_family`: several metrics of one pair (e.g. the main table's columns) — each
  compared as above, then Holm's correction across them, and the verdicts worded on the
  corrected p-values (:func:`ragexam.stats.verdict.assess`).  ``ragexam run`` and
  ``ragexam compare`` both use it, so they read the same case the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence, cast

import numpy as np

from ragexam.signature import Signature
from ragexam.stats.signed import Signed
from ragexam.errors import InputError
from ragexam.stats._checks import DEFAULT_SEED, _paired
from ragexam.stats.bootstrap import BootstrapCI, paired_bootstrap_diff
from ragexam.stats.multiple import holm
from ragexam.stats.power import minimum_detectable_difference
from ragexam.stats.randomization import paired_randomization_test
from ragexam.stats.verdict import assess

__all__ = ["Comparison", "compare", "compare_family", "holm_family"]


@dataclass(frozen=True)
class Comparison(Signed):
    """Pipeline B against pipeline A on the same ``n`` questions (see :func:`compare`).

    ``diff`` = mean(b - a) (positive: B scores higher); ``ci_low``/``ci_high`` its paired
    percentile-bootstrap interval at ``confidence``; ``p_value`` and ``method`` from the
    two-sided paired randomization test; ``mdd`` the minimum detectable difference at
    ``alpha`` and 80 % power (or the ``power`` given), ``None`` when the per-question differences
    do not vary (e.g. identical runs: no MDD to state); ``resolution`` = 1/n, the change of one
    question; ``verdict`` the plain-words reading of all of these and ``reading`` its few words
    (:func:`ragexam.stats.verdict.assess`).  ``p_adjusted`` is the Holm-adjusted p-value when the
    comparison is one of a family (:func:`compare_family`; the verdict is then decided on it),
    else ``None``.
    """

    names: tuple[str, str]
    diff: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    method: str
    alpha: float
    n: int
    n_resamples: int
    n_permutations: int
    seed: int
    mdd: Optional[float]
    resolution: float
    verdict: str
    reading: str = ""
    p_adjusted: Optional[float] = None

    @property
    def signature(self) -> Signature:
        """The settings that produced this comparison, e.g. ``ci:percentile|conf:0.95|bs:2000|``
        ``test:paired-randomization|method:exact|perm:1024|seed:12345|n:10|version:ragexam-0.1.0``
        (with ``|mcc:holm`` before the version when the p-value was corrected).
        """
        return Signature([("ci", "percentile"), ("conf", float(self.confidence)), ("bs", self.n_resamples),
                          ("test", "paired-randomization"), ("method", self.method),
                          ("perm", self.n_permutations), ("seed", self.seed), ("n", self.n)]
                         + ([("mcc", "holm")] if self.p_adjusted is not None else []))


def compare(a: Any, b: Any, *, names: tuple[str, str] = ("A", "B"), alpha: float = 0.05,
            power: float = 0.8, confidence: float = 0.95, n_resamples: int = 2000,
            n_permutations: int = 10000, seed: int = DEFAULT_SEED) -> Comparison:
    """Compare pipeline B against pipeline A on the same questions, all numbers and a verdict.

    Runs :func:`~ragexam.stats.bootstrap.paired_bootstrap_diff` (interval of mean(b - a)), the
    two-sided :func:`~ragexam.stats.randomization.paired_randomization_test` (p-value),
    :func:`~ragexam.stats.power.minimum_detectable_difference` and
    :func:`~ragexam.stats.verdict.assess`, all with the same ``seed``.

    :param a: per-question values of pipeline A (1-D, higher is better).
    :param b: the same questions in the same order for pipeline B.
    :param names: display names of A and B used in the verdict.
    :return: a :class:`Comparison`.
    :raises InputError: mismatched lengths (naming both), empty, NaN or non-numeric input.
    """
    func = "compare"
    a, b = _paired(a, b, func=func)
    if len(names) != 2:
        raise InputError(f"received {names!r}; expected two names (for A and for B).",
                         source=f"{func}()", field="names")
    ci = cast(BootstrapCI, paired_bootstrap_diff(a, b, n_resamples=n_resamples,
                                                 confidence=confidence, seed=seed))
    test = paired_randomization_test(a, b, n_permutations=n_permutations, seed=seed)
    mdd = minimum_detectable_difference(a, b, alpha=alpha, power=power)
    n = test.n
    v = assess(test.diff, (ci.low, ci.high), test.p_value, n, mdd, alpha=alpha,
               confidence=ci.confidence, names=(str(names[0]), str(names[1])))
    return Comparison(names=(str(names[0]), str(names[1])), diff=test.diff, ci_low=ci.low,
                      ci_high=ci.high, confidence=ci.confidence, p_value=test.p_value,
                      method=test.method, alpha=float(alpha), n=n, n_resamples=ci.n_resamples,
                      n_permutations=test.n_permutations, seed=test.seed, mdd=mdd,
                      resolution=1.0 / n, verdict=v.text, reading=v.reading)


def compare_family(a: Any, b: Any, *, names: tuple[str, str] = ("A", "B"), alpha: float = 0.05,
                   power: float = 0.8, confidence: float = 0.95, n_resamples: int = 2000,
                   n_permutations: int = 10000, seed: int = DEFAULT_SEED) -> list[Comparison]:
    """:func:`compare` on every column of ``a`` and ``b`` (questions x metrics, the same questions
    in the same order), then Holm's correction across the columns: each result's ``p_adjusted``
    is its Holm-adjusted p-value and its ``verdict``/``reading`` are decided on it.  Column j's
    numbers (diff, interval, raw p) are exactly those of ``compare(a[:, j], b[:, j])``.

    :param a, b: 2-D arrays of shape (questions, metrics), at least one column.
    :return: one :class:`Comparison` per column, in column order.
    """
    A, B = _paired(a, b, func="compare_family", ndims=(2,))
    pair = (str(names[0]), str(names[1]))
    raw = [compare(A[:, j], B[:, j], names=pair, alpha=alpha, power=power, confidence=confidence,
                   n_resamples=n_resamples, n_permutations=n_permutations, seed=seed) for j in range(A.shape[1])]
    return holm_family(raw)


def holm_family(comparisons: Sequence[Any]) -> list:
    """``comparisons`` as one family: each gets its Holm-adjusted p-value ``p_adjusted`` and its verdict and
    reading decided on it (:func:`ragexam.stats.verdict.assess`).  Any mix of :class:`Comparison` (paired) and
    :class:`ragexam.stats.unpaired.UnpairedComparison` (whose verdict counts ``min(n_a, n_b)``)."""
    if not comparisons:
        return []
    adjusted = holm(np.array([c.p_value for c in comparisons]))
    out = []
    for c, q in zip(comparisons, adjusted.tolist()):
        n = c.n if hasattr(c, "n") else min(c.n_a, c.n_b)
        v = assess(c.diff, (c.ci_low, c.ci_high), c.p_value, n, c.mdd, p_adjusted=float(q), alpha=c.alpha,
                   confidence=c.confidence, names=(str(c.names[0]), str(c.names[1])), paired=hasattr(c, "n"))
        out.append(replace(c, p_adjusted=float(q), verdict=v.text, reading=v.reading))
    return out
