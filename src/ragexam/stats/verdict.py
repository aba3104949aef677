"""The plain-words reading of a paired comparison: one wording for every command.

:func:`assess` decides, :func:`verdict` is its text.  ``ragexam run`` (comparisons with the
baseline), ``ragexam compare`` (run against run) and :func:`ragexam.stats.compare` all word their
results here, so the same numbers always read the same way.  When several metrics of one pair are
tested together the decision uses the **corrected** p-value (Holm's), which is also shown first;
the unadjusted p follows in brackets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ragexam import fmt
from ragexam.errors import InputError
from ragexam.stats._checks import _check_fraction, _check_int, _finite

__all__ = ["Verdict", "assess", "verdict", "READINGS"]

#: The short readings (table cells), from :attr:`Verdict.reading`.
READINGS = ("better", "worse", "same", "not after Holm", "borderline", "within noise", "not significant")


@dataclass(frozen=True)
class Verdict:
    """``text``: the sentence; ``reading``: a few words for a table cell (one of :data:`READINGS`,
    seen from B: ``better`` means B is better than A); ``significant``: the (corrected) p-value is
    below alpha and the interval excludes 0 on the side of the difference."""

    text: str
    reading: str
    significant: bool


def _check_p(p: float, param: str) -> float:
    p = _finite(p, func="verdict", param=param)
    if not 0.0 <= p <= 1.0:
        raise InputError(f"received {p}; expected a p-value between 0 and 1.", source="verdict()", field=param)
    return p


def assess(diff: float, ci: tuple[float, float], p: float, n: int, mdd: Optional[float], *,
           p_adjusted: Optional[float] = None, correction: str = "Holm", alpha: float = 0.05,
           confidence: float = 0.95, names: tuple[str, str] = ("A", "B"), paired: bool = True) -> Verdict:
    """Read a paired comparison of B against A (higher is better) in plain words.

    ``diff`` is mean(b - a), ``ci`` its (low, high) interval at ``confidence``, ``p`` the
    two-sided p-value, ``n`` the number of questions, ``mdd`` the minimum detectable
    difference, ``None`` when the per-question differences do not vary (no MDD is stated then:
    :func:`ragexam.stats.power.minimum_detectable_difference`).  ``p_adjusted`` is the p-value corrected for the other tests of the family
    (``correction`` names the method, e.g. Holm across the metrics of a pipeline pair); when it is
    given, every decision below uses it instead of ``p``, and the text shows it first.  With
    ``q`` the p-value decided on, the cases, in order:

    * q < alpha and the interval excludes 0 on the side of ``diff``:
      ``"B is better than A by 0.12 (95% CI 0.05 to 0.19, p=0.003)"`` — reading ``better``
      (``worse`` when A is ahead).
    * diff = 0: ``"no difference: A and B have the same mean (...)"`` — ``same``; without an MDD
      (every difference 0): ``"no difference: A and B gave identical values on each of the 60
      questions (one question = 0.017)"``; ``paired=False`` (two groups, ``n`` the smaller): neither group
      varies, said so (``"no difference: every value of A and of B is the same"``).
    * corrected only: p < alpha and the interval excludes 0, but the corrected p does not:
      ``"not significant after Holm's correction: B is ahead of A by 0.05, ... (95% CI 0.01 to
      0.09, Holm-adjusted p=0.16 (unadjusted p=0.022); ...)"`` — ``not after Holm``.
    * exactly one of (q < alpha, interval excludes 0): ``"borderline: ..."`` — ``borderline``.
    * |diff| < mdd: ``"no detectable difference: the difference 0.02 (B minus A) is within
      the noise (95% CI ..., p=...; one question = 0.017; differences below about 0.09 are
      not detectable with 60 questions)"`` — ``within noise``.
    * otherwise: ``"not significant: B is ahead of A by ..., but that is within the noise
      (...)"`` — ``not significant``.

    When ``0 < |diff| <= 2/n`` (one or two questions' worth on a 0/1 scale) the text adds
    ``"one or two questions — read them"``.  Numbers are shown with two significant digits, the
    interval as in the tables (:func:`ragexam.fmt.signed_ci`: ``-0.015 to +0.123``).

    :raises InputError: a non-finite number, low > high, a p-value outside [0, 1], n < 1.
    """
    func = "verdict"
    diff = _finite(diff, func=func, param="diff")
    low, high = _check_ci(ci)
    p = _check_p(p, "p")
    adjusted = _check_p(p_adjusted, "p_adjusted") if p_adjusted is not None else None
    n = _check_int(n, func=func, param="n", minimum=1)
    mdd = None if mdd is None else _finite(mdd, func=func, param="mdd")
    alpha = _check_fraction(alpha, func=func, param="alpha")
    confidence = _check_fraction(confidence, func=func, param="confidence")
    name_a, name_b = (str(s) for s in names)

    res = 1.0 / n
    size = f"{n} question{'s' if n != 1 else ''}"
    shown_p = fmt.p_value(p, prefix=True) if adjusted is None else f"{correction}-adjusted {fmt.p_value(adjusted, prefix=True)} (unadjusted {fmt.p_value(p, prefix=True)})"
    evidence = f"{confidence * 100:g}% CI {fmt.signed_ci((low, high))}, {shown_p}"
    noise = f"one question = {fmt.approx(res)}; " + (
        f"differences below about {fmt.approx(mdd)} are not detectable with {size}" if mdd is not None
        else "neither group varies: no spread to detect a difference against" if not paired
        else "a single question has no spread to detect a difference against" if n == 1
        else f"every question differs by the same {fmt.approx(diff)}: no spread to detect a difference against")
    ahead, behind = (name_b, name_a) if diff > 0 else (name_a, name_b)
    few = 0 < abs(diff) <= 2 * res * (1 + 1e-9)
    q = p if adjusted is None else adjusted
    sig_p = q < alpha
    sig_ci = (low > 0 and diff > 0) or (high < 0 and diff < 0)

    if sig_p and sig_ci:
        text = f"{ahead} is better than {behind} by {fmt.approx(abs(diff))} ({evidence})"
        if few:
            text += "; that is one or two questions — read them"
        return Verdict(text, "better" if diff > 0 else "worse", True)
    if diff == 0 and mdd is None and not paired:
        return Verdict(f"no difference: every value of {name_a} and of {name_b} is the same", "same", False)
    if diff == 0 and mdd is None and n > 1:
        return Verdict(f"no difference: {name_a} and {name_b} gave identical values on each of the {size} "
                       f"(one question = {fmt.approx(res)})", "same", False)
    if diff == 0:
        return Verdict(f"no difference: {name_a} and {name_b} have the same mean ({evidence}; {noise})", "same",
                       False)
    text, reading = _unclear(diff, mdd, (name_a, name_b), (sig_p, sig_ci, adjusted is not None, p < alpha),
                             correction, alpha, (evidence, noise))
    if few:
        text += "; the difference is one or two questions — read them"
    return Verdict(text, reading, False)


def _check_ci(ci: tuple[float, float]) -> tuple[float, float]:
    try:
        low, high = ci
    except (TypeError, ValueError):
        raise InputError(f"received {ci!r}; expected a (low, high) pair.", source="verdict()",
                         field="ci") from None
    low = _finite(low, func="verdict", param="ci")
    high = _finite(high, func="verdict", param="ci")
    if low > high:
        raise InputError(f"received low {low} > high {high}; expected low <= high.",
                         source="verdict()", field="ci")
    return low, high


def _unclear(diff: float, mdd: Optional[float], names: tuple[str, str], signs: tuple[bool, bool, bool, bool], correction: str,
             alpha: float, said: tuple[str, str]) -> tuple[str, str]:
    """The sentence and reading of a difference that is not significant (the cases of :func:`assess` after
    ``same``): ``signs`` is (q below alpha, the interval excludes 0, q is a corrected p, the unadjusted p is
    below alpha), ``said`` the evidence (interval and p) and the noise (one question, MDD) in words."""
    name_a, name_b = names
    sig_p, sig_ci, corrected, raw_p_below = signs
    evidence, noise = said
    ahead, behind = (name_b, name_a) if diff > 0 else (name_a, name_b)
    if corrected and raw_p_below and sig_ci:
        return (f"not significant after {correction}'s correction: {ahead} is ahead of {behind} by "
                f"{fmt.approx(abs(diff))}, which one test alone would call significant, but not with the other "
                f"tests of this comparison ({evidence}; {noise})"), f"not after {correction}"
    if sig_p or sig_ci:
        which = f"the {correction}-adjusted p" if corrected else "p"
        why = (f"{which} is below " if sig_p else f"{which} is not below ") + f"{alpha:g} but the interval " \
            + ("includes 0" if sig_p else "excludes 0")
        return (f"borderline: {ahead} is ahead of {behind} by {fmt.approx(abs(diff))}, but the "
                f"evidence is mixed ({evidence}; {why}; {noise})"), "borderline"
    if mdd is not None and abs(diff) < mdd:
        return (f"no detectable difference: the difference {fmt.approx(diff)} ({name_b} minus "
                f"{name_a}) is within the noise ({evidence}; {noise})"), "within noise"
    why = "that is within the noise" if mdd is not None else "too few questions to tell"
    return (f"not significant: {ahead} is ahead of {behind} by {fmt.approx(abs(diff))}, but "
            f"{why} ({evidence}; {noise})"), "not significant"


def verdict(diff: float, ci: tuple[float, float], p: float, n: int, mdd: Optional[float], *,
            p_adjusted: Optional[float] = None, correction: str = "Holm", alpha: float = 0.05,
            confidence: float = 0.95, names: tuple[str, str] = ("A", "B")) -> str:
    """The sentence of :func:`assess` (same parameters)."""
    return assess(diff, ci, p, n, mdd, p_adjusted=p_adjusted, correction=correction, alpha=alpha,
                  confidence=confidence, names=names).text
