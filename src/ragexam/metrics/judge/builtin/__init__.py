"""The built-in judge metrics: one module each, whose docstring is the metric's definition.

Each module declares ``METRIC = JudgeMetric(...)`` with keywords (:mod:`ragexam.metrics.judge.metric`): its
prompt texts per language and their version (:class:`~ragexam.metrics.judge.prompts.Prompts`), the reply
contract, the reader, the stub reply, the token allowance, the pass and agreement-unit rules, and its special
cases as fields (quotable units, an evidence twin, the judge's average checked, per-answer or not, the commands
that judge it by default, its place in reports).  Every module of this package is one metric: :func:`load`
imports them all (the registry does, on first use), so a new built-in metric is one new file here and one test,
and its name is written in that file only (``tests/test_judge_builtin.py`` checks).
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from typing import List

from ragexam.metrics.judge.metric import JudgeMetric

__all__ = ["load"]


def load() -> List[JudgeMetric]:
    """The ``METRIC`` of every module of this package, in report order (``order``, then name); ``TypeError``
    for a module that declares none."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = import_module(f"{__name__}.{info.name}")
        metric = getattr(module, "METRIC", None)
        if not isinstance(metric, JudgeMetric):
            raise TypeError(f"{module.__name__} declares no METRIC = JudgeMetric(...)")
        found.append(metric)
    return sorted(found, key=lambda m: (m.order, m.name))
