"""Statistics that keep one number from deciding: bootstrap confidence intervals, paired
randomization tests, multiple-comparison corrections, small-set honesty and judge agreement.

Everything here works on *per-question* values: one row per question, in the same question
order for every pipeline.  All randomness comes from ``numpy.random.default_rng(seed)`` with an
explicit integer ``seed`` that is stored in every result, so the same inputs and the same seed
give bit-identical output (also independently of the internal chunk size).  Nothing here returns
NaN: empty input, NaN or infinite values, and statistics that are undefined on the given data
raise :class:`ragexam.errors.InputError` naming the parameter.

Contents
--------
Confidence intervals (percentile bootstrap over questions):
    :func:`bootstrap_ci` (mean), :func:`bootstrap_ratio_ci` (sum / sum, e.g. corpus-level
    precision), :func:`bootstrap_sums_ci` (any score computed from summed per-question
    statistics, e.g. corpus BLEU), :func:`paired_bootstrap_diff` (mean of b - a).
Paired test:
    :func:`paired_randomization_test` (sign-flip approximate randomization; exact enumeration
    when there are few enough sign patterns).
Multiple comparisons:
    :func:`holm`, :func:`benjamini_hochberg`.
Small-set honesty:
    :func:`resolution`, :func:`minimum_detectable_difference`, :func:`verdict`, and
    :func:`compare`, which runs all of them and returns a :class:`Comparison`.
Agreement (judge checks):
    :func:`cohen_kappa`, :func:`spearman`.

The bootstrap follows sacreBLEU's design: each question is reduced to summable statistics
(a value, or a numerator and a denominator, or BLEU's match and length counts), so one resample
is one fancy-index op, ``stats[idx].sum(axis=1)``, and resamples are drawn in chunks whose size
is bounded by memory, not by the number of resamples.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any, Callable, Iterator, Literal, Sequence, cast

import numpy as np

from ragexam._version import __version__
from ragexam.errors import InputError

__all__ = [
    "DEFAULT_SEED",
    "BootstrapCI",
    "RandomizationTest",
    "Comparison",
    "bootstrap_ci",
    "bootstrap_ratio_ci",
    "bootstrap_sums_ci",
    "paired_bootstrap_diff",
    "paired_randomization_test",
    "holm",
    "benjamini_hochberg",
    "resolution",
    "minimum_detectable_difference",
    "verdict",
    "compare",
    "cohen_kappa",
    "spearman",
    "normal_quantile",
]

#: The seed used when the caller does not pass one.  It is an ordinary explicit seed: it is
#: recorded in every result and in its signature, so a default run reproduces too.
DEFAULT_SEED = 12345

#: Upper bound, in bytes, on the temporary arrays of one chunk of resamples or sign patterns.
#: Results do not depend on it (the random stream is drawn in the same order whatever the chunk).
_CHUNK_BYTES = 32 * 2**20

Alternative = Literal["two-sided", "greater", "less"]
_ALTERNATIVES = ("two-sided", "greater", "less")


# --------------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BootstrapCI:
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
    def signature(self) -> str:
        """The settings that produced this interval, e.g.
        ``stat:mean|ci:percentile|conf:0.95|bs:2000|seed:12345|n:100|version:0.1.0``."""
        return (f"stat:{self.statistic}|ci:{self.method}|conf:{self.confidence:g}"
                f"|bs:{self.n_resamples}|seed:{self.seed}|n:{self.n}|version:{__version__}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of the fields plus ``signature``."""
        d = asdict(self)
        d["signature"] = self.signature
        return d


