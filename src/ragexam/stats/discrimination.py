"""How well a score separates good items from bad ones: ROC AUC with a cluster-bootstrap interval.

:func:`auc` is the area under the ROC curve of scores of positive items against negative ones -- the
Mann-Whitney statistic: over every (positive, negative) pair, 1 when the positive scores higher, 0.5 on a tie,
0 otherwise, averaged.  0.5 is a judge that cannot tell them apart, 1.0 one that always can.  It equals
``U / (n_pos * n_neg)`` of ``scipy.stats.mannwhitneyu`` and scikit-learn's ``roc_auc_score``.

:func:`auc_ci` adds a percentile-bootstrap interval that resamples *clusters* (questions: a question's
positive context and its negatives are drawn together, since they share the question), as
:func:`ragexam.stats.bootstrap.bootstrap_indices` draws them: ``default_rng(seed).integers(0, n_clusters,
size=(n_resamples, n_clusters))``.  A resample that happens to hold no positive or no negative is skipped and
counted (``n_skipped``).

**The interval is never narrower than the Wilson interval of the AUC over the clusters**
(:func:`ragexam.stats.proportion.wilson` with ``n = n_clusters``): on a handful of questions that a judge all
orders correctly, every resample is 1.0 and the bootstrap says ``[1.00-1.00]`` -- certainty from 4 questions.
An AUC is a mean of per-question values in [0, 1], whose variance is at most ``AUC (1 - AUC)`` per question,
so the Wilson interval with ``n_clusters`` is a conservative normal interval for it; the reported interval
spans both (``floored`` says whether the floor widened it).  A perfect separation on 8 questions is then
[0.68-1.00], on 10 [0.72-1.00], on 40 [0.91-1.00].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

import numpy as np

from ragexam.signature import Signature
from ragexam.stats.signed import Signed
from ragexam.errors import InputError
from ragexam.stats._checks import DEFAULT_SEED, _check_fraction, _check_int, _check_seed
from ragexam.stats.bootstrap import bootstrap_indices
from ragexam.stats.proportion import wilson

__all__ = ["auc", "AUCInterval", "auc_ci"]


def _scores(values: Sequence[float], name: str) -> np.ndarray:
    arr = np.asarray(list(values), dtype=float)
    if arr.size == 0:
        raise InputError(f"no {name} scores; expected at least one", field=name)
    if not np.all(np.isfinite(arr)):
        raise InputError(f"the {name} scores hold NaN or infinite values", field=name)
    return arr


def _kernel(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """``K[i, j]``: 1 when positive ``i`` scores above negative ``j``, 0.5 on a tie, else 0."""
    diff = pos[:, None] - neg[None, :]
    return (diff > 0) + 0.5 * (diff == 0)


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """ROC AUC of ``pos`` against ``neg`` (module docstring).

    >>> auc([0.9, 0.8, 0.4], [0.1, 0.4])
    0.9166666666666666
    """
    return float(_kernel(_scores(pos, "positive"), _scores(neg, "negative")).mean())


@dataclass(frozen=True)
class AUCInterval(Signed):
    """An AUC and its percentile cluster-bootstrap interval (module docstring)."""

    auc: float
    low: float
    high: float
    n_pos: int
    n_neg: int
    n_clusters: int
    n_resamples: int
    n_skipped: int
    seed: int
    confidence: float
    floored: bool = False

    @property
    def signature(self) -> Signature:
        return Signature([("stat", "auc"), ("ci", "percentile+wilson_floor"), ("resample", "clusters"),
                          ("conf", float(self.confidence)), ("bs", self.n_resamples), ("seed", self.seed),
                          ("n", self.n_clusters)])


def auc_ci(pos: Sequence[float], neg: Sequence[float], pos_clusters: Sequence[Hashable],
           neg_clusters: Sequence[Hashable], *, n_resamples: int = 2000, seed: int = DEFAULT_SEED,
           confidence: float = 0.95) -> AUCInterval:
    """:func:`auc` with a percentile bootstrap over clusters (``pos_clusters[i]`` is positive ``i``'s cluster,
    e.g. its question id), floored by the Wilson interval over the clusters (module docstring)."""
    p, n = _scores(pos, "positive"), _scores(neg, "negative")
    if len(pos_clusters) != p.size or len(neg_clusters) != n.size:
        raise InputError("expected one cluster per score", field="clusters")
    _check_int(n_resamples, func="auc_ci", param="n_resamples", minimum=1)
    _check_seed(seed, func="auc_ci")
    _check_fraction(confidence, func="auc_ci", param="confidence")
    names = list(dict.fromkeys(list(pos_clusters) + list(neg_clusters)))
    where = {c: i for i, c in enumerate(names)}
    pc = np.array([where[c] for c in pos_clusters])
    nc = np.array([where[c] for c in neg_clusters])
    kernel = _kernel(p, n)
    values = []
    for idx in bootstrap_indices(len(names), n_resamples, seed):
        counts = np.zeros((idx.shape[0], len(names)))
        np.add.at(counts, (np.repeat(np.arange(idx.shape[0]), idx.shape[1]), idx.ravel()), 1.0)
        wp, wn = counts[:, pc], counts[:, nc]
        total = wp.sum(axis=1) * wn.sum(axis=1)
        num = ((wp @ kernel) * wn).sum(axis=1)
        ok = total > 0
        values.append(num[ok] / total[ok])
    dist = np.concatenate(values)
    if dist.size == 0:
        raise InputError("no resample held both a positive and a negative item", field="clusters")
    alpha = (1.0 - confidence) / 2.0
    low, high = (float(x) for x in np.quantile(dist, [alpha, 1.0 - alpha]))
    value = float(kernel.mean())
    w_low, w_high = wilson(min(1.0, max(0.0, value)), len(names), confidence=confidence)
    floored = w_low < low or w_high > high
    return AUCInterval(value, min(low, w_low), max(high, w_high), int(p.size), int(n.size), len(names),
                       n_resamples, n_resamples - int(dist.size), seed, confidence, floored)
