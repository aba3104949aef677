"""Prediction-powered inference: a judge's mean corrected by a few human labels (Angelopoulos et al. 2023; ARES).

A judge scores all ``N`` items (``f``); humans label ``n`` of them (``y``).  The judge mean alone is biased
by however much the judge errs, and its interval -- however narrow -- is around the wrong number.  The
prediction-powered estimate of the mean *human* label is

    theta = mean(f over all N items) + mean(y - f over the n labelled items)

(the judge mean plus the average correction the labels show).  It is unbiased whatever the judge's bias, and
with a judge that tracks the humans its interval is much narrower than the labels' own.  Here the labelled
items are among the ``N`` (the judge scores every item), so its variance is

    var(theta) = var(f) / N + var(y - f) / n + 2 cov(f, y - f) / N

(the last term: the two means share the labelled items), estimated on the items, and the interval is
``theta +- z * sqrt(var)`` (normal approximation, ``z`` the ``(1 + confidence) / 2`` quantile).  Variances
use ``ddof = 1``.  With labels on a random subset of the items (as ARES samples them) the interval covers the
mean human label at its nominal rate; ``tests/test_stats_ppi.py`` checks that over 2,000 seeded simulations
of a biased judge, where the judge-only interval almost never covers it.

Beside it, :func:`ppi_mean` reports the labels-only estimate (``mean(y)`` with its normal interval), so a
judge too poor to help (its ``y - f`` as spread as ``y`` itself) shows as a PPI interval no narrower than the
labels'.

**No spread is not certainty.**  When the labels have no variance (every label 5) the labels-only interval is
``[5.00-5.00]``, and when the corrections have none either so is the PPI interval -- read as certainty from a
handful of labels.  With the labels' ``scale`` (``(lowest, highest)``), an interval of zero width is replaced by the
Wilson interval of the estimate's place on the scale (:func:`ragexam.stats.proportion.wilson_on_scale`) over the
``n_labelled`` labels (``floored``): 6 labels all 5 on 1-5 give [3.44-5.00].

**Never narrower than the labels support.**  The correction ``mean(y - f)`` is known only as well as the labels
show it: with a rectifier ``y - f`` of no spread (the judge failed both labelled answers a person passed: every
correction +1) its ``var(y - f) / n`` term is 0 and the interval would rest on the judge's ``N`` scores alone, and
with fewer than :data:`MIN_LABELS` labels ``var(y - f)`` is itself a guess.  In either case (with ``scale``) the
corrected interval is widened to span the Wilson interval of its estimate's place on the scale over the
``n_labelled`` labels (``floored``) -- the same floor as above, so two labels give at least the width two labels
support, never a narrow interval around the judge's mean.

**Within the scale.**  The estimate is a mean of labels on ``scale``, but ``mean(f) + mean(y - f)`` is not bounded
(a judge pass rate of 0.83 plus a correction of +1 from two labels is 1.83): with ``scale`` the estimate and both
intervals are clipped to it (``clipped``, which the report says), and an estimate that had to be clipped is
floored as above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

from ragexam.signature import Signature
from ragexam.stats.signed import Signed
from ragexam.errors import InputError
from ragexam.stats._checks import _check_fraction
from ragexam.stats.power import normal_quantile
from ragexam.stats.proportion import wilson_on_scale

__all__ = ["PPIEstimate", "ppi_mean", "MIN_LABELS"]

#: below this many labels the corrected interval is floored by Wilson's over the labels (module docstring)
MIN_LABELS = 10


@dataclass(frozen=True)
class PPIEstimate(Signed):
    """The prediction-powered mean (module docstring): ``estimate`` with ``low``/``high`` and ``se``; the
    ``judge_mean`` over all ``n_all`` items; the mean ``correction`` (human - judge) over the ``n_labelled``
    items; and the labels-only ``labels_mean`` with its interval."""

    estimate: float
    low: float
    high: float
    se: float
    judge_mean: float
    correction: float
    n_all: int
    n_labelled: int
    labels_mean: float
    labels_low: float
    labels_high: float
    confidence: float
    floored: bool = False
    #: the estimate or an interval lay outside ``scale`` and was clipped to it
    clipped: bool = False

    @property
    def signature(self) -> Signature:
        return Signature([("stat", "ppi_mean"), ("ci", "normal"), ("conf", float(self.confidence)),
                          ("n_all", self.n_all), ("n_labelled", self.n_labelled)])


def _values(x: Sequence[float], name: str, minimum: int) -> np.ndarray:
    arr = np.asarray(list(x), dtype=float)
    if arr.size < minimum:
        raise InputError(f"received {arr.size} value(s); expected at least {minimum}", source="ppi_mean()",
                         field=name)
    if not np.all(np.isfinite(arr)):
        raise InputError("holds NaN or infinite values", source="ppi_mean()", field=name)
    return arr


def ppi_mean(judge_all: Sequence[float], judge_labelled: Sequence[float], human: Sequence[float], *,
             confidence: float = 0.95, scale: Optional[Tuple[float, float]] = None) -> PPIEstimate:
    """The prediction-powered estimate of the mean human label (module docstring).

    :param judge_all: the judge's score of every item (the labelled ones included).
    :param judge_labelled: the judge's score of each labelled item, parallel to ``human``.
    :param human: the human label of each labelled item, on the judge's scale.
    :param scale: ``(lowest, highest)`` value of a label: the estimate and intervals are clipped to it, and an
        interval is floored by Wilson's on it when it has zero width, its corrections no spread, or it rests on
        fewer than :data:`MIN_LABELS` labels (module docstring).
    """
    f = _values(judge_all, "judge_all", 2)
    fl = _values(judge_labelled, "judge_labelled", 2)
    y = _values(human, "human", 2)
    if fl.size != y.size:
        raise InputError(f"{fl.size} judge scores but {y.size} human labels; expected one judge score per label",
                         source="ppi_mean()", field="human")
    if fl.size > f.size:
        raise InputError(f"{fl.size} labelled items but {f.size} items in all; the labelled items are among all",
                         source="ppi_mean()", field="judge_all")
    _check_fraction(confidence, func="ppi_mean", param="confidence")
    r = y - fl
    n_all, n = f.size, y.size
    var = f.var(ddof=1) / n_all + r.var(ddof=1) / n + 2.0 * np.cov(fl, r, ddof=1)[0, 1] / n_all
    se = math.sqrt(max(float(var), 0.0))
    z = normal_quantile((1.0 + confidence) / 2.0)
    est = float(f.mean() + r.mean())
    lab_se = float(y.std(ddof=1)) / math.sqrt(n)
    low, high = est - z * se, est + z * se
    lab_low, lab_high = float(y.mean()) - z * lab_se, float(y.mean()) + z * lab_se
    floored = clipped = False
    if scale is not None and scale[1] > scale[0]:
        lo, hi = float(scale[0]), float(scale[1])
        clipped = not lo <= est <= hi
        est = min(hi, max(lo, est))
        if high - low <= 0 or clipped or n < MIN_LABELS or float(np.ptp(r)) == 0.0:
            w_low, w_high = wilson_on_scale(est, n, scale, confidence=confidence)
            floored = w_low < low - 1e-12 or w_high > high + 1e-12
            low, high = min(low, w_low), max(high, w_high)
        if lab_high - lab_low <= 0:
            (lab_low, lab_high), floored = wilson_on_scale(float(y.mean()), n, scale, confidence=confidence), True
        bounds = (low, high, lab_low, lab_high)
        low, high, lab_low, lab_high = (min(hi, max(lo, v)) for v in bounds)
        clipped = clipped or (low, high, lab_low, lab_high) != bounds
    return PPIEstimate(est, low, high, se, float(f.mean()), float(r.mean()), n_all, n, float(y.mean()), lab_low,
                       lab_high, confidence, floored, clipped)
