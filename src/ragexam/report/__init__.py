"""ragexam.report: renders what it is given (console tables, the HTML report, SVG charts); no
statistics, no reading of input files.

Importing this package is cheap; the names below load their modules on first use.

- ``write_report(summary, per_question, out_path, answers=None)``, ``render_report(...)``: one
  self-contained HTML file (:mod:`ragexam.report.html`)

Elsewhere: the run history is :mod:`ragexam.storage.history`, reading and writing run folders
:mod:`ragexam.storage.runfolder`, run-to-run comparison :mod:`ragexam.analysis.exam.compare`, the CI
gate :mod:`ragexam.analysis.gating.gate`, recording runs and scores :mod:`ragexam.analysis.gating.history`.
"""

from __future__ import annotations

from ragexam._lazy import lazy_exports


_LAZY = {
    "write_report": "ragexam.report.html",
    "render_report": "ragexam.report.html",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
