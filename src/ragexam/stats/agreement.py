"""Agreement between two raters on the same items (judge checks): Cohen's kappa, Spearman's rho."""

from __future__ import annotations

import math
from typing import Any, Literal, Sequence

import numpy as np

from ragexam.errors import InputError
from ragexam.stats._checks import _paired

__all__ = ["cohen_kappa", "spearman"]


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
