"""The HTML report of a ``ragexam run``: one self-contained file.

:func:`write_report` ``(summary, per_question, out_path, answers=None)`` writes it;
:func:`render_report` returns the text.  Everything is inline (CSS, a little JS, SVG charts), so
the file opens with no network and can be mailed or attached to a CI job.  It holds:

* the metric table with 95% confidence intervals and the pairwise comparison verdicts;
* after ``ragexam score --report`` with a judge (``summary["judge"]``): the judge's means and pass rates
  with their 95% intervals, coverage, flips and ties under repeats, and the judge beside the evidence;
* plots: P@K / R@K / F1@K by K, F-beta by K for each beta, per-question-type bars with CI
  whiskers, the stage-attribution matrix (when answer scoring put an ``attribution`` section
  ``{pipeline: {type: {stage: count}}}`` into the summary; otherwise a note), and the
  distribution of first-correct ranks;
* the missed questions, filterable by pipeline and type; each row opens to the question, the
  evidence, the ground truth, the generated answer and the judge's reasoning (when given), and
  the top retrieved chunks with the evidence marked;
* the dataset card (sizes, types, unmatched evidence) and every setting that produced the
  numbers (config, signatures), so the report can be reproduced.

**Plotting: hand-written inline SVG** (:mod:`ragexam.report.svg`), chosen over matplotlib and
over an inlined JS charting library because (1) labels are drawn by the browser with the page's
Korean-capable font stack, whereas matplotlib draws text at build time with its own fonts
(DejaVu Sans has no Hangul: Korean type or pipeline names would become boxes) and would add a
heavy dependency and a second of import time; (2) a chart is a few KB, while an inlined JS
library costs 200 KB to several MB; (3) static SVG renders without JavaScript, prints, and has
native hover tooltips.  The JavaScript on the page only filters and expands the missed-question
table and switches the metric of the per-type chart.

``answers`` (optional) gives generated answers and judge results for the missed-question details:
``{query_id: entry}`` for all pipelines, or ``{pipeline: {query_id: entry}}``, where ``entry`` is
the answer text or a dict with any of ``answer``, ``ground_truth``, ``reasoning`` (or
``judge_reasoning`` / ``explanation``), ``verdict`` (or ``label``), ``score``, ``stage``.
Ground truth also comes from a missed entry's ``ground_truth`` (``ragexam run`` stores it there);
the report renders what it is given and reads no input file.

Every user-provided string (names, questions, evidence, chunk texts, config values) is
HTML-escaped.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam._version import __version__
from ragexam.report import svg
from ragexam.report.highlight import highlight_html
from ragexam.storage.runfolder import check_summary, coerce_rows, dataset_label, headline_metric, miss_cutoff

__all__ = ["write_report", "render_report", "FONT_STACK", "MONO_STACK"]

#: CSS font stack: the Korean faces of each system first, so Hangul is drawn by a font that has it (and
#: Latin text by the same face, so lines keep one look), then the usual system fallbacks:
#: macOS/iOS (Apple SD Gothic Neo, AppleGothic), Windows (Malgun Gothic / 맑은 고딕, Gulim, Dotum),
#: Linux (Noto Sans CJK KR from fonts-noto-cjk, Noto Sans KR, Source Han Sans, Nanum from fonts-nanum,
#: UnDotum from fonts-unfonts-core, Baekmuk), Android (Noto Sans KR).  A machine with none of them and no
#: other Hangul font shows boxes: Debian/Ubuntu ``apt-get install fonts-nanum`` (CI installs it).
FONT_STACK = ('"Apple SD Gothic Neo", "Malgun Gothic", "맑은 고딕", "Noto Sans KR", "Noto Sans CJK KR", '
              '"Source Han Sans KR", "Source Han Sans K", "NanumBarunGothic", "NanumGothic", "Nanum Gothic", '
              '"나눔고딕", "UnDotum", "Baekmuk Gulim", "AppleGothic", "Gulim", "Dotum", system-ui, -apple-system, '
              '"Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif')

#: monospace faces (ids, signatures): Korean-capable coding fonts before the generic monospace
MONO_STACK = ('ui-monospace, SFMono-Regular, Menlo, Consolas, "D2Coding", "NanumGothicCoding", '
              '"Noto Sans Mono CJK KR", monospace')

PathLike = Union[str, Path]


def _e(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True)


def _ci(pair: Any) -> Optional[Tuple[float, float]]:
    """``pair`` as two finite floats, or None (numbers are formatted with :mod:`ragexam.fmt`)."""
    if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(fmt.is_number(v) for v in pair):
        return float(pair[0]), float(pair[1])
    return None


# --------------------------------------------------------------------------------------------
# page pieces
# --------------------------------------------------------------------------------------------

_CSS = """
:root{--fg:#1b1f24;--muted:#5b6470;--line:#d9dee5;--bg:#fff;--soft:#f5f7fa;--accent:#0072B2;
--good:#1a7f37;--bad:#b42318;--warn:#9a6700}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font-family:%FONTS%;color:var(--fg);background:var(--bg);font-size:14px;line-height:1.5;
word-break:keep-all;overflow-wrap:anywhere}
header{padding:20px 28px 12px;border-bottom:1px solid var(--line);background:var(--soft)}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:28px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;margin:18px 0 8px}
.sub{color:var(--muted);margin:0}
nav{margin-top:8px}nav a{margin-right:14px;color:var(--accent);text-decoration:none}
main{padding:0 28px 40px;max-width:1400px}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border-bottom:1px solid var(--line);padding:5px 9px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.ci{display:block;color:var(--muted);font-size:11px}
.best .v{font-weight:700}
.note{color:var(--muted);font-size:13px;margin:4px 0 10px}
.box{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin:8px 0}
.legend{display:flex;flex-wrap:wrap;gap:6px 18px;margin:6px 0 10px}
.legend span{display:inline-flex;align-items:center;gap:6px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px}
.charts{display:flex;flex-wrap:wrap;gap:14px 18px;align-items:flex-start}
.chart{background:#fff;border:1px solid var(--line);border-radius:6px}
.chart text{font-family:inherit;fill:#1b1f24}
.chart .ctitle{font-size:13px;font-weight:600}
.chart .tick{font-size:10.5px;fill:#5b6470}
.chart .alabel{font-size:11px;fill:#5b6470}
.chart .cell{font-size:11.5px;font-weight:600}
.chart .mlabel{font-size:10px;fill:#b42318}
.chart .grid{stroke:#eceff3;stroke-width:1}
.chart .axis{stroke:#8c959f;stroke-width:1}
.chart .whisker{stroke:#1b1f24;stroke-width:1.3;fill:none}
.chart .marker{stroke:#b42318;stroke-width:1.2;stroke-dasharray:4 3}
.verdict{max-width:520px}
.sig-up{color:var(--good);font-weight:600}.sig-down{color:var(--bad);font-weight:600}
.border{color:var(--warn)}
.tag{display:inline-block;border-radius:10px;padding:0 7px;font-size:11.5px;background:#e8eef6;color:#24426b;
white-space:nowrap}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:6px;vertical-align:middle}
.filters{display:flex;flex-wrap:wrap;gap:8px 18px;align-items:center;margin:8px 0}
select,button{font:inherit}
button.expand{border:1px solid var(--line);background:#fff;border-radius:4px;padding:1px 9px;cursor:pointer;
white-space:nowrap}
button.expand[aria-expanded=true]{background:#e8eef6}
tr.detail>td{background:#fbfcfd;padding:10px 14px 14px}
.detail dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0 0 10px}
.detail dt{color:var(--muted);font-weight:600}
.detail dd{margin:0}
.chunks{margin:6px 0 0;padding:0;list-style:none}
.chunks li{border:1px solid var(--line);border-radius:5px;padding:6px 9px;margin:6px 0;background:#fff}
.chunks li.hit{border-color:#e0b400;box-shadow:inset 3px 0 0 #e0b400}
.chunks .meta{color:var(--muted);font-size:12px;margin-bottom:2px}
.chunks .text{white-space:pre-wrap}
mark{background:#ffe066;padding:0 1px;border-radius:2px}
mark.partial{background:#fff1b3;border-bottom:2px dashed #e0b400}
.evidence{background:#fff7d6;border-radius:3px;padding:0 4px}
pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:10px;overflow:auto;
font-size:12px;white-space:pre-wrap}
code{font-family:%MONO%;font-size:12px}
.sig{font-family:%MONO%;font-size:11.5px;color:#3b4450;
word-break:break-all}
th.grp{text-align:center;border-left:2px solid #fff}
.ci2{color:var(--muted);font-size:12px}
.scroll{overflow-x:auto;max-width:100%}
td.sig-up,td.sig-down{white-space:nowrap}
details>summary{cursor:pointer;color:var(--accent);margin:6px 0}
footer{color:var(--muted);font-size:12px;padding:16px 28px;border-top:1px solid var(--line)}
@media print{button.expand,.filters{display:none}tr.detail[hidden]{display:table-row}}
""".replace("%FONTS%", FONT_STACK).replace("%MONO%", MONO_STACK)

_JS = """
(function(){
  function all(sel){return Array.prototype.slice.call(document.querySelectorAll(sel));}
  all('button.expand').forEach(function(b){
    b.addEventListener('click',function(){
      var d=document.getElementById(b.getAttribute('aria-controls'));
      var open=b.getAttribute('aria-expanded')==='true';
      b.setAttribute('aria-expanded',open?'false':'true');
      b.textContent=open?'show':'hide';
      d.hidden=open;
    });
  });
  var fp=document.getElementById('f-pipeline'), ft=document.getElementById('f-type'),
      cnt=document.getElementById('missed-count');
  function apply(){
    var n=0;
    all('tr.miss').forEach(function(r){
      var ok=(!fp||!fp.value||r.getAttribute('data-pipeline')===fp.value)&&
             (!ft||!ft.value||r.getAttribute('data-type')===ft.value);
      r.hidden=!ok; if(ok){n++;}
      var d=document.getElementById(r.getAttribute('data-detail'));
      var b=r.querySelector('button.expand');
      if(d){d.hidden=!ok||!b||b.getAttribute('aria-expanded')!=='true';}
    });
    if(cnt){cnt.textContent=String(n);}
  }
  if(fp){fp.addEventListener('change',apply);} if(ft){ft.addEventListener('change',apply);}
  var ms=document.getElementById('type-metric');
  if(ms){ms.addEventListener('change',function(){
    all('.type-chart').forEach(function(c){c.hidden=c.getAttribute('data-metric')!==ms.value;});
  });}
})();
"""


class _Page:
    """Everything the sections need, computed once."""

    def __init__(self, summary: Dict[str, Any], rows: List[Dict[str, Any]],
                 answers: Optional[Mapping[str, Any]]) -> None:
        self.summary = summary
        self.rows = rows
        self.config = summary.get("config") or {}
        self.dataset = summary.get("dataset") or {}
        self.results: Dict[str, Any] = summary.get("results") or {}
        names = [p.get("name") for p in summary.get("pipelines") or [] if isinstance(p, Mapping)]
        self.pipelines = [n for n in names if isinstance(n, str)] or list(self.results)
        for p in self.results:
            if p not in self.pipelines:
                self.pipelines.append(p)
        self.index = {p: i for i, p in enumerate(self.pipelines)}
        self.all_metrics: List[str] = []
        for p in self.pipelines:
            for m in ((self.results.get(p) or {}).get("metrics") or {}):
                if m not in self.all_metrics:
                    self.all_metrics.append(m)
        main = summary.get("main_metrics")
        # the main table: the run's main_metrics when it names them, else every metric
        self.metrics = [m for m in main if m in self.all_metrics] if isinstance(main, list) else []
        self.metrics = self.metrics or list(self.all_metrics)
        self.k = miss_cutoff(summary)
        self.headline = headline_metric(summary)
        self.ignore_punct = bool(self.config.get("ignore_punctuation"))
        self.answers = answers or {}
        self.per_pipeline_answers = bool(self.answers) and all(
            k in self.index and isinstance(v, Mapping) for k, v in self.answers.items())
        self.notes: List[str] = []
        self.row_of = {(r["pipeline"], r["query_id"]): r for r in rows}

    def color(self, pipeline: str) -> str:
        return svg.color(self.index.get(pipeline, len(self.index)))

    def answer(self, pipeline: str, qid: str) -> Dict[str, Any]:
        src = self.answers.get(pipeline) if self.per_pipeline_answers else self.answers
        entry = (src or {}).get(qid) if isinstance(src, Mapping) else None
        if entry is None:
            return {}
        if isinstance(entry, str):
            return {"answer": entry}
        return dict(entry) if isinstance(entry, Mapping) else {"answer": str(entry)}

    def types(self) -> List[str]:
        seen: Dict[str, None] = {}
        for t in (self.dataset.get("types") or {}):
            seen.setdefault(str(t), None)
        for p in self.pipelines:
            for t in ((self.results.get(p) or {}).get("by_type") or {}):
                seen.setdefault(str(t), None)
        for r in self.rows:
            if r.get("type") is not None:
                seen.setdefault(str(r["type"]), None)
        return list(seen)


def _legend(page: _Page) -> str:
    items = "".join(f'<span><i class="sw" style="background:{page.color(p)}"></i>{_e(p)}'
                    f'{" <small>(baseline)</small>" if i == 0 and len(page.pipelines) > 1 else ""}</span>'
                    for i, p in enumerate(page.pipelines))
    return f'<div class="legend" aria-label="pipelines">{items}</div>'


def _header(page: _Page) -> str:
    s = page.summary
    n_scored = page.dataset.get("n_scored", page.dataset.get("n_answerable"))
    bits = [f"dataset <b>{_e(dataset_label(s))}</b>", fmt.plural(len(page.pipelines), "pipeline")]
    if n_scored is not None:
        bits.append(_e(fmt.plural(n_scored, "scored question")))
    bits.append(f"run <code>{_e(s.get('run_id'))}</code>")
    if s.get("created"):
        bits.append(_e(s.get("created")))
    nav = "".join(f'<a href="#{a}">{t}</a>' for a, t in (
        ("scores", "Scores"), *((("rerank", "Rerank stage"),) if s.get("rerank") else ()), ("plots", "Plots"),
        ("missed", "Missed questions"), ("dataset", "Dataset"), ("settings", "Settings")))
    return (f'<header><h1>ragexam report</h1><p class="sub">{" · ".join(bits)}</p>'
            f"<nav>{nav}</nav></header>")


def _scores(page: _Page) -> str:
    out = ['<section id="scores"><h2>Scores</h2>',
           '<p class="note">Means over the scored (answerable) questions; below each, the 95% '
           "percentile-bootstrap confidence interval over questions. Bold: the best mean in the column.</p>"]
    best: Dict[str, float] = {}
    for m in page.metrics:
        vals = [((page.results.get(p) or {}).get("metrics") or {}).get(m) for p in page.pipelines]
        vals = [v for v in vals if isinstance(v, (int, float))]
        if vals:
            best[m] = max(vals)
    head = "".join(f'<th class="num">{_e(m)}</th>' for m in page.metrics)
    out.append(f'<div class="scroll"><table class="metrics"><thead><tr><th>pipeline</th><th class="num">n</th>{head}</tr></thead><tbody>')
    for p in page.pipelines:
        res = page.results.get(p) or {}
        cells = []
        for m in page.metrics:
            v = (res.get("metrics") or {}).get(m)
            ci = _ci((res.get("ci95") or {}).get(m))
            cls = "num best" if m in best and isinstance(v, (int, float)) and v == best[m] \
                and len(page.pipelines) > 1 else "num"
            ci_txt = f'<span class="ci">{fmt.ci(ci, digits=3, short=False)}</span>' if ci else ""
            cells.append(f'<td class="{cls}"><span class="v">{fmt.num(v)}</span>{ci_txt}</td>')
        out.append(f'<tr><td><i class="dot" style="background:{page.color(p)}"></i>{_e(p)}</td>'
                   f'<td class="num">{_e(res.get("n", fmt.MISSING))}</td>{"".join(cells)}</tr>')
    out.append("</tbody></table></div>")
    out.append(_unretrieved(page))
    comps = [c for c in page.summary.get("comparisons") or [] if isinstance(c, Mapping)]
    if comps:
        out.append(_comparisons(page, comps))
    elif len(page.pipelines) > 1:
        out.append('<p class="note">No comparisons in this run.</p>')
    out.append("</section>")
    return "".join(out)


def _judge(page: _Page) -> str:
    """The LLM judge of a score (``summary["judge"]``, from ``ragexam score --report``): per pipeline and
    metric the mean and the pass rate, each with its 95% bootstrap interval over the judged answers,
    coverage, and with repeats the flip share and ties; then the judge beside the evidence."""
    judge = page.summary.get("judge")
    if not isinstance(judge, Mapping) or not judge.get("summary"):
        return ""
    repeat = int(judge.get("repeat") or 1)
    out = ['<section id="judge"><h2>LLM judge</h2>',
           f'<p class="note">{_e(judge.get("model"))} at {_e(judge.get("endpoint"))}, prompts '
           f'{_e(judge.get("language"))}, {_e(fmt.plural(repeat, "repeat"))}. Means and pass rates over the judged '
           "answers only (unjudged answers are counted, never averaged in); below each, the 95% percentile-bootstrap "
           "interval.</p>"]
    cols = ["pipeline", "metric", "mean", "pass rate", "coverage"] + (["flipped", "ties"] if repeat > 1 else []) + \
        ["unjudged"]
    out.append('<div class="scroll"><table class="metrics"><thead><tr>' + "".join(
        f'<th{"" if c in ("pipeline", "metric", "unjudged") else " class=num"}>{_e(c)}</th>' for c in cols)
        + "</tr></thead><tbody>")
    for p, ms in (judge.get("summary") or {}).items():
        for m, s in (ms or {}).items():
            s = s or {}

            def cell(v: Any, pair: Any) -> str:
                ci = _ci(pair)
                txt = f'<span class="ci">{fmt.ci(ci, digits=3, short=False)}</span>' if ci else ""
                return f'<td class="num"><span class="v">{fmt.num(v)}</span>{txt}</td>'

            row = [f'<td><i class="dot" style="background:{page.color(p)}"></i>{_e(p)}</td>', f"<td>{_e(m)}</td>",
                   cell(s.get("mean"), s.get("ci95")), cell(s.get("pass_rate"), s.get("pass_ci95")),
                   f'<td class="num">{_e(s.get("n_judged"))}/{_e(s.get("n"))}</td>']
            if repeat > 1:
                row += [f'<td class="num">{_e(fmt.percent(s.get("flip_share")))}</td>',
                        f'<td class="num">{_e(s.get("ties", 0))}</td>']
            row.append("<td>" + _e(", ".join(f"{k}: {v}" for k, v in (s.get("unjudged") or {}).items()) or "–")
                       + "</td>")
            out.append("<tr>" + "".join(row) + "</tr>")
    out.append("</tbody></table></div>")
    vs = judge.get("vs_evidence") or {}
    if vs:
        out.append('<h3>The judge beside the evidence</h3><p class="note">The same contexts graded twice: by the '
                   "judge, and without an LLM from the question's evidence spans. Where they disagree, either the judge "
                   "is wrong or the evidence is too narrow.</p>")
        out.append('<div class="scroll"><table class="metrics"><thead><tr><th>pipeline</th><th>judge</th>'
                   '<th class="num">value</th><th>evidence</th><th class="num">value</th><th class="num">agree</th>'
                   "<th>disagreeing questions</th></tr></thead><tbody>")
        for p, comps in vs.items():
            for c in comps or []:
                ids = ", ".join(str(d.get("query_id")) for d in (c.get("disagreements") or []))
                out.append(f"<tr><td>{_e(p)}</td><td>{_e(c.get('judge_metric'))} ({_e(c.get('judge_value'))})</td>"
                           f'<td class="num">{fmt.num(c.get("judge"))}</td><td>{_e(c.get("evidence_metric"))}</td>'
                           f'<td class="num">{fmt.num(c.get("evidence"))}</td>'
                           f'<td class="num">{_e(fmt.percent(c.get("agree")))}</td><td>{_e(ids or "–")}</td></tr>')
        out.append("</tbody></table></div>")
    sigs = judge.get("signatures") or {}
    if sigs:
        out.append('<p class="note">' + "<br>".join(f"{_e(m)}: <code>{_e(v)}</code>" for m, v in sigs.items())
                   + "</p>")
    out.append("</section>")
    return "".join(out)


def _comparison_class(c: Mapping[str, Any]) -> str:
    """``sig-up`` / ``sig-down`` when significant after Holm with the CI excluding 0, else
    ``border`` for a borderline verdict, else ``""``."""
    ci = _ci(c.get("ci95"))
    p_adj = c.get("p_holm", c.get("p_value"))
    diff = c.get("diff")
    if isinstance(p_adj, (int, float)) and p_adj < 0.05 and ci and (ci[0] > 0 or ci[1] < 0):
        return "sig-up" if isinstance(diff, (int, float)) and diff > 0 else "sig-down"
    if str(c.get("verdict", "")).startswith("borderline"):
        return "border"
    return ""


def _comparisons(page: _Page, comps: List[Mapping[str, Any]]) -> str:
    out = ["<h3>Comparisons against the baseline</h3>"
           '<p class="note">diff = pipeline − baseline on the same questions, with its 95% paired-bootstrap '
           "interval; p from the paired randomization test, and p Holm-adjusted over the metrics of each pair. "
           '<span class="sig-up">▲ green</span> / <span class="sig-down">▼ red</span>: significant after Holm '
           "(p &lt; 0.05) and the interval excludes 0. Hover a cell for its verdict; all verdicts are listed "
           "below the table.</p>"]
    pairs: Dict[Tuple[str, str], Dict[str, Mapping[str, Any]]] = {}
    for c in comps:
        pairs.setdefault((str(c.get("pipeline")), str(c.get("baseline"))), {})[str(c.get("metric"))] = c
    metrics = [m for m in page.metrics if any(m in d for d in pairs.values())]
    metrics += [m for d in pairs.values() for m in d if m not in metrics]
    pair_list = list(pairs)
    bases = sorted({b for _, b in pair_list})
    if len(bases) == 1:
        out.append(f'<p class="note">Baseline: <i class="dot" style="background:{page.color(bases[0])}"></i>'
                   f"<b>{_e(bases[0])}</b></p>")
    top = "".join(f'<th colspan="3" class="grp"><i class="dot" style="background:{page.color(p)}"></i>{_e(p)}'
                  f'{"" if len(bases) == 1 else f" vs {_e(b)}"}</th>' for p, b in pair_list)
    sub = '<th class="num">diff</th><th class="num">95% CI</th><th class="num">p / Holm</th>' * len(pair_list)
    out.append(f'<div class="scroll"><table class="comparisons"><thead><tr><th rowspan="2">metric</th>{top}</tr>'
               f"<tr>{sub}</tr></thead><tbody>")
    for m in metrics:
        cells = []
        for key in pair_list:
            c = pairs[key].get(m)
            if c is None:
                cells.append(f'<td class="num">{fmt.MISSING}</td>' * 3)
                continue
            cls = _comparison_class(c)
            diff = c.get("diff")
            ci = _ci(c.get("ci95"))
            arrow = {"sig-up": "▲ ", "sig-down": "▼ "}.get(cls, "")
            diff_txt = f"{arrow}{fmt.signed(diff)}"
            ci_txt = fmt.signed_ci(ci)
            tip = _e(c.get("verdict"))
            cells.append(f'<td class="num {cls}" title="{tip}">{diff_txt}</td><td class="num ci2" title="{tip}">'
                         f'{ci_txt}</td><td class="num ci2" title="{tip}">{_e(fmt.p_value(c.get("p_value")))} / '
                         f'{_e(fmt.p_value(c.get("p_holm")))}</td>')
        out.append(f"<tr><th>{_e(m)}</th>{''.join(cells)}</tr>")
    out.append("</tbody></table></div>")
    out.append(f"<details><summary>All verdicts in words ({len(comps)})</summary>"
               '<table class="verdicts"><thead><tr><th>pipeline</th><th>metric</th><th class="num">n</th>'
               '<th class="num">min. detectable</th><th>method</th><th>verdict</th></tr></thead><tbody>')
    for c in comps:
        cls = _comparison_class(c)
        out.append(f'<tr><td>{_e(c.get("pipeline"))}</td><td>{_e(c.get("metric"))}</td>'
                   f'<td class="num">{_e(c.get("n", fmt.MISSING))}</td><td class="num">{fmt.num(c.get("mdd"))}</td>'
                   f'<td>{_e(c.get("method", fmt.MISSING))}</td><td class="verdict {cls}">{_e(c.get("verdict"))}</td></tr>')
    out.append("</tbody></table></details>")
    return "".join(out)


def _sorted_keys(keys) -> List[str]:
    def key(k: str):
        try:
            return (0, float(k), k)
        except ValueError:
            return (1, 0.0, k)
    return sorted((str(k) for k in keys), key=key)


def _sweep_charts(page: _Page) -> str:
    ks: List[str] = []
    for p in page.pipelines:
        for k in ((page.results.get(p) or {}).get("sweep") or {}):
            if str(k) not in ks:
                ks.append(str(k))
    ks = _sorted_keys(ks)
    if not ks:
        return '<p class="note">This run has no metric@K sweep.</p>'
    charts = []
    for key, label in (("p", "Precision@K"), ("r", "Recall@K"), ("f1", "F1@K")):
        series = []
        for p in page.pipelines:
            sweep = (page.results.get(p) or {}).get("sweep") or {}
            series.append((p, [(sweep.get(k) or {}).get(key) for k in ks]))
        charts.append(svg.line_chart(label, ks, series, y_label=label.split("@")[0], value_name=key.upper()
                                     if key != "f1" else "F1", data_attrs={"plot": f"sweep-{key}"}))
    return '<div class="charts">' + "".join(charts) + "</div>"


def _fbeta_charts(page: _Page) -> str:
    betas: List[str] = []
    for p in page.pipelines:
        for b in ((page.results.get(p) or {}).get("fbeta") or {}):
            if str(b) not in betas:
                betas.append(str(b))
    betas = _sorted_keys(betas)
    if not betas:
        return '<p class="note">This run has no F-beta sweep.</p>'
    charts = []
    for b in betas:
        ks: List[str] = []
        for p in page.pipelines:
            for k in (((page.results.get(p) or {}).get("fbeta") or {}).get(b) or {}):
                if str(k) not in ks:
                    ks.append(str(k))
        ks = _sorted_keys(ks)
        series = [(p, [((((page.results.get(p) or {}).get("fbeta") or {}).get(b) or {}).get(k)) for k in ks])
                  for p in page.pipelines]
        charts.append(svg.line_chart(f"F-beta@K, β = {b}", ks, series, y_label=f"F{b}", value_name=f"F{b}",
                                     data_attrs={"plot": f"fbeta-{b}"}))
    return ('<p class="note">β &lt; 1 weighs precision more, β &gt; 1 recall more (β = 1 is F1).</p>'
            '<div class="charts">' + "".join(charts) + "</div>")


def _type_charts(page: _Page) -> str:
    types = [t for t in page.types() if any(t in ((page.results.get(p) or {}).get("by_type") or {})
                                            for p in page.pipelines)]
    if not types:
        return '<p class="note">This run has no per-type breakdown.</p>'
    metrics = [m for m in page.metrics + [x for x in page.all_metrics if x not in page.metrics] if any(
        m in (((page.results.get(p) or {}).get("by_type") or {}).get(t) or {}) for p in page.pipelines for t in types)]
    if not metrics:
        return '<p class="note">This run has no per-type breakdown.</p>'
    default = page.headline if page.headline in metrics else metrics[0]
    opts = "".join(f'<option value="{_e(m)}"{" selected" if m == default else ""}>{_e(m)}</option>' for m in metrics)
    out = [f'<div class="filters"><label>metric <select id="type-metric">{opts}</select></label>'
           '<span class="note">whiskers: 95% CI within the type</span></div><div class="charts">']
    width = max(360, min(900, 110 * len(types) * max(1, len(page.pipelines)) // 2 + 120))
    for m in metrics:
        groups, series = [], []
        for t in types:
            ns = {(page.results.get(p) or {}).get("by_type_n", {}).get(t) for p in page.pipelines}
            ns.discard(None)
            groups.append(f"{t} (n={ns.pop()})" if len(ns) == 1 else t)
        for p in page.pipelines:
            res = page.results.get(p) or {}
            vals = []
            for t in types:
                v = ((res.get("by_type") or {}).get(t) or {}).get(m)
                ci = _ci(((res.get("by_type_ci95") or {}).get(t) or {}).get(m))
                vals.append(None if not isinstance(v, (int, float)) else
                            (float(v), ci[0] if ci else None, ci[1] if ci else None))
            series.append((p, vals))
        top = max([v[2] if v[2] is not None else v[0] for _, vs in series for v in vs if v] + [0.0])
        chart = svg.bar_chart(f"{m} by question type", groups, series, y_label=m,
                              y_max=1.0 if top <= 1.0 else None, width=width,
                              data_attrs={"plot": "by-type", "metric": m})
        out.append(f'<div class="type-chart" data-metric="{_e(m)}"{"" if m == default else " hidden"}>{chart}</div>')
    out.append("</div>")
    return "".join(out)


def _rank_bins(depth: Optional[int]) -> List[Tuple[str, int, Optional[int]]]:
    bins: List[Tuple[str, int, Optional[int]]] = [(str(i), i, i) for i in range(1, 11)]
    bins.append(("11–20", 11, 20))
    if depth is None or depth > 20:
        bins.append((f"21–{depth}" if depth else "21+", 21, depth))
    return bins


def _rank_chart(page: _Page) -> str:
    if not page.rows:
        return '<p class="note">per_question.csv was not available, so ranks cannot be shown.</p>'
    depth = page.config.get("depth") if isinstance(page.config.get("depth"), int) else None
    bins = _rank_bins(depth)
    groups = [b[0] for b in bins] + ["not found"]
    series, tips = [], []
    for p in page.pipelines:
        ranks = [r.get("first_rank") for r in page.rows if r.get("pipeline") == p and r.get("answerable", True)]
        n = len(ranks)
        counts = [sum(1 for x in ranks if x is not None and lo <= x and (hi is None or x <= hi)) for _, lo, hi in bins]
        counts.append(sum(1 for x in ranks if x is None))
        series.append((p, [(c / n, None, None) if n else None for c in counts]))
        tips.append([f"{p} · rank {g}: {c} of {fmt.plural(n, 'question')} ({fmt.percent(c / n if n else 0, 1)})"
                     for g, c in zip(groups, counts)])
    chart = svg.bar_chart("Rank of the first correct chunk", groups, series, y_label="share of questions",
                          x_label="first-correct rank", percent=True, tooltips=tips,
                          width=max(520, 36 * len(groups) * max(1, len(page.pipelines)) // 2 + 80),
                          marker_after=page.k - 1 if page.k <= 10 else None,
                          marker_label=f"missed beyond k={page.k}", data_attrs={"plot": "first-rank"})
    return f'<div class="charts">{chart}</div>'


def _attribution(page: _Page) -> str:
    att = page.summary.get("attribution")
    if not isinstance(att, Mapping) or not att:
        return ('<p class="note box">No stage attribution in this run: it appears after answer scoring '
                "(<code>ragexam score</code>), which says for each question whether retrieval, chunking or "
                "generation lost the answer.</p>")
    charts = []
    for p in [p for p in page.pipelines if p in att] + [p for p in att if p not in page.index]:
        by_type = att.get(p)
        if not isinstance(by_type, Mapping):
            continue
        stages: List[str] = []
        for counts in by_type.values():
            for s in (counts or {}):
                if s not in stages:
                    stages.append(str(s))
        rows = [str(t) for t in by_type]
        matrix = [[int((by_type[t] or {}).get(s, 0) or 0) for s in stages] for t in by_type]
        charts.append(svg.heatmap(str(p), rows, stages, matrix, data_attrs={"plot": "attribution"}))
    return ('<p class="note">Questions per type (rows) by the stage that lost the answer (columns); shading: '
            'share of the row.</p><div class="charts">' + "".join(charts) + "</div>")


def _unretrieved(page: _Page) -> str:
    """Per pipeline: the questions it failed on (graded as misses) by kind, and a service's latency."""
    items = []
    for p in page.pipelines:
        res = page.results.get(p) or {}
        un = res.get("unretrieved") or {}
        if un.get("n"):
            kinds = ", ".join(f"{_e(k)} {_e(n)}" for k, n in (un.get("by_kind") or {}).items())
            qs = "; ".join(f"<code>{_e(x.get('query_id'))}</code>: {_e(x.get('reason'))}"
                           for x in (un.get("questions") or [])[:10] if isinstance(x, Mapping))
            items.append(f'<li class="warn"><b>{_e(p)}</b> unretrieved {_e(un.get("n_scored", un["n"]))} of '
                         f'{_e(res.get("n"))} scored questions ({kinds}), graded as misses: {qs}</li>')
        lat = res.get("latency")
        if isinstance(lat, Mapping):
            items.append(f"<li><b>{_e(p)}</b> latency per question: median {fmt.num(lat.get('median'))} s, p95 "
                         f"{fmt.num(lat.get('p95'))} s, max {fmt.num(lat.get('max'))} s (n {_e(lat.get('n'))})</li>")
    return f'<ul class="note">{"".join(items)}</ul>' if items else ""


def _rerank(page: _Page) -> str:
    """Each rerank stage against its own first stage: lift (paired), per type, fixed/broken, the first stage's
    recall ceiling, the queries it could not rerank, latency and cost (``summary["rerank"]``)."""
    blocks = page.summary.get("rerank") or {}
    if not isinstance(blocks, Mapping) or not blocks:
        return ""
    out = ['<section id="rerank"><h2>Rerank stage</h2><p class="note">Each reranked pipeline against its own first '
           "stage, on the same questions: difference of the means, paired-bootstrap 95% interval, reading after "
           "Holm's correction. A reranker can only reorder the first stage's top candidates: the recall ceiling is "
           "the share of questions with a relevant unit among them.</p>"]
    for name, b in blocks.items():
        if not isinstance(b, Mapping):
            continue
        after = ((page.results.get(name) or {}).get("metrics") or {})
        before = b.get("first_stage_metrics") or {}
        out.append(f'<h3><i class="dot" style="background:{page.color(name)}"></i>{_e(name)}</h3>'
                   f'<p class="note">first stage <code>{_e(b.get("first_stage"))}</code>, top {_e(b.get("top"))} '
                   f"reranked by <code>{_e(b.get('reranker'))}</code></p>")
        out.append('<div class="scroll"><table><thead><tr><th>metric</th><th class="num">first stage</th>'
                   '<th class="num">reranked</th><th class="num">lift</th><th class="num">95% CI</th>'
                   '<th class="num">p (Holm)</th><th>reading</th></tr></thead><tbody>')
        for c in b.get("comparisons") or []:
            m = c.get("metric")
            out.append(f"<tr><td>{_e(m)}</td><td class=num>{fmt.num(before.get(m))}</td>"
                       f"<td class=num>{fmt.num(after.get(m))}</td><td class=num>{fmt.signed(c.get('diff'))}</td>"
                       f"<td class=num>{fmt.signed_ci(c.get('ci95'))}</td><td class=num>{fmt.p_value(c.get('p_holm'))}</td>"
                       f"<td>{_e(c.get('reading'))}</td></tr>")
        out.append("</tbody></table></div>")
        ceil = b.get("ceiling") or {}
        st = b.get("status") or {}
        items = [f"first stage recall@{_e(ceil.get('top'))}: {fmt.num(ceil.get('recall_at_top'))} "
                 f"({_e(ceil.get('n_within'))} questions); of {_e(ceil.get('misses'))} misses at k={_e(ceil.get('k'))}, "
                 f"{_e(ceil.get('misses_outside'))} lay outside the candidates (no reranker can fix them) and "
                 f"{_e(ceil.get('misses_inside'))} inside"]
        bt = b.get("by_type") or {}
        if bt:
            items.append("lift by type: " + "; ".join(
                f"{_e(t)} (n {_e(v.get('n'))}): " + ", ".join(f"{_e(m)} {fmt.signed(d)}" for m, d in
                                                             list((v.get("lift") or {}).items())[:3])
                for t, v in bt.items()))
        for what in ("fixed", "broken"):
            xs = b.get(what) or []
            items.append(f"{what} {len(xs)}" + (": " + ", ".join(
                f"<code>{_e(x.get('query_id'))}</code> ({_e(x.get('first_rank_before'))} → {_e(x.get('first_rank_after'))})"
                for x in xs[:20]) if xs else ""))
        items.append(f"queries: {_e(st.get('reranked', 0))} reranked, {_e(st.get('partial', 0))} partly (unjudged "
                     f"candidates keep their place), {_e(st.get('failed', 0))} failed (first-stage order kept)"
                     + (": " + "; ".join(f"<code>{_e(x.get('query_id'))}</code> {_e(x.get('reason'))}"
                                         for x in (st.get("questions") or [])[:10]) if st.get("failed") else ""))
        lat, usage = b.get("latency"), b.get("usage") or {}
        if lat:
            items.append(f"latency per query: median {fmt.num(lat.get('median'))} s, p95 {fmt.num(lat.get('p95'))} s, "
                         f"max {fmt.num(lat.get('max'))} s (n {_e(lat.get('n'))}, as measured when called)")
        if usage:
            items.append("usage: " + ", ".join(f"{_e(k)} {_e(fmt.cost(v) if k == 'cost_usd' else v)}"
                                               for k, v in usage.items()))
        out.append("<ul>" + "".join(f"<li>{x}</li>" for x in items) + "</ul>")
    out.append("</section>")
    return "".join(out)


def _plots(page: _Page) -> str:
    return "".join([
        '<section id="plots"><h2>Plots</h2>', _legend(page),
        "<h3>Precision, recall and F1 by K</h3>", _sweep_charts(page),
        "<h3>F-beta by β</h3>", _fbeta_charts(page),
        "<h3>By question type</h3>", _type_charts(page),
        "<h3>First-correct ranks</h3>", _rank_chart(page),
        "<h3>Stage attribution</h3>", _attribution(page),
        "</section>"])


def _missed_entries(page: _Page) -> List[Tuple[str, Dict[str, Any]]]:
    missed = page.summary.get("missed")
    out: List[Tuple[str, Dict[str, Any]]] = []
    if isinstance(missed, Mapping):
        for p in [p for p in page.pipelines if p in missed] + [p for p in missed if p not in page.index]:
            for e in missed.get(p) or []:
                if isinstance(e, Mapping):
                    out.append((str(p), dict(e)))
        return out
    # no missed section: derive the list (without texts) from per_question
    for r in page.rows:
        if r.get("answerable", True) and (r.get("first_rank") is None or r["first_rank"] > page.k):
            out.append((r["pipeline"], {"query_id": r["query_id"], "type": r.get("type"),
                                        "first_rank": r.get("first_rank"), "unit_ranks": r.get("unit_ranks"),
                                        "k": page.k, "top": [{"rank": i + 1, "chunk_id": c}
                                                             for i, c in enumerate(r.get("top_ids") or [])]}))
    if out:
        page.notes.append("missed questions: the summary has no 'missed' section, so the list was derived "
                          "from per_question.csv without question or chunk texts")
    return out


def _evidence_list(e: Mapping[str, Any]) -> List[str]:
    ev = e.get("evidence")
    if isinstance(ev, str):
        return [ev]
    return [str(x) for x in ev or []]


def _detail(page: _Page, pipeline: str, e: Mapping[str, Any], did: str) -> str:
    qid = str(e.get("query_id"))
    ans = page.answer(pipeline, qid)
    evidence = _evidence_list(e)
    question = e.get("question")
    ground = ans.get("ground_truth") or e.get("ground_truth")
    items = [("question", _e(question) if question else "<i>not in the run output</i>")]
    if evidence:
        items.append(("evidence", "<br>".join(f'<span class="evidence">{_e(x)}</span>' for x in evidence)))
    else:
        items.append(("evidence", "<i>none recorded</i>"))
    items.append(("ground truth", _e(ground) if ground else "<i>not available</i>"))
    if ans.get("answer") is not None:
        items.append(("answer", _e(ans.get("answer"))))
    verdict = ans.get("verdict", ans.get("label"))
    if verdict is not None or ans.get("score") is not None:
        bits = [str(x) for x in (verdict, ans.get("score")) if x is not None]
        items.append(("judge", _e(" · ".join(bits))))
    reasoning = ans.get("reasoning") or ans.get("judge_reasoning") or ans.get("explanation")
    if reasoning:
        items.append(("judge reasoning", _e(reasoning)))
    if ans.get("stage"):
        items.append(("stage", _e(ans.get("stage"))))
    if e.get("unretrieved"):
        items.append(("unretrieved", _e(e.get("unretrieved"))))
    ranks = e.get("unit_ranks")
    if isinstance(ranks, Mapping) and ranks:
        items.append(("evidence ranks", _e(", ".join(f"{u}: {r if r is not None else 'not found'}"
                                                     for u, r in ranks.items()))))
    fr = e.get("first_rank")
    top_ids = (page.row_of.get((pipeline, qid)) or {}).get("top_ids") or []
    if isinstance(fr, int) and 1 <= fr <= len(top_ids):
        items.append(("first correct chunk", f"<code>{_e(top_ids[fr - 1])}</code> at rank {fr}"))
    elif isinstance(fr, int):
        items.append(("first correct chunk", f"at rank {fr} (beyond the {len(top_ids)} ids kept per question)"))
    else:
        items.append(("first correct chunk", f"not within the search depth ({_e(page.config.get('depth', '?'))})"))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    def chunk_li(c: Mapping) -> str:
        text = c.get("text")
        marks = 0
        if isinstance(text, str):
            body, marks = highlight_html(text, evidence, ignore_punctuation=page.ignore_punct)
            body = f'<div class="text">{body}</div>'
        else:
            body = ""
        meta = [f"#{_e(c.get('rank'))}", f"<code>{_e(c.get('chunk_id'))}</code>"]
        if c.get("doc_id") is not None:
            meta.append(f"doc {_e(c.get('doc_id'))}")
        if isinstance(c.get("score"), (int, float)):
            meta.append(f"score {fmt.num(c['score'])}")
        if marks:
            meta.append('<span class="tag">contains evidence</span>')
        return f'<li{" class=hit" if marks else ""}><div class="meta">{" · ".join(meta)}</div>{body}</li>'

    chunks = [chunk_li(c) for c in e.get("top") or [] if isinstance(c, Mapping)]
    top = (f'<h4>Top {len(chunks)} retrieved chunk{"s" if len(chunks) != 1 else ""} (missed cutoff k = '
           f'{_e(e.get("k", page.k))})</h4><ol class="chunks">{"".join(chunks)}</ol>'
           if chunks else '<p class="note">No retrieved chunks recorded for this question.</p>')
    found = e.get("first_correct")
    if isinstance(found, Mapping):
        top += (f'<h4>Where the evidence was found (rank {_e(found.get("rank"))})</h4>'
                f'<ol class="chunks">{chunk_li(found)}</ol>')
    return (f'<tr class="detail" id="{did}" hidden><td colspan="7"><div class="detail"><dl>{dl}</dl>'
            f"{top}</div></td></tr>")


def _missed(page: _Page) -> str:
    entries = _missed_entries(page)
    k = page.k
    out = [f'<section id="missed"><h2>Missed questions</h2><p class="note">Answerable questions whose first '
           f"correct chunk is not within the top {k} (or not found within the search depth). "
           "Open a row for the question, the evidence, the answers and the retrieved chunks with the "
           "evidence <mark>marked</mark>.</p>"]
    if not entries:
        out.append('<p class="box">No missed questions.</p></section>')
        return "".join(out)
    pipes = list(dict.fromkeys(p for p, _ in entries))
    types = list(dict.fromkeys(str(e.get("type")) for _, e in entries if e.get("type") is not None))
    popts = "".join(f'<option value="{_e(p)}">{_e(p)}</option>' for p in pipes)
    topts = "".join(f'<option value="{_e(t)}">{_e(t)}</option>' for t in types)
    out.append(f'<div class="filters"><label>pipeline <select id="f-pipeline"><option value="">all</option>{popts}'
               f'</select></label><label>type <select id="f-type"><option value="">all</option>{topts}</select>'
               f'</label><span><b id="missed-count">{len(entries)}</b> of {len(entries)} shown</span></div>')
    has_answers = any(page.answer(p, str(e.get("query_id"))) for p, e in entries)
    head = "<th>answer</th>" if has_answers else "<th></th>"
    out.append('<table class="missed"><thead><tr><th>pipeline</th><th>question id</th><th>type</th>'
               f'<th class="num">first rank</th><th>question</th>{head}<th></th></tr></thead><tbody>')
    for i, (p, e) in enumerate(entries):
        qid = str(e.get("query_id"))
        question = e.get("question") or ""
        short = question if len(question) <= 90 else question[:89] + "…"
        did = f"miss-{i}"
        fr = e.get("first_rank")
        ans = page.answer(p, qid)
        ans_cell = ""
        if has_answers:
            v = ans.get("verdict", ans.get("label", ans.get("score")))
            ans_cell = _e(v) if v is not None else ("✓" if ans.get("answer") else "")
        out.append(f'<tr class="miss" data-pipeline="{_e(p)}" data-type="{_e(e.get("type") or "")}" '
                   f'data-detail="{did}"><td><i class="dot" style="background:{page.color(p)}"></i>{_e(p)}</td>'
                   f'<td><code>{_e(qid)}</code></td><td><span class="tag">{_e(e.get("type") or fmt.MISSING)}</span></td>'
                   f'<td class="num">{_e(fr) if fr is not None else "not found"}</td><td>{_e(short)}</td>'
                   f"<td>{ans_cell}</td>"
                   f'<td><button class="expand" type="button" aria-expanded="false" aria-controls="{did}">'
                   "show</button></td></tr>")
        out.append(_detail(page, p, e, did))
    out.append("</tbody></table></section>")
    return "".join(out)


def _kv_table(pairs: Sequence[Tuple[str, Any]]) -> str:
    rows = []
    for k, v in pairs:
        if not isinstance(v, str):
            v = json.dumps(v, ensure_ascii=False)
        rows.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    return f'<table class="kv">{"".join(rows)}</table>'


def _dataset(page: _Page) -> str:
    ds = page.dataset
    sizes = [(k, ds.get(k)) for k in ("corpus", "qa", "n_documents", "n_questions", "n_answerable",
                                      "n_out_of_corpus", "n_scored") if k in ds]
    sizes += [(f"chunks ({c})", n) for c, n in (ds.get("n_chunks") or {}).items()]
    sizes += [(k, ds.get(k)) for k in ("corpus_sha256", "qa_sha256") if k in ds]
    known = {k for k, _ in sizes} | {"n_chunks", "types"}
    sizes += [(k, v) for k, v in ds.items() if k not in known]
    out = ['<section id="dataset"><h2>Dataset card</h2>', _kv_table(sizes)]
    types = ds.get("types") or {}
    if types:
        total = sum(v for v in types.values() if isinstance(v, int)) or 1
        out.append("<h3>Question types</h3><table><thead><tr><th>type</th><th class=num>questions</th>"
                   "<th class=num>share</th></tr></thead><tbody>")
        for t, n in types.items():
            share = fmt.percent(n / total) if isinstance(n, int) else fmt.MISSING
            out.append(f"<tr><td>{_e(t)}</td><td class=num>{_e(n)}</td><td class=num>{share}</td></tr>")
        out.append("</tbody></table>")
    unmatched = [u for u in page.summary.get("unmatched_evidence") or [] if isinstance(u, Mapping)]
    warnings = [w for w in page.summary.get("warnings") or [] if isinstance(w, str)]
    if warnings:
        out.append(f"<h3>Warnings ({len(warnings)})</h3><ul>" + "".join(f"<li>{_e(w)}</li>" for w in warnings)
                   + "</ul>")
    if not ds.get("n_chunks") and not unmatched:
        out.append('<p class="note">No pipeline used a ragexam chunker: every one returned its own texts, judged '
                   "by whether they contain the evidence.</p></section>")
        return "".join(out)
    out.append(f"<h3>Unmatched evidence ({len(unmatched)})</h3>")
    if unmatched:
        out.append('<p class="note">Evidence no chunk contains whole, so no chunk gets credit for it.</p>'
                   "<table><thead><tr><th>question id</th><th>evidence</th><th>chunker</th><th>reason</th>"
                   "<th>where</th></tr></thead><tbody>")
        for u in unmatched:
            cuts = "; ".join(f"{c.get('doc_id')} @ {c.get('offset')}: {', '.join(map(str, c.get('chunks') or []))}"
                             for c in u.get("cuts") or [] if isinstance(c, Mapping))
            out.append(f"<tr><td><code>{_e(u.get('query_id'))}</code></td><td>{_e(u.get('evidence'))}</td>"
                       f"<td>{_e(u.get('chunker'))}</td><td>{_e(u.get('reason'))}</td><td>{_e(cuts)}</td></tr>")
        out.append("</tbody></table>")
    else:
        out.append('<p class="note">Every evidence string lies whole inside some chunk.</p>')
    out.append("</section>")
    return "".join(out)


def _settings(page: _Page) -> str:
    s = page.summary
    out = ['<section id="settings"><h2>Settings</h2><p class="note">Everything that produced the numbers '
           "above; the same config, dataset (same hashes) and ragexam version reproduce them.</p>",
           _kv_table([("run id", s.get("run_id")), ("created", s.get("created")), ("format", s.get("format")),
                      ("ragexam version", s.get("ragexam_version")), ("missed cutoff k", page.k)]),
           "<h3>Config</h3>", _kv_table(list(page.config.items())), "<h3>Signatures</h3>",
           "<table><thead><tr><th>pipeline</th><th>signature</th></tr></thead><tbody>"]
    for p in s.get("pipelines") or []:
        if isinstance(p, Mapping):
            out.append(f'<tr><td>{_e(p.get("name"))}</td><td class="sig">{_e(p.get("signature"))}</td></tr>')
    for name, res in page.results.items():
        sig = (res or {}).get("signature")
        if sig:
            out.append(f'<tr><td>{_e(name)} <small>(results)</small></td><td class="sig">{_e(sig)}</td></tr>')
    out.append("</tbody></table>")
    methods = sorted({str(c.get("method")) for c in s.get("comparisons") or []
                      if isinstance(c, Mapping) and c.get("method")})
    if methods:
        out.append(f'<p class="note">Randomization test {fmt.noun(len(methods), "method")}: '
                   f'{_e(", ".join(methods))}.</p>')
    out.append("<details><summary>summary config and dataset as JSON</summary><pre>"
               + _e(json.dumps({"config": page.config, "dataset": page.dataset, "pipelines": s.get("pipelines")},
                               ensure_ascii=False, indent=2))
               + "</pre></details></section>")
    return "".join(out)


def render_report(summary: Mapping[str, Any], per_question: Sequence[Mapping[str, Any]],
                  answers: Optional[Mapping[str, Any]] = None) -> str:
    """The report as one HTML string (see the module docstring)."""
    summary = check_summary(summary if not isinstance(summary, dict) else dict(summary), "summary")
    rows = coerce_rows(per_question or [], source="per_question")
    page = _Page(summary, rows, answers)
    body = [_header(page), "<main>", _scores(page), _rerank(page), _judge(page), _plots(page), _missed(page),
            _dataset(page),
            _settings(page)]
    if page.notes:
        body.append('<section id="notes"><h2>Notes</h2><ul>'
                    + "".join(f"<li>{_e(n)}</li>" for n in page.notes) + "</ul></section>")
    body.append("</main>")
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body.append(f"<footer>Generated by ragexam {_e(__version__)} on {now}. Self-contained: no network "
                "needed to view it.</footer>")
    title = f"ragexam report — {dataset_label(summary)} — {summary.get('run_id', '')}"
    return ("<!DOCTYPE html>\n<html lang=\"ko\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="ragexam {_e(__version__)}">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            + "".join(body) + f"<script>{_JS}</script></body></html>\n")


def write_report(summary: Mapping[str, Any], per_question: Sequence[Mapping[str, Any]], out_path: PathLike,
                 answers: Optional[Mapping[str, Any]] = None) -> Path:
    """Write the self-contained HTML report of a run to ``out_path`` (UTF-8); returns the path.

    ``summary`` is the ``summary.json`` object, ``per_question`` the rows of ``per_question.csv``
    (strings or typed values), ``answers`` optional answer/judge results (see the module docstring).
    The file is written to a temporary name first and renamed, so a reader never sees half a page.
    An ``out_path`` that is a folder, or lies under a file, raises :class:`~ragexam.errors.InputError`
    before anything is rendered.
    """
    import os
    import tempfile

    from ragexam.storage.paths import check_output_file

    out = check_output_file(out_path, option="out_path")
    text = render_report(summary, per_question, answers)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=str(out.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return out
