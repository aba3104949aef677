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

The sections come from :mod:`ragexam.report.sections` over a typed :class:`~ragexam.report.views.RunView`: the
same fragments ``ragexam serve`` shows on a run's page, so the two cannot disagree.  This module places them on
one page with the page's style (:data:`FRAGMENT_CSS <ragexam.report.sections.FRAGMENT_CSS>` plus the page's own)
and its script (:data:`REPORT_JS`, which ``ragexam serve`` serves as a file).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence, Union

from ragexam import fmt
from ragexam._version import __version__
from ragexam.report import sections
from ragexam.report.i18n import Html, current, language, speaking
from ragexam.report.views import RunView, fmt_e as _e

if TYPE_CHECKING:
    from ragexam.storage.score_summary import SegmentsSection

__all__ = ["write_report", "render_report", "FONT_STACK", "MONO_STACK", "REPORT_JS", "fragment_css"]

#: CSS font stack: Latin faces first -- they have no Hangul, so Korean text falls through to a Korean face, while
#: ``>``, quotes and digits keep their Latin shapes (Nanum draws ``>`` like ``〉``, which made ``bm25>rerank:dense``
#: read as another name) -- then the Korean faces of each system: macOS/iOS (Apple SD Gothic Neo, AppleGothic),
#: Windows (Malgun Gothic / 맑은 고딕, Gulim, Dotum), Linux (Noto Sans CJK KR from fonts-noto-cjk, Noto Sans KR,
#: Source Han Sans, Nanum from fonts-nanum, UnDotum from fonts-unfonts-core, Baekmuk), Android (Noto Sans KR).
#: A machine with none of them and no other Hangul font shows boxes: Debian/Ubuntu ``apt-get install fonts-nanum``
#: (CI installs it).
FONT_STACK = ('"Segoe UI", Roboto, "Helvetica Neue", Arial, "Liberation Sans", "DejaVu Sans", '
              '"Apple SD Gothic Neo", "Malgun Gothic", "맑은 고딕", "Noto Sans KR", "Noto Sans CJK KR", '
              '"Source Han Sans KR", "Source Han Sans K", "NanumBarunGothic", "NanumGothic", "Nanum Gothic", '
              '"나눔고딕", "UnDotum", "Baekmuk Gulim", "AppleGothic", "Gulim", "Dotum", system-ui, -apple-system, '
              'sans-serif')

MONO_STACK = ('ui-monospace, SFMono-Regular, Menlo, Consolas, "D2Coding", "NanumGothicCoding", '
              '"Noto Sans Mono CJK KR", monospace')

PathLike = Union[str, Path]


def fragment_css() -> str:
    """The style of the sections (:data:`ragexam.report.sections.FRAGMENT_CSS`) with the fonts filled in."""
    return sections.FRAGMENT_CSS.replace("%FONTS%", FONT_STACK).replace("%MONO%", MONO_STACK)


_PAGE_CSS = """
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
footer{color:var(--muted);font-size:12px;padding:16px 28px;border-top:1px solid var(--line)}
@media print{button.expand,.filters{display:none}tr.detail[hidden]{display:table-row}}
""".replace("%FONTS%", FONT_STACK)

#: the report's script: opens a missed question's details, filters the missed table, switches the metric of
#: the per-type chart (``ragexam serve`` serves it as ``/static/report.js``; every part is optional)
REPORT_JS = """
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
  if(fp && fp.tagName==='SELECT' && !fp.form){fp.addEventListener('change',apply);}
  if(ft && ft.tagName==='SELECT' && !ft.form){ft.addEventListener('change',apply);}
  var ms=document.getElementById('type-metric');
  if(ms){ms.addEventListener('change',function(){
    all('.type-chart').forEach(function(c){c.hidden=c.getAttribute('data-metric')!==ms.value;});
  });}
})();
"""


def _header(view: RunView) -> str:
    t = current().t
    nav = "".join(f'<a href="#{a}">{t(key)}</a>' for a, key in sections.nav(view))
    return (f'<header><h1>{t("r.html.title")}</h1><p class="sub">{" · ".join(view.facts())}</p>'
            f"<nav>{nav}</nav></header>")


def _split_tag() -> str:
    t = current().t
    return f' <span class="tag warn" title="{t("r.html.split_hint")}">{t("r.html.split")}</span>'


