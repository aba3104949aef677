"""ragexam: grade retrieval-augmented generation pipelines like a mock exam.

Importing ``ragexam`` is cheap (no numpy, no pandas): the public names below load their
modules on first use.
"""

from __future__ import annotations

from typing import Any

from ragexam._version import __version__

__all__ = ["__version__", "evaluate", "Qrels", "Run", "parse_metric", "rank_metrics", "run", "grade", "RunResult", "plots",
           "generate", "generate_plan", "score"]

_LAZY = {
    "evaluate": ("ragexam.metrics.ranking", "evaluate"),
    "Qrels": ("ragexam.metrics.ranking", "Qrels"),
    "Run": ("ragexam.metrics.ranking", "Run"),
    "parse_metric": ("ragexam.metrics.ranking", "parse_metric"),
    "rank_metrics": ("ragexam.metrics.ranking", "rank_metrics"),
    "run": ("ragexam.analysis.run", "run"),
    "grade": ("ragexam.analysis.run", "grade"),
    "RunResult": ("ragexam.analysis.run", "RunResult"),
    "generate": ("ragexam.analysis.generate.api", "generate"),
    "generate_plan": ("ragexam.analysis.generate.api", "plan"),
    "score": ("ragexam.api", "score"),
}


def __getattr__(name: str) -> Any:
    if name == "plots":  # a module: ragexam.plots.k_sweep(result) and friends
        import importlib

        value = importlib.import_module("ragexam.plots")
        globals()[name] = value
        return value
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'ragexam' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
