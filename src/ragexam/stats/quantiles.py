"""Percentiles of a spread (latency, tokens): p50, p90 and p99 with the number of values, and which ones are too few.

:func:`percentiles` computes ``numpy.percentile(values, q)`` with numpy's default method (``linear``: Hyndman and
Fan's type 7, the one most dashboards use) and reports a percentile only when the values can tell it apart from the
largest one: the ``q``-th percentile needs at least ``ceil(100 / (100 - q))`` values (p50: 2, p90: 10, p99: 100),
so that at least one value lies above it.  With fewer, type 7 only interpolates between the two largest values,
and "p99 = 1.9 s" on 12 requests would be the second-slowest request under another name; such a percentile is
``None`` and :attr:`Percentiles.too_few` says how many values it needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Sequence

import numpy as np

from ragexam.errors import InputError
from ragexam.stats._checks import _numeric

__all__ = ["Percentiles", "percentiles", "min_values", "PERCENTILES"]

#: the percentiles a spread reports
PERCENTILES = (50, 90, 99)


def min_values(q: float) -> int:
    """How many values the ``q``-th percentile needs (module docstring): ``ceil(100 / (100 - q))``."""
    if not 0 < q < 100:
        raise InputError(f"received {q!r}; expected a percentile strictly between 0 and 100", source="percentiles()",
                         field="q")
    return math.ceil(100.0 / (100.0 - q) - 1e-9)


@dataclass(frozen=True)
class Percentiles:
    """The percentiles of ``n`` values: ``values[q]`` (``None`` when too few) and ``too_few[q]``: the number of
    values the percentile needs, for those it could not report."""

    n: int
    values: Dict[int, Optional[float]] = field(default_factory=dict)
    too_few: Dict[int, int] = field(default_factory=dict)
    method: str = "linear"

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"n": self.n, "method": self.method}
        out.update({f"p{q}": v for q, v in self.values.items()})
        if self.too_few:
            out["too_few"] = {f"p{q}": m for q, m in self.too_few.items()}
        return out


def percentiles(values: Sequence[float], qs: Sequence[int] = PERCENTILES) -> Percentiles:
    """The percentiles ``qs`` of ``values`` (finite numbers; none gives ``n = 0`` and no percentile), each
    ``numpy.percentile(values, q)`` when there are at least :func:`min_values` ``(q)`` values (module docstring)."""
    if len(values) == 0:
        return Percentiles(0, {int(q): None for q in qs}, {int(q): min_values(q) for q in qs})
    x = _numeric(list(values), func="percentiles", param="values")
    out: Dict[int, Optional[float]] = {}
    few: Dict[int, int] = {}
    for q in qs:
        need = min_values(q)
        if x.size >= need:
            out[int(q)] = float(np.percentile(x, q))
        else:
            out[int(q)] = None
            few[int(q)] = need
    return Percentiles(int(x.size), out, few)
