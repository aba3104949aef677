"""Percentile-bootstrap confidence intervals over questions.

The bootstrap follows sacreBLEU's design: each question is reduced to summable statistics (a
value, or a numerator and a denominator, or BLEU's match and length counts), so one resample is
one fancy-index op, ``stats[idx].sum(axis=1)``, and resamples are drawn in chunks whose size is
bounded by memory, not by the number of resamples.

* :func:`bootstrap_ci`: the mean of per-question values;
* :func:`bootstrap_ratio_ci`: a ratio of sums (e.g. corpus-level precision);
* :func:`bootstrap_sums_ci`: any score computed from summed per-question statistics — a corpus
  statistic such as corpus BLEU or chrF: resample segments, sum their statistics, recompute
  (what sacrebleu's paired bootstrap does);
* :func:`paired_bootstrap_diff`: the mean of b - a over questions resampled jointly.

All of them draw the resampled question indices the same way,
``numpy.random.default_rng(seed).integers(0, n, size=(n_resamples, n))`` (:func:`bootstrap_indices`),
so two statistics of the same questions with the same seed are resampled identically.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ragexam.signature import Signature
from ragexam.stats.signed import Signed
from ragexam.errors import InputError
from ragexam.stats._checks import (DEFAULT_SEED, _check_fraction, _check_int, _check_seed, _chunk_rows,
                                   _numeric, _paired)

__all__ = ["BootstrapCI", "bootstrap_ci", "bootstrap_ratio_ci", "bootstrap_sums_ci", "paired_bootstrap_diff",
           "bootstrap_indices"]


@dataclass(frozen=True)
class BootstrapCI(Signed):
    """A percentile-bootstrap confidence interval.

    ``mean`` is the statistic computed on all ``n`` questions (for :func:`bootstrap_ci` the
    mean; for the other bootstrap functions the value named by ``statistic``).  ``low`` and
    ``high`` are the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
    statistic over ``n_resamples`` resamples of the questions with replacement, drawn with
    ``numpy.random.default_rng(seed)``.  ``method`` is ``"percentile"``.
    """

    mean: float
    low: float
    high: float
    n: int
    n_resamples: int
    seed: int
    confidence: float
    method: str = "percentile"
    statistic: str = "mean"

    @property
    def signature(self) -> Signature:
        """The settings that produced this interval, e.g.
        ``stat:mean|ci:percentile|conf:0.95|bs:2000|seed:12345|n:100|version:ragexam-0.1.0``."""
        return Signature([("stat", self.statistic), ("ci", self.method), ("conf", float(self.confidence)),
                          ("bs", self.n_resamples), ("seed", self.seed), ("n", self.n)])


def bootstrap_indices(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The resampled question indices, chunk by chunk: together the rows of
    ``numpy.random.default_rng(seed).integers(0, n, size=(n_resamples, n))``.  Drawing that matrix
    in row chunks yields the same indices as drawing it at once, so the chunk size (bounded by
    ``_CHUNK_BYTES``) never changes a result."""
    rng = np.random.default_rng(seed)
    chunk = _chunk_rows(n_resamples, n * 16)
    for start in range(0, n_resamples, chunk):
        yield rng.integers(0, n, size=(min(chunk, n_resamples - start), n))


