"""The report's pictures as matplotlib figures, for notebooks and scripts (``pip install 'ragexam[plot]'``).

Each function takes a run (a :class:`~ragexam.analysis.exam.run.RunResult`, a run folder's
:class:`~ragexam.storage.runfolder.RunData`, or a ``summary.json`` dict — per-question rows are needed only by
:func:`first_rank`) and returns a new ``matplotlib.figure.Figure`` (no pyplot state is touched, so nothing
changes globally; in Jupyter the figure displays itself, elsewhere call ``fig.savefig(path)``).  They draw
what the HTML report draws:

=====================  ======================================================================================
:func:`k_sweep`        P@K, R@K and F1@K by K, one panel per metric, one line per pipeline
:func:`fbeta`          F-beta@K by β (0.5, 1, 2), one panel per K
:func:`by_type`        a metric per question type, bars per pipeline, 95% bootstrap intervals as whiskers
:func:`first_rank`     share of questions by the rank of the first correct unit (``> depth``: not found)
:func:`attribution`    questions per type by the stage that lost the answer (after ``ragexam score``)
=====================  ======================================================================================

Korean labels: text is set in the first installed font of :data:`KOREAN_FONTS` (NanumGothic, Noto Sans CJK KR,
Malgun Gothic, Apple SD Gothic Neo, …) with DejaVu Sans for the rest; when none is installed a
``RagexamWarning`` says so once (Hangul would show as boxes) and how to install one
(Debian/Ubuntu: ``apt install fonts-nanum``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError, MissingDependencyError
from ragexam.storage.summary import RunSummary
from ragexam.types import JsonObject

if TYPE_CHECKING:
    from ragexam.analysis.exam.run import RunResult
    from ragexam.storage.runfolder import RunData, RunRow

#: what a plot reads a run from: a RunResult, a RunData (a run folder or a recorded run), a RunSummary or a
#: summary.json object, or ``(summary, per-question rows)``
RunInput = Union["RunResult", "RunData", RunSummary, JsonObject, Tuple[RunSummary, Sequence["RunRow"]]]

__all__ = ["k_sweep", "fbeta", "by_type", "first_rank", "attribution", "KOREAN_FONTS", "korean_font",
           "RagexamWarning"]

#: Fonts with Hangul, in the order they are tried (Linux, Windows, macOS names).
KOREAN_FONTS = ("NanumGothic", "NanumBarunGothic", "Noto Sans CJK KR", "Noto Sans KR", "Source Han Sans KR",
                "Malgun Gothic", "Apple SD Gothic Neo", "AppleGothic", "UnDotum", "Baekmuk Gulim")
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


class RagexamWarning(UserWarning):
    """A warning of ragexam's plotting: something will look wrong, and how to fix it."""


def _mpl():
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingDependencyError("ragexam's plots", "plot", "matplotlib") from None
    return Figure


_FONT: Optional[str] = None
_WARNED = False


def korean_font() -> Optional[str]:
    """The first installed font of :data:`KOREAN_FONTS`, or ``None``."""
    global _FONT
    if _FONT is None:
        from matplotlib import font_manager

        names = {f.name for f in font_manager.fontManager.ttflist}
        _FONT = next((f for f in KOREAN_FONTS if f in names), "")
    return _FONT or None


def _figure(n_panels: int = 1, *, width: float = 4.6, height: float = 3.4):
    Figure = _mpl()
    fig = Figure(figsize=(width * n_panels, height), layout="constrained")
    font = korean_font()
    global _WARNED
    if font is None and not _WARNED:
        _WARNED = True
        warnings.warn("no Korean font is installed, so Hangul in plot labels shows as boxes; install one "
                      "(Debian/Ubuntu: apt install fonts-nanum; or Noto Sans CJK KR) and restart Python.",
                      RagexamWarning, stacklevel=3)
    return fig, font


def _text_kw(font: Optional[str]) -> Dict[str, Any]:
    return {"fontfamily": [font, "DejaVu Sans"]} if font else {}


