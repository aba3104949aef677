"""How ragexam writes numbers and counts for people: the one set of formatters.

Every console table, HTML page, SVG label and CLI message formats its numbers here, so a mean,
an interval or a p-value reads the same everywhere.  This module imports nothing of ragexam
(it sits below every other package) and nothing outside the standard library.

=====================  =========================  ==============================================
function               example                    rule
=====================  =========================  ==============================================
:func:`num`            ``0.615``                  fixed decimals (3); :data:`MISSING` for None,
                                                  NaN, ±inf, booleans and non-numbers
:func:`ci`             ``.49–.74``                an interval, compact: 2 decimals, the leading
                                                  ``0`` dropped (``-.05``, ``1.00``); ``""`` when
                                                  there is no interval; ``short=False`` keeps it
                                                  (``0.490–0.740`` with ``digits=3``)
:func:`signed`         ``+0.062``                 a difference, always with its sign; a value
                                                  that rounds to zero is ``0.000`` (never ``-0.000``)
:func:`signed_ci`      ``-0.015 to +0.123``       an interval of differences
:func:`p_value`        ``<0.001``, ``0.022``,     3 decimals below 0.1, else 2; ``prefix=True``
                       ``0.29``                   gives ``p<0.001`` / ``p=0.022``
:func:`approx`         ``0.017``, ``1.5``         two significant digits, no exponent, no
                                                  trailing zeros (for numbers inside sentences)
:func:`percent`        ``95%``, ``12.5%``         a share in [0, 1] as a percentage
:func:`cost`           ``$0.0123``                US dollars; a text (e.g. ``"unknown"``) as is
:func:`plural`         ``1 document``,            a count with its noun in the right number
                       ``2 queries``
:func:`noun`           ``queries``                the noun alone, in the number for ``n``
:func:`sentence`       ``Connection error.``      a message ending in exactly one full stop
=====================  =========================  ==============================================
"""

from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple, Union

__all__ = ["MISSING", "num", "ci", "signed", "signed_ci", "p_value", "approx", "percent", "cost", "plural",
           "noun", "sentence", "is_number", "finite"]

#: what a missing or non-finite number is shown as
MISSING = "-"

#: an interval ``(low, high)``, or none (each formatter shows a missing one as such)
Interval = Optional[Sequence[Optional[float]]]