def _resampled_sums(stats: np.ndarray, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Yield column sums of bootstrap resamples of the rows of ``stats`` (n x k), chunk by chunk.

    Resample r sums ``stats[idx[r]]`` over questions, with ``idx`` from :func:`bootstrap_indices`.
    Each statistic column is gathered and summed on its own, ``column[idx].sum(axis=1)`` over a
    C-contiguous (chunk x n) block, so a column gives bit-identical sums whether it is resampled
    alone or beside others.
    """
    columns = np.ascontiguousarray(stats.T)
    for idx in bootstrap_indices(stats.shape[0], n_resamples, seed):
        yield np.stack([column[idx].sum(axis=1) for column in columns], axis=1)


def _as_score_matrix(scores: Any, rows: int, *, func: str) -> np.ndarray:
    try:
        arr = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"returned something that is not numbers ({exc}); expected an array of "
                         f"shape (r,) or (r, m) for r rows of summed statistics.",
                         source=f"{func}()", field="statistic") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] != rows or arr.shape[1] == 0:
        raise InputError(f"returned shape {arr.shape} for {rows} rows of summed statistics; "
                         f"expected ({rows},) or ({rows}, m). Fix: make the statistic "
                         f"vectorized over the first axis.", source=f"{func}()", field="statistic")
    return arr


def _percentile_bootstrap(stats: np.ndarray, statistic: Callable[[np.ndarray], Any], *,
                          n_resamples: int, confidence: float, seed: int, func: str,
                          name: str, undefined: Callable[[int], str]) -> list[BootstrapCI]:
    """Shared core: point estimate, resampled scores, percentile interval, result objects."""
    n = stats.shape[0]
    total = np.ascontiguousarray(stats.T).sum(axis=1)[None, :]
    estimate = _as_score_matrix(statistic(total), 1, func=func)[0]
    if not np.isfinite(estimate).all():
        raise InputError(undefined(0), source=f"{func}()", field="statistic")
    parts = [_as_score_matrix(statistic(s), len(s), func=func)
             for s in _resampled_sums(stats, n_resamples, seed)]
    boot = np.concatenate(parts, axis=0)
    if boot.shape[1] != estimate.shape[0]:
        raise InputError(f"returned {boot.shape[1]} columns on resamples but "
                         f"{estimate.shape[0]} on all questions; expected the same number.",
                         source=f"{func}()", field="statistic")
    bad = ~np.isfinite(boot).all(axis=1)
    if bad.any():
        raise InputError(undefined(int(bad.sum())), source=f"{func}()", field="statistic")
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail], axis=0)
    out = [BootstrapCI(mean=float(estimate[j]), low=float(low[j]), high=float(high[j]), n=n,
                       n_resamples=n_resamples, seed=seed, confidence=confidence,
                       method="percentile", statistic=name)
           for j in range(estimate.shape[0])]
    return out


def _mean_bootstrap(x: np.ndarray, func: str, name: str, n_resamples: Any, confidence: Any,
                    seed: Any) -> BootstrapCI | list[BootstrapCI]:
    """The percentile bootstrap of the mean of ``x`` (1-D, or 2-D: one interval per column), the settings
    checked first; shared by :func:`bootstrap_ci` and :func:`paired_bootstrap_diff`."""
    n_resamples, confidence, seed = _bootstrap_settings(func, n_resamples, confidence, seed)
    stats = x[:, None] if x.ndim == 1 else x
    n = stats.shape[0]
    out = _percentile_bootstrap(stats, lambda sums: sums / n, n_resamples=n_resamples,
                                confidence=confidence, seed=seed, func=func, name=name,
                                undefined=lambda k: "produced a non-finite mean (overflow?).")
    return out[0] if x.ndim == 1 else out


def _bootstrap_settings(func: str, n_resamples: Any, confidence: Any,
                        seed: Any) -> tuple[int, float, int]:
    return (_check_int(n_resamples, func=func, param="n_resamples", minimum=1),
            _check_fraction(confidence, func=func, param="confidence",
                            hint=" Fix: use 0.95 for a 95% interval."),
            _check_seed(seed, func=func))


def bootstrap_ci(values: Any, *, n_resamples: int = 2000, confidence: float = 0.95,
                 seed: int = DEFAULT_SEED) -> BootstrapCI | list[BootstrapCI]:
    """Percentile-bootstrap confidence interval for the mean of per-question values.

    Definition: with ``x_1..x_n`` the values, ``mean = (1/n) * sum_i x_i``.  Each of the
    ``n_resamples`` resamples draws n question indices uniformly with replacement
    (``numpy.random.default_rng(seed).integers(0, n, size=(n_resamples, n))``) and computes the
    mean of the drawn values.  ``low`` and ``high`` are the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles of those resampled means (``numpy.quantile``, linear
    interpolation).  Every resampled mean lies in ``[min x, max x]``, so ``low`` and ``high``
    do too; the observed mean is usually, but not provably, between them.

    :param values: 1-D (one value per question) or 2-D (questions x metrics).  A 2-D input
        uses the same resampled questions for every column, in one pass.
    :param n_resamples: number of bootstrap resamples, >= 1 (>= 1000 recommended).
    :param confidence: coverage of the interval, strictly between 0 and 1.
    :param seed: non-negative integer seed; same inputs and seed give identical output.
    :return: a :class:`BootstrapCI` for 1-D input; for 2-D input a list with one
        :class:`BootstrapCI` per column.  Column j of a 2-D input gives exactly the interval
        of 1-D input ``values[:, j]`` with the same seed.
    :raises InputError: empty input, NaN or infinite values, non-numeric values, bad settings.
    """
    func = "bootstrap_ci"
    x = _numeric(values, func=func, param="values", ndims=(1, 2))
    return _mean_bootstrap(x, func, "mean", n_resamples, confidence, seed)


def bootstrap_ratio_ci(numerator: Any, denominator: Any, *, n_resamples: int = 2000,
                       confidence: float = 0.95,
                       seed: int = DEFAULT_SEED) -> BootstrapCI | list[BootstrapCI]:
    """Percentile-bootstrap confidence interval for a ratio of sums over questions.

    Definition: ``ratio = sum_i num_i / sum_i den_i`` (a corpus-level statistic such as
    token precision = matched tokens / predicted tokens, where long answers weigh more than
    in a mean of per-question ratios).  Resampling is as in :func:`bootstrap_ci`: each resample
    draws n questions with replacement and takes the ratio of the drawn sums; ``low``/``high``
    are the percentile quantiles.  The resampled indices are identical to those of
    :func:`bootstrap_ci` with the same ``n`` and ``seed`` (so with all denominators 1 the
    result equals the bootstrap of the mean).

    :param numerator: 1-D (per question) or 2-D (questions x ratios) finite numbers.
    :param denominator: same shape as ``numerator``; a question may have 0, but the total
        must not be 0, on all questions or on any resample.
    :return: a :class:`BootstrapCI` (statistic ``"ratio"``) for 1-D input, a list for 2-D.
    :raises InputError: mismatched shapes (naming both lengths), empty/NaN input, or a
        denominator total of 0 on all questions or on some resample (the ratio is then
        undefined; with so few questions carrying weight the interval would mean little).
    """
    func = "bootstrap_ratio_ci"
    num, den = _paired(numerator, denominator, func=func, ndims=(1, 2),
                       names=("numerator", "denominator"))
    n_resamples, confidence, seed = _bootstrap_settings(func, n_resamples, confidence, seed)
    num2 = num[:, None] if num.ndim == 1 else num
    den2 = den[:, None] if den.ndim == 1 else den
    m = num2.shape[1]
    weighted = int((den2 != 0).any(axis=1).sum())

    def ratio(sums: np.ndarray) -> np.ndarray:
        top, bottom = sums[:, :m], sums[:, m:]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(bottom != 0, top / np.where(bottom != 0, bottom, 1.0), np.nan)

    def undefined(k: int) -> str:
        if k == 0:
            return ("the denominator sums to 0 over all questions, so the ratio is undefined; "
                    "expected a nonzero total. Fix: check the denominator column.")
        return (f"{k} of {n_resamples} resamples drew only questions whose denominator is 0, so "
                f"the ratio is undefined there; only {weighted} of {len(num2)} questions have a "
                f"nonzero denominator, too few for a bootstrap interval. Fix: report the "
                f"per-question values, or add questions.")

    out = _percentile_bootstrap(np.concatenate([num2, den2], axis=1), ratio,
                                n_resamples=n_resamples, confidence=confidence, seed=seed,
                                func=func, name="ratio", undefined=undefined)
    return out[0] if num.ndim == 1 else out


def bootstrap_sums_ci(stats: Any, statistic: Callable[[np.ndarray], Any], *,
                      name: str = "statistic", n_resamples: int = 2000,
                      confidence: float = 0.95,
                      seed: int = DEFAULT_SEED) -> BootstrapCI | list[BootstrapCI]:
    """Percentile-bootstrap interval for any score computed from summed per-question statistics.

    Definition: ``stats`` has one row of k summable statistics per question (for corpus BLEU:
    hypothesis length, reference length, matches and totals per n-gram order).  The score on a
    set of questions is ``statistic(sums)`` where ``sums`` is the column sum over those
    questions.  The estimate is ``statistic`` of the sum over all n questions; resample r is
    ``statistic(stats[idx_r].sum(axis=0))`` with ``idx_r`` as in :func:`bootstrap_ci` (same
    indices for the same n and seed); ``low``/``high`` are the percentile quantiles.

    :param stats: 1-D (k = 1) or 2-D (questions x k) finite numbers.
    :param statistic: vectorized function from an array of shape ``(r, k)`` of summed
        statistics to scores of shape ``(r,)`` or ``(r, m)`` (m scores at once).  It must
        return finite values; return NaN where the score is undefined and this function raises.
    :param name: what the statistic is called in the result and its signature.
    :return: a :class:`BootstrapCI` if ``statistic`` returns one score per row, else a list of m.
    :raises InputError: bad ``stats``, a ``statistic`` returning the wrong shape, or non-finite
        scores on all questions or on some resamples.
    """
    func = "bootstrap_sums_ci"
    x = _numeric(stats, func=func, param="stats", ndims=(1, 2))
    n_resamples, confidence, seed = _bootstrap_settings(func, n_resamples, confidence, seed)
    if not callable(statistic):
        raise InputError(f"received {statistic!r}; expected a function from summed statistics "
                         f"(r, k) to scores (r,) or (r, m).", source=f"{func}()", field="statistic")

    def undefined(k: int) -> str:
        where = "on all questions" if k == 0 else f"on {k} of {n_resamples} resamples"
        return (f"returned a non-finite score {where}; expected finite scores. Fix: make the "
                f"score defined for every non-empty set of questions (e.g. smoothing).")

    out = _percentile_bootstrap(x[:, None] if x.ndim == 1 else x, statistic,
                                n_resamples=n_resamples, confidence=confidence, seed=seed,
                                func=func, name=str(name), undefined=undefined)
    return out[0] if len(out) == 1 else out


def paired_bootstrap_diff(a: Any, b: Any, *, n_resamples: int = 2000, confidence: float = 0.95,
                          seed: int = DEFAULT_SEED) -> BootstrapCI | list[BootstrapCI]:
    """Mean difference ``b - a`` and its paired percentile-bootstrap confidence interval.

    Definition: ``d_i = b_i - a_i`` per question; ``mean = (1/n) sum_i d_i``.  Questions are
    resampled *jointly* (the same drawn question contributes its a and its b), which is the
    bootstrap of the mean of ``d`` exactly as in :func:`bootstrap_ci` (same indices for the
    same n and seed).  Positive means B scores higher.

    :param a: per-question values of pipeline A, 1-D or 2-D (questions x metrics).
    :param b: the same questions, same order and shape, for pipeline B.
    :return: a :class:`BootstrapCI` with ``statistic="mean_diff"`` (a list for 2-D input).
    :raises InputError: mismatched lengths (naming both), empty, NaN or non-numeric input.
    """
    func = "paired_bootstrap_diff"
    a, b = _paired(a, b, func=func, ndims=(1, 2))
    return _mean_bootstrap(b - a, func, "mean_diff", n_resamples, confidence, seed)

