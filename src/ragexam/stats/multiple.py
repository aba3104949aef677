"""Multiple-comparison corrections: Holm (family-wise error) and Benjamini–Hochberg (false discovery)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragexam.errors import InputError
from ragexam.stats._checks import _numeric

__all__ = ["holm", "benjamini_hochberg"]


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