def finite(x: object) -> Optional[float]:
    """``x`` as a float when it is a finite int or float (booleans are not numbers here), else ``None``."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        return None
    return float(x)


def is_number(x: object) -> bool:
    """``True`` for a finite int or float (booleans are not numbers here)."""
    return finite(x) is not None


def _fixed(x: float, digits: int) -> str:
    s = f"{float(x):.{digits}f}"
    # a value that rounds to zero has no sign
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def num(x: Optional[float], digits: int = 3) -> str:
    """``x`` with ``digits`` decimals (``0.615``); :data:`MISSING` when ``x`` is not a finite number."""
    return _fixed(x, digits) if is_number(x) else MISSING


def _interval(pair: Interval) -> Optional[Tuple[float, float]]:
    if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(is_number(v) for v in pair):
        return float(pair[0]), float(pair[1])
    return None


def _drop_zero(s: str) -> str:
    if s.startswith("0."):
        return s[1:]
    if s.startswith("-0."):
        return "-" + s[2:]
    return s


def ci(pair: Interval, *, digits: int = 2, short: bool = True) -> str:
    """A confidence interval ``(low, high)`` as ``.49–.74`` (``short``: the leading ``0`` dropped, for
    narrow cells) or ``0.49–0.74``; ``""`` when ``pair`` is not two finite numbers."""
    iv = _interval(pair)
    if iv is None:
        return ""
    lo, hi = (_fixed(v, digits) for v in iv)
    if short:
        lo, hi = _drop_zero(lo), _drop_zero(hi)
    return f"{lo}–{hi}"


def signed(x: Optional[float], digits: int = 3) -> str:
    """A difference with its sign: ``+0.062``, ``-0.015``; ``0.000`` when it rounds to zero."""
    if not is_number(x):
        return MISSING
    s = _fixed(x, digits)
    return s if s.startswith("-") or float(s) == 0 else "+" + s


def signed_ci(pair: Interval, digits: int = 3) -> str:
    """An interval of differences: ``-0.015 to +0.123``; :data:`MISSING` when there is none."""
    iv = _interval(pair)
    if iv is None:
        return MISSING
    return f"{signed(iv[0], digits)} to {signed(iv[1], digits)}"


def p_value(p: Optional[float], *, prefix: bool = False) -> str:
    """``<0.001``, ``0.022`` (3 decimals below 0.1), ``0.29`` (2 decimals from 0.1 on).

    ``prefix=True`` gives the form used inside sentences: ``p<0.001``, ``p=0.022``.
    :data:`MISSING` when ``p`` is not a finite number."""
    if not is_number(p):
        return MISSING
    p = float(p)
    if p < 0.001:
        return "p<0.001" if prefix else "<0.001"
    text = f"{p:.3f}" if p < 0.1 else f"{p:.2f}"
    return f"p={text}" if prefix else text


def approx(x: Optional[float]) -> str:
    """Two significant digits, no exponent, no trailing zeros: ``0.12``, ``0.017``, ``0.09``, ``1.5``,
    ``12.34`` (numbers of 1 and more keep two decimals); ``0`` for zero."""
    if not is_number(x):
        return MISSING
    x = float(x)
    if x == 0:
        return "0"
    ax = abs(x)
    decimals = 2 if ax >= 1 else max(2, 1 - math.floor(math.log10(ax)))
    s = f"{x:.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def percent(share: Optional[float], digits: int = 0) -> str:
    """A share in [0, 1] as a percentage: ``percent(0.95)`` is ``95%``, ``percent(0.125, 1)`` ``12.5%``."""
    if not is_number(share):
        return MISSING
    return f"{_fixed(float(share) * 100, digits)}%"


def cost(usd: Union[float, str, None]) -> str:
    """``$0.0123`` (4 decimals); a text such as ``"unknown"`` is returned as it is."""
    if isinstance(usd, str):
        return usd
    return f"${_fixed(usd, 4)}" if is_number(usd) else MISSING


_ES_ENDINGS = ("s", "x", "z", "ch", "sh")


def json_kind(value: object) -> str:
    """What a parsed JSON value is, in JSON's words with an article: ``null``, ``a boolean``, ``a number``,
    ``a string``, ``an array``, ``an object`` (another Python value: ``a <type>``), for "received ..." messages."""
    if value is None:
        return "null"
    kinds = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
             tuple: "an array", dict: "an object"}
    return kinds.get(type(value), f"a {type(value).__name__}")


def noun(n: float, word: str, many: Optional[str] = None) -> str:
    """``word`` in the number for ``n``: singular for exactly 1 (or -1), else the plural ``many``
    (default: English rules: ``query`` → ``queries``, ``match`` → ``matches``, ``document`` →
    ``documents``; a word ending in a vowel + ``y`` takes ``s``: ``day`` → ``days``)."""
    if is_number(n) and abs(float(n)) == 1:
        return word
    if many is not None:
        return many
    if len(word) > 1 and word.endswith("y") and word[-2].lower() not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(_ES_ENDINGS):
        return word + "es"
    return word + "s"


def plural(n: float, word: str, many: Optional[str] = None) -> str:
    """A count and its noun: ``plural(1, "document")`` is ``1 document``, ``plural(3, "query")``
    ``3 queries``; ``many`` gives an irregular plural (``plural(2, "analysis", "analyses")``)."""
    return f"{n} {noun(n, word, many)}"


def sentence(text: str) -> str:
    """``text`` ending in exactly one full stop (``"Connection error."`` stays as it is, ``"HTTP 500"``
    gains one, ``"done.."`` loses one); text ending in ``?``, ``!`` or ``…`` is left alone."""
    s = str(text).rstrip()
    if s.endswith("..."):
        return s
    while s.endswith(".."):
        s = s[:-1]
    return s if s.endswith((".", "?", "!", "…")) or not s else s + "."