def _missed(view: RunView) -> str:
    """Every missed question in one table, filtered and opened in the page (the script)."""
    t = current().t
    entries = view.missed()
    out = [f'<section id="missed"><h2>{t("r.html.missed")}</h2><p class="note">{t("r.html.missed_note", k=view.k)}'
           "</p>"]
    if not entries:
        out.append(f'<p class="box">{t("r.html.no_missed")}</p></section>')
        return "".join(out)
    pipes = list(dict.fromkeys(e.pipeline for e in entries))
    types = list(dict.fromkeys(str(e.question.type) for e in entries if e.question.type is not None))
    popts = "".join(f'<option value="{_e(p)}">{_e(p)}</option>' for p in pipes)
    topts = "".join(f'<option value="{_e(t)}">{_e(t)}</option>' for t in types)
    count = Html(f'<b id="missed-count">{len(entries)}</b>')
    out.append(f'<div class="filters"><label>{t("r.col.pipeline")} <select id="f-pipeline"><option value="">'
               f'{t("r.html.all")}</option>{popts}</select></label><label>{t("r.col.type")} <select id="f-type">'
               f'<option value="">{t("r.html.all")}</option>{topts}</select></label><span>'
               f'{t("r.html.shown", count=count, n=len(entries))}</span></div>')
    has_answers = any(view.answer(e.pipeline, e.query_id) for e in entries)
    head = f"<th>{t('r.missed.answer')}</th>" if has_answers else "<th></th>"
    out.append(f'<table class="missed"><thead><tr><th>{t("r.col.pipeline")}</th><th>{t("r.col.question_id")}</th>'
               f'<th>{t("r.col.type")}</th><th class="num">{t("r.html.first_rank")}</th>'
               f'<th>{t("r.missed.question")}</th>{head}<th></th></tr></thead><tbody>')
    for e in entries:
        did = f"miss-{e.seq}"
        fr = e.question.first_rank
        cell = sections.data_html(view.answer(e.pipeline, e.query_id).cell) if has_answers else ""
        out.append(f'<tr class="miss" data-pipeline="{_e(e.pipeline)}" data-type="{_e(e.question.type or "")}" '
                   f'data-detail="{did}"><td>{view.dot(e.pipeline)}{_e(e.pipeline)}</td>'
                   f'<td><code>{_e(e.query_id)}</code></td><td><span class="tag">{_e(e.question.type or fmt.MISSING)}'
                   f'</span></td><td class="num">{_e(fr) if fr is not None else t("r.not_found")}</td>'
                   f"<td>{sections.data_html(e.short_question)}{_split_tag() if e.question.evidence_split else ''}</td>"
                   f"<td>{cell}</td>"
                   f'<td><button class="expand" type="button" aria-expanded="false" aria-controls="{did}">'
                   f'{t("r.html.show")}</button></td></tr>')
        out.append(f'<tr class="detail" id="{did}" hidden><td colspan="7">{sections.missed_detail(view, e)}</td></tr>')
    out.append("</tbody></table></section>")
    return "".join(out)


def render_report(summary: Any, per_question: Sequence[Mapping[str, Any]],
                  answers: Optional[Mapping[str, Any]] = None, lang: str = "en",
                  segments: Optional["SegmentsSection"] = None) -> str:
    """The report as one HTML string (see the module docstring), in ``lang`` (``en``, the default, or ``ko``: every
    text of the report's catalogue, :mod:`ragexam.report.strings`; data and ragexam's computed words stay as
    they are); ``segments``: a score's :class:`~ragexam.storage.score_summary.SegmentsSection` (``score --by``),
    shown after the judge."""
    with speaking(language(lang)):
        return _render(summary, per_question, answers, segments)


def _render(summary: Any, per_question: Sequence[Mapping[str, Any]], answers: Optional[Mapping[str, Any]],
            segments: Optional["SegmentsSection"]) -> str:
    from ragexam.report.segments_html import section as segments_section

    t = current().t
    view = RunView.of(summary, per_question, answers)
    body = [_header(view), "<main>", sections.scores(view), sections.rerank(view), sections.judge(view.judge, view.dot),
            segments_section(segments, current().code), sections.plots(view), _missed(view), sections.dataset(view),
            sections.settings(view)]
    if view.notes:
        en = "" if current().code == "en" else ' lang="en"'
        body.append(f'<section id="notes"><h2>{t("r.html.notes")}</h2><ul{en}>'
                    + "".join(f"<li>{_e(n)}</li>" for n in view.notes) + "</ul></section>")
    body.append("</main>")
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body.append(f"<footer>{t('r.html.footer', version=__version__, now=now)}</footer>")
    title = current().text("r.html.page_title", dataset=view.summary.dataset_label, run=view.summary.run_id)
    return ("<!DOCTYPE html>\n<html lang=\"ko\"><head><meta charset=\"utf-8\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="ragexam {_e(__version__)}">'
            f"<title>{_e(title)}</title><style>{_PAGE_CSS}{fragment_css()}</style></head><body>"
            + "".join(body) + f"<script>{_script()}</script></body></html>\n")


def _script() -> str:
    """:data:`REPORT_JS` with the expand button's two labels in the page's language (English: as it is)."""
    if current().code == "en":
        return REPORT_JS
    t = current().text
    return REPORT_JS.replace("'show'", repr(t("r.html.show"))).replace("'hide'", repr(t("r.html.hide")))


def write_report(summary: Any, per_question: Sequence[Mapping[str, Any]], out_path: PathLike,
                 answers: Optional[Mapping[str, Any]] = None, lang: str = "en",
                 segments: Optional["SegmentsSection"] = None) -> Path:
    """Write the self-contained HTML report of a run to ``out_path`` (UTF-8); returns the path.

    ``summary`` is the run's :class:`~ragexam.storage.summary.RunSummary` (or the ``summary.json`` object),
    ``per_question`` the rows of ``per_question.csv`` (strings or typed values), ``answers`` optional
    answer/judge results (see the module docstring), ``lang`` the report's language (:func:`render_report`).
    The file is written to a temporary name first and renamed, so a reader never sees half a page.
    An ``out_path`` that is a folder, or lies under a file, raises :class:`~ragexam.errors.InputError`
    before anything is rendered.
    """
    from ragexam.storage.paths import check_output_file

    from ragexam.storage.atomic import write_file

    out = check_output_file(out_path, option="out_path")
    write_file(out, render_report(summary, per_question, answers, lang, segments))
    return out
