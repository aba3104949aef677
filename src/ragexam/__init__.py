"""ragexam: grade retrieval-augmented generation pipelines like a mock exam.

Importing ``ragexam`` is cheap (no numpy, no pandas): the public names below load their
modules on first use.  The verbs (``run``, ``grade``, ``score``, ``generate``) are those of
:mod:`ragexam.api`, the functions the command line calls.
"""

from __future__ import annotations

from ragexam._lazy import lazy_exports
from ragexam._version import __version__

_LAZY = {
    "evaluate": ("ragexam.metrics.ranking", "evaluate"),
    "Qrels": ("ragexam.metrics.ranking", "Qrels"),
    "Run": ("ragexam.metrics.ranking", "Run"),
    "parse_metric": ("ragexam.metrics.ranking", "parse_metric"),
    "rank_metrics": ("ragexam.metrics.ranking", "rank_metrics"),
    "run": ("ragexam.api", "run"),
    "grade": ("ragexam.api", "grade"),
    "RunResult": ("ragexam.analysis.exam.run", "RunResult"),
    "generate": ("ragexam.api", "generate"),
    "generate_plan": ("ragexam.api", "generate_plan"),
    "score": ("ragexam.api", "score"),
    "locate_evidence": ("ragexam.api", "locate_evidence"),
    "plots": ("ragexam.plots", None),  # a module: ragexam.plots.k_sweep(result) and friends
}

__all__ = ["__version__", *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