def _style(ax, font: Optional[str]) -> None:
    ax.grid(True, axis="y", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    if font:
        for label in ax.get_xticklabels() + ax.get_yticklabels():
            label.set_fontfamily([font, "DejaVu Sans"])


def _summary(run: RunInput) -> RunSummary:
    """The typed run summary of a RunResult, a RunData, a RunSummary or a summary.json object."""
    summary = getattr(run, "summary", run)
    if isinstance(summary, RunSummary):
        return summary
    if not isinstance(summary, Mapping) or "results" not in summary:
        raise InputError(f"received a {type(run).__name__}; expected a RunResult, a RunData or a summary.json "
                         "dict (with 'results').", source="plots", field="run")
    return RunSummary.from_dict(summary, source="plots")


def _pipelines(summary: RunSummary) -> List[str]:
    return [n for n in summary.pipeline_names if n in summary.results] or list(summary.results)


def _legend(ax, font: Optional[str]) -> None:
    ax.legend(fontsize=8, frameon=False, prop={"family": [font, "DejaVu Sans"], "size": 8} if font else None)


def k_sweep(run: RunInput):
    """P@K, R@K and F1@K against K (one panel each), one line per pipeline (from ``results[p].sweep``)."""
    summary = _summary(run)
    fig, font = _figure(3)
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (key, title) in zip(axes, (("p", "P@K"), ("r", "R@K"), ("f1", "F1@K"))):
        for i, p in enumerate(_pipelines(summary)):
            sweep = summary.results[p].sweep
            ks = sorted(sweep, key=int)
            ax.plot([int(k) for k in ks], [getattr(sweep[k], key) for k in ks], marker="o", color=_COLORS[i % 8],
                    label=p)
            ax.set_xticks([int(k) for k in ks])
        ax.set_title(title, **_text_kw(font))
        ax.set_xlabel("K", **_text_kw(font))
        ax.set_ylim(0, 1.02)
        _style(ax, font)
    _legend(axes[0], font)
    fig.suptitle("Precision, recall and F1 by K", **_text_kw(font))
    return fig


def fbeta(run: RunInput):
    """F-beta@K against β (0.5, 1, 2: precision-leaning to recall-leaning), one panel per K, one line per
    pipeline (from ``results[p].fbeta``)."""
    summary = _summary(run)
    pipelines = _pipelines(summary)
    first = summary.results[pipelines[0]].fbeta
    betas = sorted(first, key=float)
    ks = sorted({k for b in betas for k in first[b]}, key=int)
    if not ks:
        raise InputError("the run has no F-beta sweep (results[...].fbeta is empty).", source="plots", field="fbeta")
    fig, font = _figure(len(ks), width=3.4)
    axes = fig.subplots(1, len(ks), sharey=True, squeeze=False)[0]
    for ax, k in zip(axes, ks):
        for i, p in enumerate(pipelines):
            fb = summary.results[p].fbeta
            ax.plot([float(b) for b in betas], [fb[b][k] for b in betas], marker="o", color=_COLORS[i % 8], label=p)
        ax.set_title(f"F-beta@{k}", **_text_kw(font))
        ax.set_xlabel("β", **_text_kw(font))
        ax.set_xticks([float(b) for b in betas])
        ax.set_ylim(0, 1.02)
        _style(ax, font)
    _legend(axes[0], font)
    return fig


def by_type(run: RunInput, metric: Optional[str] = None):
    """``metric`` (default: the run's first main metric at its miss cutoff, e.g. ``hit@5``) per question
    type: one bar per pipeline, whiskers at the 95% bootstrap interval, ``n`` under each type."""
    summary = _summary(run)
    pipelines = _pipelines(summary)
    if metric is None:
        metric = summary.headline if summary.main_metrics else "mrr"
    types: List[str] = []
    for p in pipelines:
        for t in summary.results[p].by_type:
            if t not in types:
                types.append(t)
    if not types:
        raise InputError("the run has no per-type results.", source="plots", field="by_type")
    some = summary.results[pipelines[0]].by_type[types[0]]
    if metric not in some:
        raise InputError(f"metric {metric!r} has no per-type values; available: {', '.join(some)}.",
                         source="plots", field="metric")
    fig, font = _figure(1, width=max(4.6, 1.1 * len(types) * max(1, len(pipelines)) / 2 + 2))
    ax = fig.subplots()
    width = 0.8 / len(pipelines)
    for i, p in enumerate(pipelines):
        res = summary.results[p]
        vals, lo, hi = [], [], []
        for t in types:
            v = res.by_type.get(t, {}).get(metric)
            ci = res.by_type_ci95.get(t, {}).get(metric)
            vals.append(v if v is not None else 0.0)
            lo.append(v - ci[0] if v is not None and ci else 0.0)
            hi.append(ci[1] - v if v is not None and ci else 0.0)
        xs = [j + (i - (len(pipelines) - 1) / 2) * width for j in range(len(types))]
        ax.bar(xs, vals, width=width, color=_COLORS[i % 8], label=p, yerr=[lo, hi], capsize=3,
               error_kw={"elinewidth": 1})
    n_of = summary.results[pipelines[0]].by_type_n
    ax.set_xticks(range(len(types)), [f"{t}\n(n={n_of.get(t, '?')})" for t in types])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(metric, **_text_kw(font))
    ax.set_title(f"{metric} by question type (95% CI)", **_text_kw(font))
    _style(ax, font)
    _legend(ax, font)
    return fig


def _rows(run: RunInput) -> Sequence["RunRow"]:
    rows = getattr(run, "per_question", None)
    if rows is None and isinstance(run, tuple) and len(run) == 2:
        rows = run[1]
    if rows is None:
        raise InputError("first_rank needs the per-question rows: pass the RunResult or RunData, not only the "
                         "summary.", source="plots", field="run")
    return rows


def first_rank(run: RunInput, max_rank: int = 10):
    """Share of the scored questions by the rank of their first correct unit (1 … ``max_rank``, then
    ``>max_rank`` for found further down, and ``none`` for not found within the retrieval depth), bars per
    pipeline; a dashed line marks the run's miss cutoff."""
    summary = _summary(run) if not isinstance(run, tuple) else _summary(run[0])
    rows = _rows(run)
    pipelines = _pipelines(summary)
    labels = [str(r) for r in range(1, max_rank + 1)] + [f">{max_rank}", "none"]
    fig, font = _figure(1, width=7.2)
    ax = fig.subplots()
    width = 0.8 / len(pipelines)
    for i, p in enumerate(pipelines):
        counts = [0] * len(labels)
        n = 0
        for r in rows:
            if r.get("pipeline") != p or not r.get("answerable", True) or r.get("n_units") in (0, None):
                continue
            n += 1
            fr = r.get("first_rank")
            counts[len(labels) - 1 if fr is None else (int(fr) - 1 if int(fr) <= max_rank else max_rank)] += 1
        xs = [j + (i - (len(pipelines) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [c / n if n else 0.0 for c in counts], width=width, color=_COLORS[i % 8], label=f"{p} (n={n})")
    k = summary.miss_k
    if k <= max_rank:
        ax.axvline(k - 0.5, color="#555", linestyle="--", linewidth=1)
        ax.text(k - 0.4, ax.get_ylim()[1] * 0.95, f"missed beyond k={k}", fontsize=8, va="top", **_text_kw(font))
    ax.set_xticks(range(len(labels)), labels)
    ax.set_xlabel("rank of the first correct unit", **_text_kw(font))
    ax.set_ylabel("share of questions", **_text_kw(font))
    _style(ax, font)
    _legend(ax, font)
    return fig


def attribution(run: RunInput, pipeline: Optional[str] = None):
    """Questions per type (rows) by the stage that lost the answer (columns), one panel per pipeline, with
    counts written in the cells and shading by the share of the row.  Needs the ``attribution`` section that
    ``ragexam score`` adds (``{pipeline: {type: {stage: count}}}``); a score report's attribution works too."""
    att = _attribution_matrix(run)
    names = [pipeline] if pipeline is not None else list(att)
    if pipeline is not None and pipeline not in att:
        raise InputError(f"no attribution for pipeline {pipeline!r}; it has: {', '.join(att)}.", source="plots",
                         field="pipeline")
    stages: List[str] = []
    for p in names:
        for counts in att[p].values():
            for s in counts:
                if s not in stages:
                    stages.append(s)
    fig, font = _figure(len(names), width=max(4.6, 0.9 * len(stages) + 1.6), height=3.6)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, p in zip(axes, names):
        types = list(att[p])
        grid = [[int(att[p][t].get(s, 0) or 0) for s in stages] for t in types]
        shares = [[c / max(1, sum(row)) for c in row] for row in grid]
        ax.imshow(shares, cmap="Blues", vmin=0, vmax=1, aspect="auto")
        for y, row in enumerate(grid):
            for x, c in enumerate(row):
                ax.text(x, y, str(c), ha="center", va="center", fontsize=8,
                        color="white" if shares[y][x] > 0.6 else "black")
        ax.set_xticks(range(len(stages)), [s.replace("_", "\n") for s in stages], fontsize=7)
        ax.set_yticks(range(len(types)), types)
        ax.set_title(p, fontsize=9, **_text_kw(font))
        if font:
            for label in ax.get_xticklabels() + ax.get_yticklabels():
                label.set_fontfamily([font, "DejaVu Sans"])
    fig.suptitle("Stage that lost the answer, per question type", **_text_kw(font))
    return fig


def _attribution_matrix(run: RunInput) -> Dict[str, Dict[str, Dict[str, int]]]:
    att = getattr(run, "attribution", None)
    if att is not None and hasattr(att, "matrix") and hasattr(att, "pipelines"):
        return {p: att.matrix(p) for p in att.pipelines}
    summary = getattr(run, "summary", run)
    if hasattr(summary, "to_dict") and not isinstance(summary, dict):
        summary = summary.to_dict()
    att = summary.get("attribution") if isinstance(summary, Mapping) else None
    if not isinstance(att, Mapping) or not att:
        raise InputError("this run has no stage attribution; it comes from answer scoring: pass the result of "
                         "ragexam.analysis.answers.scoring.score_answers, or a run summary from `ragexam score --report`.",
                         source="plots", field="attribution")
    return {str(p): {str(t): dict(c) for t, c in by_type.items()} for p, by_type in att.items()}