@dataclass(frozen=True)
class RandomizationTest:
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
    def signature(self) -> str:
        """The settings that produced this result, e.g.
        ``test:paired-randomization|method:exact|alt:two-sided|perm:1024|seed:12345|n:10|version:0.1.0``.
        """
        return (f"test:paired-randomization|method:{self.method}|alt:{self.alternative}"
                f"|perm:{self.n_permutations}|seed:{self.seed}|n:{self.n}|version:{__version__}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of the fields plus ``signature``."""
        d = asdict(self)
        d["signature"] = self.signature
        return d


@dataclass(frozen=True)
class Comparison:
    """Pipeline B against pipeline A on the same ``n`` questions (see :func:`compare`).

    ``diff`` = mean(b - a) (positive: B scores higher); ``ci_low``/``ci_high`` its paired
    percentile-bootstrap interval at ``confidence``; ``p_value`` and ``method`` from the
    two-sided paired randomization test; ``mdd`` the minimum detectable difference at
    ``alpha`` and 80 % power (or the ``power`` given); ``resolution`` = 1/n, the change of one
    question; ``verdict`` the plain-words reading of all of these.
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
    mdd: float
    resolution: float
    verdict: str

    @property
    def signature(self) -> str:
        """The settings that produced this comparison, e.g. ``ci:percentile|conf:0.95|bs:2000|``
        ``test:paired-randomization|method:exact|perm:1024|seed:12345|n:10|version:0.1.0``.
        """
        return (f"ci:percentile|conf:{self.confidence:g}|bs:{self.n_resamples}"
                f"|test:paired-randomization|method:{self.method}|perm:{self.n_permutations}"
                f"|seed:{self.seed}|n:{self.n}|version:{__version__}")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict of the fields plus ``signature`` (``names`` as a list)."""
        d = asdict(self)
        d["names"] = list(self.names)
        d["signature"] = self.signature
        return d


# --------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------


def _numeric(x: Any, *, func: str, param: str, ndims: tuple[int, ...] = (1,)) -> np.ndarray:
    """``x`` as a float64 array with ``ndim`` in ``ndims``, non-empty and finite, or InputError."""
    src = f"{func}()"
    expected = "a 1-D sequence of numbers, one per question" if ndims == (1,) else \
        "a 1-D sequence (one number per question) or a 2-D array (questions x metrics)"
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InputError(f"could not read it as numbers ({exc}); expected {expected}.",
                         source=src, field=param) from None
    if arr.dtype.kind == "O":
        if any(isinstance(v, (str, bytes)) for v in arr.flat):
            raise InputError(f"received text values; expected {expected}. Fix: convert the "
                             f"scores to numbers first.", source=src, field=param)
        missing = [i for i, v in enumerate(arr.flat) if v is None]
        if missing:
            at = np.unravel_index(missing[0], arr.shape)
            where = f"index {at[0]}" if arr.ndim == 1 else f"position {tuple(map(int, at))}"
            raise InputError(f"received None at {where} ({len(missing)} missing value(s) in "
                             f"all); expected {expected}. Fix: score every question (0 for a "
                             f"miss) or drop the question from every run before comparing.",
                             source=src, field=param)
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError(f"received values that are not numbers (None or missing values?); "
                             f"expected {expected}. Fix: score every question (0 for a miss) "
                             f"or drop the question from every run before comparing.",
                             source=src, field=param) from None
    if arr.dtype.kind not in "biuf":
        raise InputError(f"received values of dtype {arr.dtype}; expected {expected}.",
                         source=src, field=param)
    if arr.ndim not in ndims:
        fix = " Fix: pass one metric column at a time." if arr.ndim == 2 else ""
        raise InputError(f"received an array of shape {arr.shape}; expected {expected}.{fix}",
                         source=src, field=param)
    if arr.size == 0:
        raise InputError(f"received no values (shape {arr.shape}); expected {expected}. A "
                         f"statistic of zero questions is undefined.", source=src, field=param)
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(arr[pos]) else str(arr[pos])
        at = f"index {pos[0]}" if len(pos) == 1 else f"row {pos[0]}, column {pos[1]}"
        raise InputError(f"received {what} at {at} ({int(bad.sum())} non-finite value(s) in "
                         f"all); expected finite numbers. Fix: score every question (0 for a "
                         f"miss) or drop the question from every run before comparing.",
                         source=src, field=param)
    return arr


def _paired(a: Any, b: Any, *, func: str, ndims: tuple[int, ...] = (1,),
            names: tuple[str, str] = ("a", "b")) -> tuple[np.ndarray, np.ndarray]:
    a = _numeric(a, func=func, param=names[0], ndims=ndims)
    b = _numeric(b, func=func, param=names[1], ndims=ndims)
    if a.shape != b.shape:
        if len(a) != len(b):
            got = f"{names[0]} has {len(a)} values but {names[1]} has {len(b)}"
        else:
            got = f"{names[0]} has shape {a.shape} but {names[1]} has shape {b.shape}"
        raise InputError(f"{got}; expected one value per question in both, in the same question "
                         f"order. Fix: align both on the same question ids first.",
                         source=f"{func}()", field=f"{names[0]}, {names[1]}")
    return a, b


def _check_int(value: Any, *, func: str, param: str, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < minimum:
        raise InputError(f"received {value!r}; expected an integer >= {minimum}.",
                         source=f"{func}()", field=param)
    return int(value)


def _check_seed(seed: Any, *, func: str) -> int:
    if seed is None:
        raise InputError("received None, which would make the result irreproducible; expected "
                         f"a non-negative integer (the default is {DEFAULT_SEED}).",
                         source=f"{func}()", field="seed")
    return _check_int(seed, func=func, param="seed", minimum=0)


def _check_fraction(value: Any, *, func: str, param: str, hint: str = "") -> float:
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not ok or not 0.0 < float(value) < 1.0:
        raise InputError(f"received {value!r}; expected a number strictly between 0 and 1.{hint}",
                         source=f"{func}()", field=param)
    return float(value)


def _check_alternative(alternative: Any, *, func: str) -> str:
    if alternative not in _ALTERNATIVES:
        raise InputError(f"received {alternative!r}; expected one of "
                         f"{', '.join(repr(a) for a in _ALTERNATIVES)}.",
                         source=f"{func}()", field="alternative")
    return str(alternative)


def _chunk_rows(n_total: int, bytes_per_row: int) -> int:
    return max(1, min(n_total, _CHUNK_BYTES // max(1, bytes_per_row)))


# --------------------------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------------------------


def _resampled_sums(stats: np.ndarray, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Yield column sums of bootstrap resamples of the rows of ``stats`` (n x k), chunk by chunk.

    Resample r sums ``stats[idx[r]]`` over questions, with ``idx[r]`` n indices drawn uniformly
    with replacement by ``default_rng(seed).integers(0, n, size=(n_resamples, n))``.  Drawing
    that matrix in row chunks yields the same indices as drawing it at once, so the chunk size
    (bounded by ``_CHUNK_BYTES``) never changes a result.  Each statistic column is gathered
    and summed on its own, ``column[idx].sum(axis=1)`` over a C-contiguous (chunk x n) block, so
    a column gives bit-identical sums whether it is resampled alone or beside others.
    """
    n = stats.shape[0]
    columns = np.ascontiguousarray(stats.T)
    rng = np.random.default_rng(seed)
    chunk = _chunk_rows(n_resamples, n * 16)
    for start in range(0, n_resamples, chunk):
        idx = rng.integers(0, n, size=(min(chunk, n_resamples - start), n))
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
    n_resamples, confidence, seed = _bootstrap_settings(func, n_resamples, confidence, seed)
    stats = x[:, None] if x.ndim == 1 else x
    n = stats.shape[0]
    out = _percentile_bootstrap(stats, lambda sums: sums / n, n_resamples=n_resamples,
                                confidence=confidence, seed=seed, func=func, name="mean",
                                undefined=lambda k: "produced a non-finite mean (overflow?).")
    return out[0] if x.ndim == 1 else out


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
    n_resamples, confidence, seed = _bootstrap_settings(func, n_resamples, confidence, seed)
    d = b - a
    stats = d[:, None] if d.ndim == 1 else d
    n = stats.shape[0]
    out = _percentile_bootstrap(stats, lambda sums: sums / n, n_resamples=n_resamples,
                                confidence=confidence, seed=seed, func=func, name="mean_diff",
                                undefined=lambda k: "produced a non-finite mean (overflow?).")
    return out[0] if d.ndim == 1 else out


# --------------------------------------------------------------------------------------------
# paired randomization test
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# multiple comparisons
# --------------------------------------------------------------------------------------------


def _pvalues(pvalues: Any, func: str) -> np.ndarray:
    p = _numeric(pvalues, func=func, param="pvalues")
    out = (p < 0) | (p > 1)
    if out.any():
        i = int(np.flatnonzero(out)[0])
        raise InputError(f"received {float(p[i])!r} at index {i}; expected p-values between "
                         f"0 and 1.",
                         source=f"{func}()", field="pvalues")
    return p


def holm(pvalues: Any) -> np.ndarray:
    """Holm–Bonferroni step-down adjusted p-values, in the input order.

    Definition: with the m p-values sorted ascending, ``p_(1) <= ... <= p_(m)``,
    ``adj_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))``.  Rejecting where
    ``adj <= alpha`` controls the family-wise error rate at alpha under any dependence.
    Adjusted values are >= the raw ones, <= Bonferroni's ``min(1, m * p)``, in the same
    order as the raw ones, and equal for equal raw values.

    :param pvalues: 1-D sequence of p-values in [0, 1], at least one.
    :return: float64 array of adjusted p-values, same length and order.
    """
    p = _pvalues(pvalues, "holm")
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def benjamini_hochberg(pvalues: Any) -> np.ndarray:
    """Benjamini–Hochberg step-up adjusted p-values (q-values), in the input order.

    Definition: with the m p-values sorted ascending, ``p_(1) <= ... <= p_(m)``,
    ``adj_(i) = min(1, min_{j >= i} m * p_(j) / j)``.  Rejecting where ``adj <= q``
    controls the false discovery rate at q for independent or positively dependent tests.
    Adjusted values are >= the raw ones, <= Holm's, in the same order as the raw ones.

    :param pvalues: 1-D sequence of p-values in [0, 1], at least one.
    :return: float64 array of adjusted p-values, same length and order.
    """
    p = _pvalues(pvalues, "benjamini_hochberg")
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = m * p[order] / np.arange(1, m + 1)
    adj = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m)
    out[order] = adj
    return out


# --------------------------------------------------------------------------------------------
# small-set honesty
# --------------------------------------------------------------------------------------------


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
                                  power: float = 0.8) -> float:
    """The smallest mean difference a paired test on these n questions would reliably detect.

    Definition (normal approximation to a two-sided paired test):
    ``mdd = (z_{1 - alpha/2} + z_{power}) * sd / sqrt(n)`` where ``d_i = b_i - a_i``,
    ``sd`` is the sample standard deviation of the ``d_i`` (divisor ``n - 1``) and ``z_q`` the
    standard normal quantile (``alpha=0.05, power=0.8``: 2.8016 * sd / sqrt(n)).  A true
    difference of this size would be found significant at level alpha with probability about
    ``power``; smaller ones usually would not.  The normal approximation is optimistic for
    small n (a t quantile would be larger), and ``sd`` is estimated from the same data.

    If all differences are equal (including n = 1, where sd is undefined) the spread gives
    no scale, and the function returns ``resolution(n) = 1/n`` instead.

    :param a: per-question values of pipeline A (1-D).
    :param b: the same questions in the same order for pipeline B.
    :param alpha: two-sided significance level, 0 < alpha < 1.
    :param power: wanted probability of detection, 0 < power < 1.
    :return: the minimum detectable difference, a positive float.
    """
    func = "minimum_detectable_difference"
    a, b = _paired(a, b, func=func)
    alpha = _check_fraction(alpha, func=func, param="alpha")
    power = _check_fraction(power, func=func, param="power")
    d = b - a
    n = d.size
    if n < 2 or bool(np.all(d == d[0])):
        return 1.0 / n
    sd = float(d.std(ddof=1))
    z = NormalDist().inv_cdf
    return (z(1.0 - alpha / 2.0) + z(power)) * sd / math.sqrt(n)


def _num(x: float) -> str:
    """Two significant digits, no exponent, no trailing zeros: 0.12, 0.017, 0.09, 1.5, 12.34."""
    if x == 0:
        return "0"
    ax = abs(x)
    decimals = 2 if ax >= 1 else max(2, 1 - math.floor(math.log10(ax)))
    s = f"{x:.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def _p(p: float) -> str:
    if p < 0.001:
        return "p<0.001"
    return f"p={p:.3f}" if p < 0.1 else f"p={p:.2f}"


def _finite(x: Any, *, func: str, param: str) -> float:
    ok = isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)
    if not ok or not math.isfinite(float(x)):
        raise InputError(f"received {x!r}; expected a finite number.", source=f"{func}()",
                         field=param)
    return float(x)


def verdict(diff: float, ci: tuple[float, float], p: float, n: int, mdd: float, *,
            alpha: float = 0.05, confidence: float = 0.95,
            names: tuple[str, str] = ("A", "B")) -> str:
    """A short plain-words reading of a paired comparison of B against A (higher is better).

    ``diff`` is mean(b - a), ``ci`` its (low, high) interval at ``confidence``, ``p`` the
    two-sided p-value, ``n`` the number of questions, ``mdd`` the minimum detectable
    difference.  The cases, in order:

    * p < alpha and the interval excludes 0 on the side of ``diff``:
      ``"B is better than A by 0.12 (95% CI 0.05 to 0.19, p=0.003)"``.
    * diff = 0: ``"no difference: A and B have the same mean (...)"``.
    * exactly one of (p < alpha, interval excludes 0): ``"borderline: ..."``.
    * |diff| < mdd: ``"no detectable difference: the difference 0.02 (B minus A) is within
      the noise (95% CI ..., p=...; one question = 0.017; differences below about 0.09 are
      not detectable with 60 questions)"``.
    * otherwise: ``"not significant: B is ahead of A by ..., but that is within the noise
      (...)"``.

    When ``0 < |diff| <= 2/n`` (one or two questions' worth on a 0/1 scale) the text adds
    ``"one or two questions — read them"``.  Numbers are shown with two significant digits.
    """
    func = "verdict"
    diff = _finite(diff, func=func, param="diff")
    try:
        low, high = ci
    except (TypeError, ValueError):
        raise InputError(f"received {ci!r}; expected a (low, high) pair.", source=f"{func}()",
                         field="ci") from None
    low = _finite(low, func=func, param="ci")
    high = _finite(high, func=func, param="ci")
    if low > high:
        raise InputError(f"received low {low} > high {high}; expected low <= high.",
                         source=f"{func}()", field="ci")
    p = _finite(p, func=func, param="p")
    if not 0.0 <= p <= 1.0:
        raise InputError(f"received {p}; expected a p-value between 0 and 1.",
                         source=f"{func}()", field="p")
    n = _check_int(n, func=func, param="n", minimum=1)
    mdd = _finite(mdd, func=func, param="mdd")
    alpha = _check_fraction(alpha, func=func, param="alpha")
    confidence = _check_fraction(confidence, func=func, param="confidence")
    name_a, name_b = (str(s) for s in names)

    res = 1.0 / n
    size = f"{n} question{'s' if n != 1 else ''}"
    evidence = f"{confidence * 100:g}% CI {_num(low)} to {_num(high)}, {_p(p)}"
    noise = (f"one question = {_num(res)}; differences below about {_num(mdd)} are not "
             f"detectable with {size}")
    ahead, behind = (name_b, name_a) if diff > 0 else (name_a, name_b)
    few = 0 < abs(diff) <= 2 * res * (1 + 1e-9)
    sig_p = p < alpha
    sig_ci = (low > 0 and diff > 0) or (high < 0 and diff < 0)

    if sig_p and sig_ci:
        text = f"{ahead} is better than {behind} by {_num(abs(diff))} ({evidence})"
        if few:
            text += "; that is one or two questions — read them"
        return text
    if diff == 0:
        return f"no difference: {name_a} and {name_b} have the same mean ({evidence}; {noise})"
    if sig_p or sig_ci:
        why = ("p is below " if sig_p else "p is not below ") + f"{alpha:g} but the interval " \
            + ("includes 0" if sig_p else "excludes 0")
        text = (f"borderline: {ahead} is ahead of {behind} by {_num(abs(diff))}, but the "
                f"evidence is mixed ({evidence}; {why}; {noise})")
    elif abs(diff) < mdd:
        text = (f"no detectable difference: the difference {_num(diff)} ({name_b} minus "
                f"{name_a}) is within the noise ({evidence}; {noise})")
    else:
        text = (f"not significant: {ahead} is ahead of {behind} by {_num(abs(diff))}, but "
                f"that is within the noise ({evidence}; {noise})")
    if few:
        text += "; the difference is one or two questions — read them"
    return text


def compare(a: Any, b: Any, *, names: tuple[str, str] = ("A", "B"), alpha: float = 0.05,
            power: float = 0.8, confidence: float = 0.95, n_resamples: int = 2000,
            n_permutations: int = 10000, seed: int = DEFAULT_SEED) -> Comparison:
    """Compare pipeline B against pipeline A on the same questions, all numbers and a verdict.

    Runs :func:`paired_bootstrap_diff` (interval of mean(b - a)), the two-sided
    :func:`paired_randomization_test` (p-value), :func:`minimum_detectable_difference` and
    :func:`verdict`, all with the same ``seed``.

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
    text = verdict(test.diff, (ci.low, ci.high), test.p_value, n, mdd, alpha=alpha,
                   confidence=ci.confidence, names=(str(names[0]), str(names[1])))
    return Comparison(names=(str(names[0]), str(names[1])), diff=test.diff, ci_low=ci.low,
                      ci_high=ci.high, confidence=ci.confidence, p_value=test.p_value,
                      method=test.method, alpha=float(alpha), n=n, n_resamples=ci.n_resamples,
                      n_permutations=test.n_permutations, seed=test.seed, mdd=mdd,
                      resolution=1.0 / n, verdict=text)


# --------------------------------------------------------------------------------------------
# agreement (judge checks)
# --------------------------------------------------------------------------------------------


def _labels(x: Any, *, func: str, param: str) -> list[Any]:
    try:
        items = list(np.asarray(x, dtype=object).ravel()) if not isinstance(x, (list, tuple)) \
            else list(x)
    except TypeError:
        raise InputError(f"received {type(x).__name__}; expected a sequence of labels.",
                         source=f"{func}()", field=param) from None
    if not items:
        raise InputError("received no labels; expected one label per item.",
                         source=f"{func}()", field=param)
    for i, v in enumerate(items):
        if v is None or (isinstance(v, (float, np.floating)) and not math.isfinite(v)):
            raise InputError(f"received {v!r} at index {i}; expected a label (number or text) "
                             f"for every item. Fix: drop unrated items from both raters.",
                             source=f"{func}()", field=param)
        if isinstance(v, np.generic):
            items[i] = v.item()
    return items


def cohen_kappa(a: Any, b: Any, *, weights: Literal["linear", "quadratic"] | None = None,
                labels: Sequence[Any] | None = None) -> float:
    """Cohen's kappa between two raters (e.g. an LLM judge and a human) on the same items.

    Definition: with categories ``c_0 < ... < c_{L-1}`` (``labels`` in the given order, or
    the sorted union of the labels used), ``O`` the L x L matrix of observed proportions
    (row: a's label, column: b's label), ``E = outer(rowsums(O), colsums(O))`` the proportions
    expected by chance and weights ``w_ij`` = ``[i != j]`` (unweighted), ``|i - j|``
    (``"linear"``) or ``(i - j)**2`` (``"quadratic"``):
    ``kappa = 1 - sum(w * O) / sum(w * E)``.  This matches
    ``sklearn.metrics.cohen_kappa_score``; note the weights use category *positions*, so for
    an ordinal scale with unused levels pass ``labels`` (e.g. ``[1, 2, 3, 4, 5]``).
    1 is perfect agreement, 0 agreement at chance level, negative worse than chance.

    :raises InputError: mismatched lengths (naming both), empty input, missing labels, a
        label not in ``labels``, unknown ``weights``, or kappa undefined (``sum(w * E) = 0``:
        both raters gave every item the same single label).
    """
    func = "cohen_kappa"
    xa = _labels(a, func=func, param="a")
    xb = _labels(b, func=func, param="b")
    if len(xa) != len(xb):
        raise InputError(f"a has {len(xa)} labels but b has {len(xb)}; expected one label per "
                         f"item from each rater, in the same item order.",
                         source=f"{func}()", field="a, b")
    if weights not in (None, "linear", "quadratic"):
        raise InputError(f"received {weights!r}; expected None, 'linear' or 'quadratic'.",
                         source=f"{func}()", field="weights")
    if labels is None:
        try:
            cats = sorted(set(xa) | set(xb))
        except TypeError:
            raise InputError("the labels mix types that cannot be ordered (e.g. numbers and "
                             "text); expected one kind. Fix: pass labels=[...] in scale order.",
                             source=f"{func}()", field="a, b") from None
    else:
        cats = list(_labels(labels, func=func, param="labels"))
        if len(set(cats)) != len(cats):
            raise InputError(f"received duplicate labels in {cats!r}; expected each once.",
                             source=f"{func}()", field="labels")
    index = {c: i for i, c in enumerate(cats)}
    for param, xs in (("a", xa), ("b", xb)):
        for i, v in enumerate(xs):
            if v not in index:
                raise InputError(f"received {v!r} at index {i}, which is not in labels "
                                 f"{cats!r}; expected only listed labels.",
                                 source=f"{func}()", field=param)
    L = len(cats)
    ia = np.fromiter((index[v] for v in xa), dtype=np.int64, count=len(xa))
    ib = np.fromiter((index[v] for v in xb), dtype=np.int64, count=len(xb))
    observed = np.bincount(ia * L + ib, minlength=L * L).reshape(L, L) / len(xa)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    pos = np.arange(L)
    gap = np.abs(pos[:, None] - pos[None, :]).astype(np.float64)
    w = {None: (gap > 0).astype(np.float64), "linear": gap, "quadratic": gap**2}[weights]
    chance = float((w * expected).sum())
    if chance <= 0:
        raise InputError(f"kappa is undefined: both raters gave all {len(xa)} items the same "
                         f"label {xa[0]!r}, so chance agreement is 1. Fix: report the raw "
                         f"agreement instead, or rate items that differ.",
                         source=f"{func}()", field="a, b")
    return float(1.0 - (w * observed).sum() / chance)


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of the ranks they span."""
    n = x.size
    order = np.argsort(x, kind="stable")
    xs = x[order]
    first = np.r_[True, xs[1:] != xs[:-1]]
    starts = np.flatnonzero(first)
    ends = np.r_[starts[1:], n]
    avg = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(n)
    ranks[order] = avg[np.cumsum(first) - 1]
    return ranks


def spearman(a: Any, b: Any) -> float:
    """Spearman's rank correlation rho between two raters' scores on the same items.

    Definition: the Pearson correlation of the ranks of ``a`` and the ranks of ``b``, where
    ranks run 1..n and tied values get the average of the ranks they span (so it equals
    ``scipy.stats.spearmanr(a, b).statistic``).  1: same order; -1: reversed.

    :raises InputError: mismatched lengths (naming both), fewer than 2 items, NaN or
        non-numeric input, or a rater who gives every item the same score (rho undefined).
    """
    func = "spearman"
    x, y = _paired(a, b, func=func)
    if x.size < 2:
        raise InputError(f"received {x.size} item; expected at least 2 to correlate.",
                         source=f"{func}()", field="a, b")
    for param, v in (("a", x), ("b", y)):
        if bool(np.all(v == v[0])):
            raise InputError(f"every item has the same score {v[0]:g}, so rho is undefined; "
                             f"expected scores that vary. Fix: report raw agreement instead.",
                             source=f"{func}()", field=param)
    rx = _average_ranks(x)
    ry = _average_ranks(y)
    rx -= rx.mean()
    ry -= ry.mean()
    rho = float((rx @ ry) / math.sqrt(float(rx @ rx) * float(ry @ ry)))
    return max(-1.0, min(1.0, rho))
