"""ragexam.report: the HTML report, the run history, run-to-run comparison and the CI gate.

Importing this package is cheap; the names below load their modules on first use.

- ``write_report(summary, per_question, out_path, answers=None)``: one self-contained HTML file
  (:mod:`ragexam.report.html`)
- ``History(path)``: the SQLite run history (``record_run``, ``list_runs``, ``get``, ``delete``)
  (:mod:`ragexam.report.history`)
- ``compare_runs(a, b, ...)``: per-metric paired differences between two runs, with Holm's
  correction and the questions that flipped (:mod:`ragexam.report.compare`)
- ``check_run(run, floors, ...)``: metric floors for CI (:mod:`ragexam.report.gate`)
- ``load_run_dir``, ``resolve_run``, ``RunData``: reading ``ragexam run --out`` folders
  (:mod:`ragexam.report.rundata`)
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "write_report": "ragexam.report.html",
    "render_report": "ragexam.report.html",
    "History": "ragexam.report.history",
    "default_history_path": "ragexam.report.history",
    "record": "ragexam.report.history",
    "compare_runs": "ragexam.report.compare",
    "check_run": "ragexam.report.gate",
    "parse_floor": "ragexam.report.gate",
    "load_run_dir": "ragexam.report.rundata",
    "resolve_run": "ragexam.report.rundata",
    "RunData": "ragexam.report.rundata",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    try:
        module_name = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'ragexam.report' has no attribute {name!r}") from None
    import importlib

    return getattr(importlib.import_module(module_name), name)
