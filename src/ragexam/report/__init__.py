"""ragexam.report: renders what it is given (console tables, the HTML report, SVG charts); no
statistics, no reading of input files.

Importing this package is cheap; the names below load their modules on first use.

- ``write_report(summary, per_question, out_path, answers=None)``, ``render_report(...)``: one
  self-contained HTML file (:mod:`ragexam.report.html`)

Elsewhere: the run history is :mod:`ragexam.storage.history`, reading and writing run folders
:mod:`ragexam.storage.runfolder`, run-to-run comparison :mod:`ragexam.analysis.compare`, the CI
gate :mod:`ragexam.analysis.gate`, recording runs and scores :mod:`ragexam.analysis.recording`.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "write_report": "ragexam.report.html",
    "render_report": "ragexam.report.html",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'ragexam.report' has no attribute {name!r}") from None
    import importlib

    return getattr(importlib.import_module(module_name), name)
