"""``ragexam.plots``: matplotlib figures of a run or a score (``pip install 'ragexam[plot]'``).

``import ragexam.plots`` and ``from ragexam.plots import k_sweep`` both work; the figures are drawn by
:mod:`ragexam.report.plots` (see there for each function).
"""

from __future__ import annotations

from ragexam.report.plots import *  # noqa: F401,F403
from ragexam.report.plots import __all__  # noqa: F401
