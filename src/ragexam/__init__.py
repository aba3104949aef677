"""ragexam: grade retrieval-augmented generation pipelines like a mock exam.

Importing ``ragexam`` is cheap (no numpy, no pandas): the public names below load their
modules on first use.  The verbs (``run``, ``grade``, ``score``, ``generate``) are those of
:mod:`ragexam.api`, the functions the command line calls.
"""

from __future__ import annotations

from ragexam._lazy import by_module, lazy_exports
from ragexam._version import __version__

_LAZY = {
    **by_module({
        "ragexam.metrics.ranking": "evaluate Qrels Run parse_metric rank_metrics",
        "ragexam.api": "run grade generate generate_plan score locate_evidence",
        "ragexam.analysis.exam.run": "RunResult",
    }),
    "plots": ("ragexam.plots", None),  # a module: ragexam.plots.k_sweep(result) and friends
}

__all__ = ["__version__", *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
