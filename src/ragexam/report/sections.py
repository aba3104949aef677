"""The sections of a run's page as HTML fragments, from a :class:`~ragexam.report.views.RunView`: the score
table with intervals, unretrieved questions, comparisons, the rerank stage, the LLM judge, the plots (P/R/F by K,
F-beta, per type, first-correct ranks, stage attribution), a missed question's details, the dataset card and
the settings.  The static report (:mod:`ragexam.report.html`) and ``ragexam serve`` place the same fragments,
styled by :data:`FRAGMENT_CSS`.

Every user-provided string is HTML-escaped; no fragment carries an inline style or script (``ragexam serve``'s
content security policy forbids both): colours are classes (:func:`ragexam.report.svg.color_class`).

Every text is a key of the report's catalogue (:mod:`ragexam.report.strings`) in the language of
:func:`ragexam.report.i18n.current`: English unless the caller chose another (``ragexam serve`` on a Korean page;
:func:`ragexam.report.html.render_report` with ``lang``); the English is the report's as it always was, byte for
byte.  What ragexam computed in words (a comparison's verdict, a warning, a reason) stays English, marked
``lang="en"`` on a page in another language.
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.report import svg
from ragexam.report.highlight import highlight_html
from ragexam.report.i18n import Html, current
from ragexam.report.views import MissedEntry, RunView, fmt_e as _e, interval
from ragexam.storage.score_summary import JudgeSection
from ragexam.storage.summary import Comparison, MissedQuestion, RetrievedChunk

__all__ = ["FRAGMENT_CSS", "nav", "scores", "judge", "rerank", "plots", "missed_detail", "dataset", "settings",
           "attribution", "type_charts", "legend", "comparison_class", "kv_table", "value_cell", "data_html",
           "score_metric_heads", "too_few_text"]

#: the style of every fragment (fonts are the page's: ``%MONO%`` is replaced by the monospace stack)
FRAGMENT_CSS = """
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
.chart a.cell-link:hover rect,.chart a.cell-link:focus rect{stroke:#1b1f24;stroke-width:2}
.verdict{max-width:520px}
.trust.separates{color:var(--good)}.trust.does_not,.trust.inverted{color:var(--bad);font-weight:600}
.trust.weakly,.trust.too_few,.trust.unknown,.trust.other_set,.trust.unchecked,.trust.no_contrast{color:var(--warn)}
.sig-up{color:var(--good);font-weight:600}.sig-down{color:var(--bad);font-weight:600}
.border{color:var(--warn)}
.box.warn{border-color:#e0b400;background:#fff7d6}
.tag.warn{background:#fff4d6;color:var(--warn)}
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
.chunks .meta{display:block;color:var(--muted);font-size:12px;margin-bottom:2px}
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
""" + svg.PALETTE_CSS + "\n"


def _t(key: str, **values: Any) -> Html:
    """The catalogue's text ``key`` in the current language (:mod:`ragexam.report.i18n`)."""
    return current().t(key, **values)


def _en() -> str:
    """`` lang="en"`` on a page in another language, for words ragexam computed in English (``""`` in English)."""
    return "" if current().code == "en" else ' lang="en"'


def _signed_ci(pair: Any) -> str:
    """An interval of differences in the page's words: ``-0.015 to +0.123`` (``-0.015 ~ +0.123`` in Korean);
    :data:`ragexam.fmt.MISSING` when there is none."""
    iv = interval(pair)
    if not iv:
        return fmt.MISSING
    return str(_t("r.ci.signed", lo=fmt.signed(iv[0]), hi=fmt.signed(iv[1])))


def _computed(x: Any) -> str:
    """What ragexam computed in English words (a verdict, a reason, a warning) as HTML: escaped, and on a page in
    another language marked ``lang="en"``."""
    return _e(x) if current().code == "en" else f'<span lang="en">{_e(x)}</span>'


def data_html(x: Any) -> str:
    """Data (a question, an answer, a model's name) as HTML: escaped, and on a page in another language than English
    marked ``class="data"`` (its words are the data's, not the page's)."""
    return _e(x) if current().code == "en" else f'<span class="data">{_e(x)}</span>'


def _html(x: Any) -> str:
    """``x`` as HTML: a catalogue text as it is, anything else escaped."""
    return str(x) if isinstance(x, Html) else _e(x)


def kv_table(pairs: Sequence[Tuple[str, Any]], names: bool = False) -> str:
    """Rows of a key and its value (a value that is not text as JSON; a catalogue text as it is).  ``names``: the
    keys and values are names and data (config keys and values), marked ``class="data"`` on a page in another
    language than English."""
    rows = []
    for k, v in pairs:
        if not isinstance(v, str):
            v = json.dumps(v, ensure_ascii=False)
        rows.append(f"<tr><th>{_html(k)}</th><td>{_html(v)}</td></tr>")
    cls = "kv data" if names and current().code != "en" else "kv"
    return f'<table class="{cls}">{"".join(rows)}</table>'


def too_few_text(n: int) -> str:
    """``n = 4: too few for an interval`` in the page's language (:func:`ragexam.stats.proportion.too_few`)."""
    return _t("r.ci.too_few", n=n)


def value_cell(v: Any, pair: Any, cls: str = "num", n: Optional[int] = None) -> str:
    """A mean with its 95% interval below it; over fewer items than an interval needs (``n``), that instead
    (:func:`ragexam.stats.proportion.too_few`)."""
    from ragexam.stats.proportion import too_few

    ci = interval(pair)
    txt = f'<span class="ci">{fmt.ci(ci, digits=3, short=False)}</span>' if ci else ""
    if not ci and fmt.is_number(v) and isinstance(n, int) and too_few(n):
        txt = f'<span class="ci">{too_few_text(n)}</span>'
    return f'<td class="{cls}"><span class="v">{fmt.num(v)}</span>{txt}</td>'


def legend(view: RunView) -> str:
    base = f' <small>{_t("r.legend.baseline")}</small>' if len(view.pipelines) > 1 else ""
    items = "".join(f'<span><i class="sw {svg.color_class(i)}"></i>{_e(p)}{base if i == 0 else ""}</span>'
                    for i, p in enumerate(view.pipelines))
    return f'<div class="legend" aria-label="{_t("r.legend.label")}">{items}</div>'


# -- scores --------------------------------------------------------------------------------------------------


def nav(view: RunView) -> List[Tuple[str, str]]:
    """The sections of a run's page, in order, as ``(anchor, catalogue key of its title)``: the report's header and
    ``ragexam serve``'s run page link to these."""
    return [("scores", "r.scores.title"), *([("rerank", "r.rerank.title")] if view.summary.rerank else []),
            *([("judge", "r.judge.title")] if view.judge is not None else []), ("plots", "r.plots.title"),
            ("missed", "r.html.missed"), ("dataset", "r.html.dataset"), ("settings", "r.set.title")]


def scores(view: RunView) -> str:
    """The metric table (main metrics, 95% intervals, the best mean in bold), the unretrieved questions and the
    comparisons against the baseline."""
    out = [f'<section id="scores"><h2>{_t("r.scores.title")}</h2>', f'<p class="note">{_t("r.scores.note")}</p>']
    best: Dict[str, float] = {}
    for m in view.metrics:
        vals = [v for v in (view.result(p).metrics.get(m) for p in view.pipelines) if fmt.is_number(v)]
        if vals:
            best[m] = max(vals)
    head = "".join(f'<th class="num">{_e(m)}</th>' for m in view.metrics)
    out.append(f'<div class="scroll"><table class="metrics"><thead><tr><th>{_t("r.col.pipeline")}</th>'
               f'<th class="num">n</th>{head}</tr></thead><tbody>')
    for p in view.pipelines:
        res = view.result(p)
        cells = []
        for m in view.metrics:
            v = res.metrics.get(m)
            top = m in best and fmt.is_number(v) and v == best[m] and len(view.pipelines) > 1
            cells.append(value_cell(v, res.ci95.get(m), "num best" if top else "num", res.n))
        n = res.n if p in view.summary.results else fmt.MISSING
        out.append(f'<tr><td>{view.dot(p)}{_e(p)}</td><td class="num">{_e(n)}</td>{"".join(cells)}</tr>')
    out.append("</tbody></table></div>")
    out.append(unretrieved(view))
    chunking = view.summary.chunking
    if chunking is not None and chunking.size_warning:
        out.append(f'<p class="box warn" id="size-warning">{_computed(chunking.size_warning)}</p>')
    out.append(budget_table(view))
    if view.summary.comparisons:
        out.append(comparisons(view, view.summary.comparisons))
    elif len(view.pipelines) > 1:
        out.append(f'<p class="note">{_t("r.scores.no_comparisons")}</p>')
    if view.summary.budget_comparisons:
        out.append(comparisons(view, view.summary.budget_comparisons, budget=True))
    out.append("</section>")
    return "".join(out)


def budget_table(view: RunView) -> str:
    """The ranking metrics at an equal context budget (``budget_metrics``): each pipeline with its chunks' mean
    size, every budget column with its 95% interval."""
    cols = view.summary.budget_metrics
    if not cols:
        return ""
    budgets = view.summary.chunking.budgets if view.summary.chunking is not None else []
    spent = _t("r.budget.or").join(
        _t("r.budget.chars" if b.endswith("c") else "r.budget.tokens", n=b[:-1]) for b in budgets)
    out = [f'<h3 id="budget">{_t("r.budget.title")}</h3><p class="note">'
           f'{_t("r.budget.note", spent=Html(spent) if spent else _t("r.budget.the_budget"))}</p>'
           f'<div class="scroll"><table class="metrics budget"><thead><tr><th>{_t("r.col.pipeline")}</th>'
           f'<th class="num">{_t("r.budget.mean_chars")}</th>' + "".join(f'<th class="num">{_e(m)}</th>' for m in cols)
           + "</tr></thead><tbody>"]
    for p in view.pipelines:
        res, size = view.result(p), view.summary.chunk_sizes(p)
        mean = f"{size.mean_chars:.0f}" if size is not None else fmt.MISSING
        out.append(f'<tr><td>{view.dot(p)}{_e(p)}</td><td class="num">{mean}</td>'
                   + "".join(value_cell(res.metrics.get(m), res.ci95.get(m), n=res.n) for m in cols) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def unretrieved(view: RunView) -> str:
    """Per pipeline: the questions it failed on (graded as misses) by kind, and a service's latency."""
    items = []
    for p in view.pipelines:
        res = view.result(p)
        un = res.unretrieved
        if un.n:
            qs = "; ".join(f"<code>{_e(x.query_id)}</code>: {_computed(x.reason)}" for x in un.questions[:10])
            n = un.n_scored if un.n_scored is not None else un.n
            kinds = ", ".join(f"{k} {c}" for k, c in (un.scored_kinds() or {}).items()) or fmt.MISSING
            said = _t("r.unretrieved", n=n, total=res.n, kinds=Html(_computed(kinds)), questions=Html(qs)) if n \
                else ""
            if un.n - n:
                said += (" · " if said else "") + _t("r.unretrieved_unscored", n=un.n - n) + ("" if n else f": {qs}")
            items.append(f'<li class="warn"><b>{_e(p)}</b> {said}</li>')
        lat = res.latency
        if lat is not None:
            items.append(f"<li><b>{_e(p)}</b> " + _t("r.latency", median=fmt.num(lat.median), p95=fmt.num(lat.p95),
                                                       max=fmt.num(lat.max), n=lat.n) + "</li>")
        if res.produced_nothing:
            items.append(f'<li class="warn"><b>{_e(p)}</b> {_t("r.produced_nothing")} '
                         f'{_computed(res.produced_nothing)}</li>')
        if res.n_evidence_split:
            items.append(f'<li class="warn"><b>{_e(p)}</b> {_t("r.evidence_split", n=res.n_evidence_split, k=view.k)}'
                         "</li>")
    return f'<ul class="note">{"".join(items)}</ul>' if items else ""


def comparison_class(diff: Any, ci95: Any, p_holm: Any, verdict: Any = "") -> str:
    """``sig-up`` / ``sig-down`` when significant after Holm with the CI excluding 0, else
    ``border`` for a borderline verdict, else ``""``."""
    ci = interval(ci95)
    if fmt.is_number(p_holm) and p_holm < 0.05 and ci and (ci[0] > 0 or ci[1] < 0):
        return "sig-up" if fmt.is_number(diff) and diff > 0 else "sig-down"
    if str(verdict or "").startswith("borderline"):
        return "border"
    return ""


def _class_of(c: Comparison) -> str:
    return comparison_class(c.diff, c.ci95, c.p_holm if c.p_holm is not None else c.p_value, c.verdict)


def comparisons(view: RunView, comps: Sequence[Comparison], budget: bool = False) -> str:
    """The paired comparisons (``budget``: those at an equal context budget, each chunker against the first
    chunker with the same retriever), one column group per pair, and every verdict in words."""
    out = [f'<h3>{_t("r.cmp.title_budget" if budget else "r.cmp.title")}</h3><p class="note">{_t("r.cmp.note")}</p>']
    pairs: Dict[Tuple[str, str], Dict[str, Comparison]] = {}
    for c in comps:
        pairs.setdefault((c.pipeline, c.baseline), {})[c.metric] = c
    metrics = [m for m in (view.summary.budget_metrics if budget else view.metrics) if any(m in d for d in
                                                                                         pairs.values())]
    metrics += [m for d in pairs.values() for m in d if m not in metrics]
    pair_list = list(pairs)
    bases = sorted({b for _, b in pair_list})
    if len(bases) == 1:
        out.append(f'<p class="note">{_t("r.cmp.baseline")}{view.dot(bases[0])}<b>{_e(bases[0])}</b></p>')
    vs = _t("r.cmp.vs")
    top = "".join(f'<th colspan="3" class="grp">{view.dot(p)}{_e(p)}{"" if len(bases) == 1 else f"{vs}{_e(b)}"}</th>'
                  for p, b in pair_list)
    sub = (f'<th class="num">{_t("r.cmp.diff")}</th><th class="num">{_t("r.cmp.ci")}</th>'
           f'<th class="num">{_t("r.cmp.p_holm")}</th>') * len(pair_list)
    out.append(f'<div class="scroll"><table class="comparisons"><thead><tr><th rowspan="2">{_t("r.col.metric")}</th>'
               f"{top}</tr><tr>{sub}</tr></thead><tbody>")
    for m in metrics:
        cells = []
        for key in pair_list:
            c = pairs[key].get(m)
            if c is None:
                cells.append(f'<td class="num">{fmt.MISSING}</td>' * 3)
                continue
            cls = _class_of(c)
            arrow = {"sig-up": "▲ ", "sig-down": "▼ "}.get(cls, "")
            tip = f'title="{_e(c.verdict)}"{_en()}'  # the verdict on hover: ragexam's words
            cells.append(f'<td class="num {cls}" {tip}>{arrow}{fmt.signed(c.diff)}</td><td class="num ci2" '
                         f'{tip}>{_signed_ci(c.ci95)}</td><td class="num ci2" {tip}>'
                         f'{_e(fmt.p_value(c.p_value))} / {_e(fmt.p_value(c.p_holm))}</td>')
        out.append(f"<tr><th>{_e(m)}</th>{''.join(cells)}</tr>")
    out.append("</tbody></table></div>")
    out.append(f'<details><summary>{_t("r.cmp.all_budget" if budget else "r.cmp.all", n=len(comps))}</summary>'
               f'<table class="verdicts"><thead><tr><th>{_t("r.col.pipeline")}</th><th>{_t("r.col.metric")}</th>'
               f'<th class="num">n</th><th class="num">{_t("r.cmp.mdd")}</th><th>{_t("r.cmp.p_from")}</th>'
               f'<th>{_t("r.cmp.verdict")}</th></tr></thead><tbody>')
    for c in comps:
        method = _t(_P_FROM[c.method]) if c.method in _P_FROM else _e(c.method or fmt.MISSING)
        out.append(f'<tr><td>{_e(c.pipeline)}</td><td>{_e(c.metric)}</td><td class="num">{_e(c.n)}</td>'
                   f'<td class="num">{fmt.num(c.mdd)}</td><td>{method}</td>'
                   f'<td class="verdict {_class_of(c)}"{_en()}>{_e(c.verdict)}</td></tr>')
    out.append("</tbody></table></details>")
    return "".join(out)


# -- the LLM judge and the rerank stage ------------------------------------------------------------------------


def judge(jd: Optional[JudgeSection], dot: Callable[[str], str]) -> str:
    """The LLM judge of a score: per pipeline and metric the mean and the pass rate, each with its 95% interval over
    the judged answers, coverage, whether the judge was shown to separate good from bad, and with repeats the flip
    share and ties -- a probability-weighted mean named as such with the written mean beside it, the estimate human
    labels support in place of the judge's own (marked); then whether the judge is worth reading, and the judge
    beside the evidence.  ``dot(pipeline)``: the pipeline's coloured dot (:meth:`RunView.dot`)."""
    if jd is None or not jd.summary:
        return ""
    note = _t("r.judge.note", model=Html(data_html(jd.model)), endpoint=Html(data_html(jd.endpoint)),
              language=jd.language, n=int(jd.repeat or 1))
    out = [f'<section id="judge"><h2>{_t("r.judge.title")}</h2>', f'<p class="note">{note}</p>', _judge_table(jd, dot),
           _judge_trust(jd), _judge_vs_evidence(jd)]
    if jd.signatures:
        out.append('<p class="note">' + "<br>".join(f"{_e(m)}: <code>{_e(v)}</code>" for m, v in jd.signatures.items())
                   + "</p>")
    out.append("</section>")
    return "".join(out)


def _judge_table(jd: JudgeSection, dot: Callable[[str], str]) -> str:
    """The judge's table (:func:`judge`) and the notes that say what its numbers are."""
    repeat = int(jd.repeat or 1)
    weighted = any(s.scoring == "probability" for ms in jd.summary.values() for s in ms.values())
    cols = ["pipeline", "metric", "mean"] + (["written"] if weighted else []) + ["pass_rate", "coverage"] + \
        (["trust"] if jd.trust else []) + (["flipped", "ties"] if repeat > 1 else []) + ["unjudged"]
    out = ['<div class="scroll"><table class="metrics"><thead><tr>' + "".join(
        f'<th{"" if c in ("pipeline", "metric", "unjudged", "trust") else " class=num"}>{_t(_JUDGE_COLS[c])}</th>'
        for c in cols) + "</tr></thead><tbody>"]
    for p, ms in jd.summary.items():
        for m, s in ms.items():
            human = (jd.ppi.get(p) or {}).get(m)
            mean, ci, rate, rate_ci = human.in_place_of(s) if human is not None else (s.mean, s.ci95, s.pass_rate,
                                                                                    s.pass_ci95)
            label = _e(m) + (f' <small{_en()}>({_e(s.value_name)})</small>' if s.value_name != "mean" else "")
            if human is not None:
                which = "r.judge.corrected" if human.preferred[0] == "corrected" else "r.judge.labels_own"
                label += f"<br><small>{_t(which, metric=human.on, n=human.n_labelled)}</small>"
            row = [f"<td>{dot(p)}{_e(p)}</td>", f"<td>{label}</td>", value_cell(mean, ci)]
            row += [f'<td class="num">{fmt.num(s.written_mean) if s.written_mean is not None else "–"}</td>'] \
                if weighted else []
            na = f'<br><small>{_t("r.judge.not_applicable", n=s.n_not_applicable)}</small>' \
                if s.n_not_applicable else ""
            row += [value_cell(rate, rate_ci), f'<td class="num">{_e(s.n_judged)}/{_e(s.n)}{na}</td>']
            if jd.trust:
                t = jd.trust.get(m)
                row.append(f'<td class="trust {_e(t.verdict)}">{_trust_word(t.verdict)}</td>' if t is not None
                           else "<td>–</td>")
            if repeat > 1:
                row += [f'<td class="num">{_e(fmt.percent(s.flip_share))}</td>', f'<td class="num">{_e(s.ties)}</td>']
            row.append("<td>" + _e(", ".join(f"{k}: {v}" for k, v in s.unjudged.items()) or "–") + "</td>")
            out.append("<tr>" + "".join(row) + "</tr>")
    out.append("</tbody></table></div>")
    notes = ([_t("r.judge.written_note")] if weighted else []) + ([_t("r.judge.preferred_note")] if jd.ppi else []) \
        + ([_t("r.judge.na_note")] if any(s.n_not_applicable for ms in jd.summary.values() for s in ms.values())
           else [])
    out += [f'<p class="note">{n}</p>' for n in notes]
    out += [f'<p class="note"{_en()}>{_e(p)} {_e(m)}: {_e(s.interval_note)}</p>' for p, ms in jd.summary.items()
            for m, s in ms.items() if s.interval_note and s.ci95 is None]
    return "".join(out)


def _judge_trust(jd: JudgeSection) -> str:
    """Whether the judge is worth reading: each metric's trust verdict and its sentence."""
    if not jd.trust:
        return ""
    items = "".join(f'<li><b>{_e(m)}</b>: <span class="trust {_e(t.verdict)}">{_trust_word(t.verdict)}</span> — '
                    f'<span{_en()}>{_e(t.text)}</span></li>' for m, t in jd.trust.items())
    return (f'<h3>{_t("r.judge.trust_title")}</h3><p class="note">{_t("r.judge.trust_note")}</p>'
            f'<ul class="trust">{items}</ul>')


def score_metric_heads(jd: Optional[JudgeSection], metrics: Sequence[str]) -> Dict[str, str]:
    """The header cell of each metric of a score's results table (``ragexam serve``'s score page): a judge mean
    says what it is (``mean P(true)``, ``expected score``), a pass rate that it counts the written verdicts, so a
    probability mean never stands beside a pass rate unnamed; a metric not shown to be worth reading says so."""
    from ragexam.analysis.answers.rows import PASS_SUFFIX

    out = {m: _e(m) for m in metrics}
    if jd is None:
        return out
    first = next(iter(jd.summary.values()), {})
    for m in jd.metrics:
        st = first.get(m)
        what = st.value_name if st is not None else "mean"
        t = jd.trust.get(m)
        worth = f'<br><small class="trust {_e(t.verdict)}">{_t("r.judge.col.trust")} {_trust_word(t.verdict)}' \
            "</small>" if t is not None else ""
        if m in out:
            out[m] = f'{_e(m)}<br><small{_en()}>{_e(what)}</small>{worth}'
        if m + PASS_SUFFIX in out:
            out[m + PASS_SUFFIX] = f'{_e(m + PASS_SUFFIX)}<br><small>{_t("r.judge.pass_written")}</small>{worth}'
    return out


def _trust_word(verdict: str) -> str:
    """A trust verdict in the page's language (the catalogue's ``r.trust.*``)."""
    key = "r.trust." + verdict
    return _t(key) if key in current().strings else _e(verdict)


def _judge_vs_evidence(jd: JudgeSection) -> str:
    """The judge beside the evidence (:func:`judge`)."""
    if not jd.vs_evidence:
        return ""
    out = [f'<h3>{_t("r.judge.vs_title")}</h3><p class="note">{_t("r.judge.vs_note")}</p>',
           f'<div class="scroll"><table class="metrics"><thead><tr><th>{_t("r.col.pipeline")}</th>'
           f'<th>{_t("r.judge.col.judge")}</th><th class="num">{_t("r.judge.col.value")}</th>'
           f'<th>{_t("r.judge.col.evidence")}</th><th class="num">{_t("r.judge.col.value")}</th>'
           f'<th class="num">n <small>({_t("r.judge.col.n_evidence")})</small></th>'
           f'<th class="num">{_t("r.judge.col.agree")}</th><th>{_t("r.judge.col.disagreeing")}</th>'
           "</tr></thead><tbody>"]
    for p, comps in jd.vs_evidence.items():
        for c in comps:
            ids = ", ".join(d.query_id for d in c.disagreements)
            out.append(f"<tr><td>{_e(p)}</td><td>{_e(c.judge_metric)} ({_e(c.judge_value)})</td>"
                       f'<td class="num">{fmt.num(c.judge)}</td><td>{_e(c.evidence_metric)}</td>'
                       f'<td class="num">{fmt.num(c.evidence)}</td><td class="num">{_e(c.n)}</td>'
                       f'<td class="num">{_e(fmt.percent(c.agree))}</td><td>{_e(ids or "–")}</td></tr>')
    out.append("</tbody></table></div>")
    out.append(f'<p class="note">{_t("r.judge.vs_on")}</p>')
    return "".join(out)


def rerank(view: RunView) -> str:
    """Each rerank stage against its own first stage: lift (paired), per type, fixed/broken, the first stage's
    recall ceiling, the queries it could not rerank, latency and cost."""
    if not view.summary.rerank:
        return ""
    out = [f'<section id="rerank"><h2>{_t("r.rerank.title")}</h2><p class="note">{_t("r.rerank.note")}</p>']
    for name, b in view.summary.rerank.items():
        after = view.result(name).metrics
        out.append(f"<h3>{view.dot(name)}{_e(name)}</h3>"
                   f'<p class="note">{_t("r.rerank.stage", first=b.first_stage, top=b.top, reranker=b.reranker)}</p>')
        out.append(f'<div class="scroll"><table><thead><tr><th>{_t("r.col.metric")}</th>'
                   f'<th class="num">{_t("r.rerank.col.first")}</th><th class="num">{_t("r.rerank.col.reranked")}</th>'
                   f'<th class="num">{_t("r.rerank.col.lift")}</th><th class="num">{_t("r.cmp.ci")}</th>'
                   f'<th class="num">{_t("r.rerank.col.p")}</th><th>{_t("r.rerank.col.reading")}</th>'
                   "</tr></thead><tbody>")
        for c in b.comparisons:
            out.append(f"<tr><td>{_e(c.metric)}</td><td class=num>{fmt.num(b.first_stage_metrics.get(c.metric))}</td>"
                       f"<td class=num>{fmt.num(after.get(c.metric))}</td><td class=num>{fmt.signed(c.diff)}</td>"
                       f"<td class=num>{_signed_ci(c.ci95)}</td><td class=num>{fmt.p_value(c.p_holm)}</td>"
                       f"<td{_en()}>{_e(c.reading)}</td></tr>")
        out.append("</tbody></table></div>")
        out.append("<ul>" + "".join(f"<li>{x}</li>" for x in _rerank_items(b)) + "</ul>")
    out.append("</section>")
    return "".join(out)


def _rerank_items(b: Any) -> List[str]:
    ceil, st = b.ceiling, b.status
    items = [_t("r.rerank.ceiling", top=ceil.top, recall=fmt.num(ceil.recall_at_top), within=ceil.n_within,
                misses=ceil.misses, k=ceil.k, outside=ceil.misses_outside, inside=ceil.misses_inside)]
    if b.by_type:
        items.append(_t("r.rerank.by_type") + "; ".join(
            f"{_e(t)} (n {_e(v.n)}): " + ", ".join(f"{_e(m)} {fmt.signed(d)}" for m, d in list(v.lift.items())[:3])
            for t, v in b.by_type.items()))
    for what, xs in (("r.rerank.fixed", b.fixed), ("r.rerank.broken", b.broken)):
        items.append(_t(what, n=len(xs)) + (": " + ", ".join(
            f"<code>{_e(x.query_id)}</code> ({_e(x.first_rank_before)} → {_e(x.first_rank_after)})"
            for x in xs[:20]) if xs else ""))
    items.append(_t("r.rerank.queries", reranked=st.reranked, partial=st.partial, failed=st.failed)
                 + (": " + "; ".join(f"<code>{_e(x.query_id)}</code> {_computed(x.reason)}" for x in st.questions[:10])
                    if st.failed else ""))
    if b.latency is not None:
        lat = b.latency
        items.append(_t("r.rerank.latency", median=fmt.num(lat.median), p95=fmt.num(lat.p95), max=fmt.num(lat.max),
                        n=lat.n))
    if b.usage:
        items.append(_t("r.rerank.work") + usage_words(b.usage))
    return items


#: how a comparison's p-value was computed (``Comparison.method``): the catalogue's words
_P_FROM = {"exact": "r.p_from.exact", "approximate": "r.p_from.approximate"}
#: what each count of a rerank stage's ``usage`` is: the catalogue's words (``{n}``: the count)
_USAGE_WORDS = {"calls": "r.usage.calls", "cached": "r.usage.cached", "failed": "r.usage.failed",
                "requests": "r.usage.requests", "texts_embedded": "r.usage.texts_embedded",
                "prompt_tokens": "r.usage.prompt_tokens", "completion_tokens": "r.usage.completion_tokens"}
#: the judge table's columns: the catalogue's words
#: the dataset card's rows of the chunking (:func:`ragexam.report.console_run._chunking_rows`): the catalogue's words
_CHUNKING_ROWS = {"chunks": "r.ds.chunking", "budget": "r.ds.budget"}
#: the dataset card's fields with a name in the catalogue beyond the ordered ones (``r.ds.<field>``)
_CARD_ROWS = ("scored_types", "n_evidence", "n_unmatched_evidence")


def _chunking_rows_here(summary: Any, rows: List[Any]) -> List[Any]:
    """The dataset card's chunking rows in the page's language: the console's (English) rows as they are on an
    English page; on another, each chunking's sizes and the budget line in the catalogue's words (other rows stay
    the console's, marked English)."""
    ch = summary.chunking
    if current().code == "en" or ch is None:
        return rows
    sizes = iter(ch.sizes.items())
    out: List[Any] = []
    for key, text in rows:
        if key == "budget":
            why = _t("r.ds.budget_given") if ch.budget_rule == "given" else _t("r.ds.budget_equal", k=summary.miss_k)
            units = ", ".join(str(_t("r.ds.budget_unit_c" if b.endswith("c") else "r.ds.budget_unit_t", n=b[:-1]))
                              for b in ch.budgets)
            counted = _t("r.ds.budget_counted", counter=ch.token_counter) if ch.token_counter else ""
            out.append((key, Html(str(_t("r.ds.budget_text", budgets=", ".join(ch.budgets), why=why, units=units))
                                  + str(counted))))
            continue
        item = next(sizes, None) if key in ("chunks", "") and not text.startswith(tuple(
            f"{u.embedder} " for u in (summary.timing.embeddings if summary.timing is not None else []))) else None
        out.append((key, Html(_size_html(*item))) if item is not None else (key, text))
    return out


def _size_html(name: str, c: Any) -> str:
    """One chunking's sizes in the catalogue's words (``r.ds.size_*``), as the console's ``_size_text`` says them."""
    if c.kind == "texts" and not c.n_chunks:
        return str(_t("r.ds.size_no_text", name=name))
    if c.kind != "texts":
        counted = _t("r.ds.size_chunks", n=c.n_chunks)
    elif c.n_returned is not None:
        counted = _t("r.ds.size_returned", n=c.n_returned, distinct=c.n_chunks)
    else:
        counted = _t("r.ds.size_distinct", n=c.n_chunks)
    out = str(_t("r.ds.size", name=name, counted=Html(str(counted)), mean=f"{c.mean_chars:.0f}", max=c.max_chars))
    if c.cut_sentences:
        out += str(_t("r.ds.size_cut", n=c.cut_sentences, size=name.rsplit(":", 1)[-1]))
    for w in c.windows:
        action = _t("r.ds.size_windowed" if w.action == "windowed" else "r.ds.size_truncated")
        out += str(_t("r.ds.size_over", n=w.n_over, embedder=w.embedder, window=w.window, action=Html(str(action)))
                   if w.n_over else _t("r.ds.size_within", embedder=w.embedder, window=w.window))
    return out
_JUDGE_COLS = {"pipeline": "r.col.pipeline", "metric": "r.col.metric", "mean": "r.judge.col.mean",
               "written": "r.judge.col.written", "pass_rate": "r.judge.col.pass_rate",
               "coverage": "r.judge.col.coverage", "trust": "r.judge.col.trust",
               "flipped": "r.judge.col.flipped", "ties": "r.judge.col.ties", "unjudged": "r.judge.col.unjudged"}


def usage_words(usage: Dict[str, Any]) -> str:
    """A stage's ``usage`` (``{"texts_embedded": 2394}``) in words, as HTML: ``2,394 texts embedded``."""
    out = []
    for key, value in usage.items():
        if key == "cost_usd":
            out.append(_t("r.usage.cost", cost=fmt.cost(value)))
        elif key == "model":
            out.append(_t("r.usage.model", model=str(value)))
        elif key in _USAGE_WORDS:
            out.append(_t(_USAGE_WORDS[key], n=f"{value:,}" if isinstance(value, int) else str(value)))
        else:
            out.append(_e(f"{str(key).replace('_', ' ')}: {value}"))
    return ", ".join(out)


def p_value_note(comparisons: Sequence[Comparison], n_permutations: Optional[int]) -> str:
    """How the p-values of ``comparisons`` were computed, in words (``""`` when none says)."""
    exact = sum(1 for c in comparisons if c.method == "exact")
    approx = sum(1 for c in comparisons if c.method == "approximate")
    parts = []
    if exact:
        parts.append(current().text("r.p_note.exact", n=exact))
    if approx:
        parts.append(current().text("r.p_note.approximate_of" if n_permutations else "r.p_note.approximate", n=approx,
                                    flips=f"{n_permutations:,}" if n_permutations else ""))
    return current().text("r.p_note", parts="; ".join(parts)) if parts else ""


# -- plots ---------------------------------------------------------------------------------------------------


def _sorted_keys(keys) -> List[str]:
    def key(k: str):
        try:
            return (0, float(k), k)
        except ValueError:
            return (1, 0.0, k)
    return sorted((str(k) for k in keys), key=key)


def _sweep_charts(view: RunView) -> str:
    ks = _sorted_keys(dict.fromkeys(k for p in view.pipelines for k in view.result(p).sweep))
    if not ks:
        return f'<p class="note">{_t("r.plots.no_sweep")}</p>'
    charts = []
    text = current().text
    for key, name in (("p", "r.plots.precision"), ("r", "r.plots.recall"), ("f1", "r.plots.f1")):
        series = []
        for p in view.pipelines:
            sweep = view.result(p).sweep
            series.append((p, [getattr(sweep[k], key) if k in sweep else None for k in ks]))
        charts.append(svg.line_chart(text("r.plots.at_k", name=text(name)), ks, series, y_label=text(name),
                                     value_name=key.upper() if key != "f1" else "F1",
                                     data_attrs={"plot": f"sweep-{key}"}))
    return '<div class="charts">' + "".join(charts) + "</div>"


def _fbeta_charts(view: RunView) -> str:
    betas = _sorted_keys(dict.fromkeys(b for p in view.pipelines for b in view.result(p).fbeta))
    if not betas:
        return f'<p class="note">{_t("r.plots.no_fbeta")}</p>'
    charts = []
    for b in betas:
        ks = _sorted_keys(dict.fromkeys(k for p in view.pipelines for k in view.result(p).fbeta.get(b) or {}))
        series = [(p, [(view.result(p).fbeta.get(b) or {}).get(k) for k in ks]) for p in view.pipelines]
        charts.append(svg.line_chart(current().text("r.plots.fbeta", beta=b), ks, series, y_label=f"F{b}",
                                     value_name=f"F{b}", data_attrs={"plot": f"fbeta-{b}"}))
    return f'<p class="note">{_t("r.plots.fbeta_note")}</p><div class="charts">' + "".join(charts) + "</div>"


def type_charts(view: RunView) -> str:
    """Per-type bars with 95% whiskers, one chart per metric (a select shows one: the headline first)."""
    types = [t for t in view.types() if any(t in view.result(p).by_type for p in view.pipelines)]
    metrics = [m for m in view.metrics + [x for x in view.all_metrics if x not in view.metrics]
               if any(m in (view.result(p).by_type.get(t) or {}) for p in view.pipelines for t in types)]
    if not types or not metrics:
        return f'<p class="note">{_t("r.plots.no_types")}</p>'
    default = view.headline if view.headline in metrics else metrics[0]
    opts = "".join(f'<option value="{_e(m)}"{" selected" if m == default else ""}>{_e(m)}</option>' for m in metrics)
    out = [f'<div class="filters"><label>{_t("r.col.metric")} <select id="type-metric">{opts}</select></label>'
           f'<span class="note">{_t("r.plots.whiskers")}</span></div><div class="charts">']
    width = max(360, min(900, 110 * len(types) * max(1, len(view.pipelines)) // 2 + 120))
    groups = []
    for t in types:
        ns = {view.result(p).by_type_n.get(t) for p in view.pipelines}
        ns.discard(None)
        groups.append(f"{t} (n={ns.pop()})" if len(ns) == 1 else t)
    for m in metrics:
        series = []
        for p in view.pipelines:
            res = view.result(p)
            vals = []
            for t in types:
                v = (res.by_type.get(t) or {}).get(m)
                ci = interval((res.by_type_ci95.get(t) or {}).get(m))
                vals.append((float(v), ci[0] if ci else None, ci[1] if ci else None) if fmt.is_number(v) else None)
            series.append((p, vals))
        top = max([v[2] if v[2] is not None else v[0] for _, vs in series for v in vs if v] + [0.0])
        chart = svg.bar_chart(current().text("r.plots.by_type", metric=m), groups, series, y_label=m,
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


def _rank_chart(view: RunView) -> str:
    if not view.rows:
        return f'<p class="note">{_t("r.plots.no_rows")}</p>'
    text = current().text
    bins = _rank_bins(view.summary.config.depth)
    groups = [b[0] for b in bins] + [text("r.not_found")]
    ranks_of: Dict[str, List[Optional[int]]] = {p: [] for p in view.pipelines}
    for r in view.rows:
        if r.answerable and r.pipeline in ranks_of:
            ranks_of[r.pipeline].append(r.first_rank)
    series, tips = [], []
    for p in view.pipelines:
        ranks = ranks_of[p]
        n = len(ranks)
        counts = [sum(1 for x in ranks if x is not None and lo <= x and (hi is None or x <= hi)) for _, lo, hi in bins]
        counts.append(sum(1 for x in ranks if x is None))
        series.append((p, [(c / n, None, None) if n else None for c in counts]))
        tips.append([text("r.plots.rank_tip", pipeline=p, group=g, count=c, n=n,
                          share=fmt.percent(c / n if n else 0, 1)) for g, c in zip(groups, counts)])
    chart = svg.bar_chart(text("r.plots.rank_title"), groups, series, y_label=text("r.plots.rank_y"),
                          x_label=text("r.plots.rank_x"), percent=True, tooltips=tips,
                          width=max(520, 36 * len(groups) * max(1, len(view.pipelines)) // 2 + 80),
                          marker_after=view.k - 1 if view.k <= 10 else None,
                          marker_label=text("r.plots.rank_marker", k=view.k), data_attrs={"plot": "first-rank"})
    return f'<div class="charts">{chart}</div>'


#: a cell's link of the attribution matrix: ``(pipeline, type, label) -> address`` (``None``: no links)
CellLink = Callable[[str, str, str], Optional[str]]


def attribution(att: Dict[str, Dict[str, Dict[str, int]]], order: Sequence[str],
                link: Optional[CellLink] = None) -> str:
    """One heatmap per pipeline of ``att`` (``{pipeline: {type: {stage label: count}}}``, the pipelines of
    ``order`` first): questions per type (rows) by the stage that lost the answer (columns); with ``link`` each
    cell is a link (``ragexam serve``: to its questions)."""
    if not att:
        return f'<p class="note box">{_t("r.plots.no_attribution")}</p>'
    charts = []
    for p in [p for p in order if p in att] + [p for p in att if p not in order]:
        by_type = att[p]
        stages = list(dict.fromkeys(s for counts in by_type.values() for s in counts))
        rows = list(by_type)
        matrix = [[int(by_type[t].get(s, 0)) for s in stages] for t in rows]
        links = [[link(p, t, s) for s in stages] for t in rows] if link is not None else None
        charts.append(svg.heatmap(str(p), rows, stages, matrix, data_attrs={"plot": "attribution"}, links=links))
    return (f'<p class="note">{_t("r.plots.attribution_note")}' + (_t("r.plots.attribution_open") if link is not None
                                                                   else "") +
            '</p><div class="charts">' + "".join(charts) + "</div>")


def plots(view: RunView, link: Optional[CellLink] = None) -> str:
    return "".join([
        f'<section id="plots"><h2>{_t("r.plots.title")}</h2>', legend(view),
        f'<h3>{_t("r.plots.sweep")}</h3>', _sweep_charts(view),
        f'<h3>{_t("r.plots.fbeta_title")}</h3>', _fbeta_charts(view),
        f'<h3>{_t("r.plots.types_title")}</h3>', type_charts(view),
        f'<h3>{_t("r.plots.ranks_title")}</h3>', _rank_chart(view),
        f'<h3>{_t("r.plots.attribution_title")}</h3>', attribution(view.attribution, view.pipelines, link),
        "</section>"])


# -- a missed question ---------------------------------------------------------------------------------------

#: fields of a missed question the details show by name; any other (newer) field is listed generically
_SHOWN = {"query_id", "question", "type", "evidence", "ground_truth", "first_rank", "unit_ranks", "k", "top",
          "first_correct", "unretrieved", "relevant_doc_ids", "evidence_split", "n_returned"}


def _facts(view: RunView, entry: MissedEntry) -> List[Tuple[str, str]]:
    e = entry.question
    ans = view.answer(entry.pipeline, e.query_id)
    items = [(_t("r.missed.question"), data_html(e.question) if e.question else f'<i>{_t("r.missed.not_in_run")}</i>')]
    items.append((_t("r.missed.evidence"), "<br>".join(f'<span class="evidence">{_e(x)}</span>' for x in e.evidence)
                  if e.evidence else f'<i>{_t("r.missed.none_recorded")}</i>'))
    ground = ans.ground_truth or e.ground_truth
    items.append((_t("r.missed.ground_truth"),
                  data_html(ground) if ground else f'<i>{_t("r.missed.not_available")}</i>'))
    if ans.answer is not None:
        items.append((_t("r.missed.answer"), data_html(ans.answer)))
    if ans.verdict is not None or ans.score is not None:
        score = None if ans.score is None else fmt.num(ans.score) if fmt.is_number(ans.score) else str(ans.score)
        verdict = " · ".join(str(x) for x in (ans.verdict, score) if x is not None)
        items.append((_t("r.missed.judge"), data_html(verdict)))
    if ans.reasoning:
        items.append((_t("r.missed.reasoning"), data_html(ans.reasoning)))
    if ans.stage:
        items.append((_t("r.missed.stage"), data_html(ans.stage)))
    if e.unretrieved:
        items.append((_t("r.missed.unretrieved"), _computed(e.unretrieved)))
    sp = e.evidence_split
    if sp is not None:
        items.append((_t("r.missed.split"), _t(
            "r.missed.split_text", rank=sp.rank, chunk=sp.chunk_id, part=sp.part, chars=sp.chars, length=sp.length,
            evidence=sp.evidence, k=sp.k)))
    if e.unit_ranks:
        items.append((_t("r.missed.ranks"), _e(", ".join(f"{u}: {r if r is not None else current().text('r.not_found')}"
                                                        for u, r in e.unit_ranks.items()))))
    items.append((_t("r.missed.first_correct"), _first_correct(view, entry)))
    for f in fields(MissedQuestion):
        value = getattr(e, f.name)
        if f.name not in _SHOWN and f.name != "extra" and value not in (None, [], {}, ""):
            items.append((f.name.replace("_", " "), data_html(_plain(value))))
    return items


def _first_correct(view: RunView, entry: MissedEntry) -> str:
    """Where the first chunk that counts was ranked.  Evidence mode: ``first_rank`` is its rank in the chunk list.
    Doc mode: ``first_rank`` is the rank of the first relevant *document* (k counts documents), so the chunk is the
    first chunk of a relevant document (``first_correct``, kept by the run); a run folder from before that was kept
    says only the document's rank rather than name a chunk of some other document."""
    e, fr = entry.question, entry.question.first_rank
    if fr is None:
        depth = view.summary.config.depth
        if e.n_returned is not None and (not depth or e.n_returned < depth):
            return _t("r.first.not_returned", n=e.n_returned)
        return _t("r.first.not_within", depth=depth if depth else "?")
    fc = e.first_correct
    if view.summary.config.relevance == "doc":
        doc_rank = _t("r.first.doc_rank", rank=fr)
        if fc is None:
            return _t("r.first.doc_unnamed", doc_rank=doc_rank)
        doc = _t("r.first.of_doc", doc=fc.doc_id) if fc.doc_id else ""
        return _t("r.first.doc_chunk", chunk=fc.chunk_id, doc=Html(doc), rank=fc.rank, doc_rank=doc_rank)
    if fc is not None:
        return _t("r.first.chunk", chunk=fc.chunk_id, rank=fc.rank)
    row = view.row_of.get((entry.pipeline, e.query_id))
    top_ids = row.top_ids if row is not None else []
    if 1 <= fr <= len(top_ids):
        return _t("r.first.chunk", chunk=top_ids[fr - 1], rank=fr)
    return _t("r.first.beyond", rank=fr, n=len(top_ids))


def _plain(value: Any) -> str:
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    if isinstance(value, list):
        value = [v.to_dict() if hasattr(v, "to_dict") else v for v in value]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _chunk_li(view: RunView, c: RetrievedChunk, evidence: Sequence[str], split: Optional[str] = None) -> str:
    marks = 0
    body = ""
    if c.text:
        body, marks = highlight_html(c.text, evidence, ignore_punctuation=view.ignore_punct)
        body = f'<div class="text{"" if current().code == "en" else " data"}">{body}</div>'
    meta = [f"#{_e(c.rank)}", f"<code>{_e(c.chunk_id)}</code>"]
    if c.doc_id is not None:
        meta.append(_t("r.chunk.doc", doc=c.doc_id))
    if fmt.is_number(c.score):
        meta.append(_t("r.chunk.score", score=fmt.num(c.score)))
    if marks:
        meta.append(f'<span class="tag">{_t("r.chunk.contains")}</span>')
    if split is not None and c.chunk_id == split:
        meta.append(f'<span class="tag">{_t("r.chunk.split")}</span>')
    return f'<li{" class=hit" if marks else ""}><div class="meta">{" · ".join(meta)}</div>{body}</li>'


def missed_detail(view: RunView, entry: MissedEntry) -> str:
    """A missed question's details: the question, its evidence, ground truth and answers, where its evidence was
    found, and the top retrieved chunks with the evidence marked."""
    e = entry.question
    dl = "".join(f"<dt>{_html(k)}</dt><dd>{v}</dd>" for k, v in _facts(view, entry))
    split = e.evidence_split.chunk_id if e.evidence_split is not None else None
    chunks = [_chunk_li(view, c, e.evidence, split) for c in e.top]
    top = (f'<h4>{_t("r.missed.top", n=len(chunks), k=e.k)}</h4><ol class="chunks">{"".join(chunks)}</ol>'
           if chunks else f'<p class="note">{_t("r.missed.no_chunks")}</p>')
    if e.first_correct is not None and e.first_correct.rank > len(e.top):
        where = "r.missed.where_doc" if view.summary.config.relevance == "doc" else "r.missed.where_evidence"
        top += (f"<h4>{_t(where, rank=e.first_correct.rank)}</h4>"
                f'<ol class="chunks">{_chunk_li(view, e.first_correct, e.evidence)}</ol>')
    return f'<div class="detail"><dl>{dl}</dl>{top}</div>'


# -- dataset and settings ------------------------------------------------------------------------------------


def dataset(view: RunView) -> str:
    """The dataset card: every field of ``summary.dataset``, the question types, warnings, unmatched evidence."""
    ds = view.summary.dataset
    card = ds.to_dict()
    order = ["corpus", "qa", "n_documents", "n_questions", "n_answerable", "n_out_of_corpus", "n_scored"]
    sizes: List[Tuple[Any, Any]] = [(_t(f"r.ds.{k}"), card[k]) for k in order if k in card]
    sizes += [(_t("r.ds.chunks", chunker=c), n) for c, n in ds.n_chunks.items()]
    sizes += [(_t(f"r.ds.{k}"), card[k]) for k in ("corpus_sha256", "qa_sha256") if k in card]
    known = set(order) | {"n_chunks", "types", "corpus_sha256", "qa_sha256", "audit"}
    sizes += [(_t(f"r.ds.{k}") if k in _CARD_ROWS else k, v) for k, v in card.items() if k not in known]
    # the set's audit (its one reader), the chunking's sizes and budgets: in the console's words
    from ragexam.report.console_run import _audit, _chunking_rows

    audit = _audit(view.summary)
    if audit is not None:
        text = audit.text_ko if current().code == "ko" and audit.text_ko else audit.text
        sizes.insert(sum(1 for k in order if k in card), (_t("r.ds.audit"), text))

    sizes += [(_t(_CHUNKING_ROWS[k]) if k in _CHUNKING_ROWS else k, v if isinstance(v, Html) else Html(_computed(v)))
              for k, v in _chunking_rows_here(view.summary, _chunking_rows(view.summary))]
    out = [f'<section id="dataset"><h2>{_t("r.ds.title")}</h2>', kv_table(sizes, names=True)]
    if ds.types:
        total = sum(ds.types.values()) or 1
        out.append(f'<h3>{_t("r.ds.types")}</h3><table><thead><tr><th>{_t("r.col.type")}</th>'
                   f'<th class=num>{_t("r.ds.questions")}</th><th class=num>{_t("r.ds.share")}</th>'
                   "</tr></thead><tbody>")
        for t, n in ds.types.items():
            out.append(f"<tr><td>{data_html(t)}</td><td class=num>{_e(n)}</td>"
                       f"<td class=num>{fmt.percent(n / total)}</td>"
                       "</tr>")
        out.append("</tbody></table>")
    unmatched = view.summary.unmatched_evidence
    warnings = view.summary.warnings
    if warnings:
        out.append(f'<h3>{_t("r.ds.warnings", n=len(warnings))}</h3><ul>'
                   + "".join(f"<li>{_computed(w)}</li>" for w in warnings) + "</ul>")
    if not ds.n_chunks and not unmatched:
        out.append(f'<p class="note">{_t("r.ds.no_chunker")}</p></section>')
        return "".join(out)
    out.append(f'<h3>{_t("r.ds.unmatched", n=len(unmatched))}</h3>')
    if unmatched:
        out.append(f'<p class="note">{_t("r.ds.unmatched_note")}</p><table><thead><tr>'
                   f'<th>{_t("r.col.question_id")}</th><th>{_t("r.missed.evidence")}</th><th>{_t("r.ds.chunker")}</th>'
                   f'<th>{_t("r.ds.reason")}</th><th>{_t("r.ds.where")}</th></tr></thead><tbody>')
        for u in unmatched:
            cuts = "; ".join(f"{c.doc_id} @ {c.offset}: {', '.join(c.chunks)}" for c in u.cuts)
            out.append(f"<tr><td><code>{_e(u.query_id)}</code></td><td>{_e(u.evidence)}</td>"
                       f"<td>{_e(u.chunker)}</td><td>{_computed(u.reason)}</td><td>{_e(cuts)}</td></tr>")
        out.append("</tbody></table>")
    else:
        out.append(f'<p class="note">{_t("r.ds.all_matched")}</p>')
    out.append("</section>")
    return "".join(out)


def settings(view: RunView) -> str:
    """Everything that produced the numbers: ids, version, the config, every signature."""
    s = view.summary
    out = [f'<section id="settings"><h2>{_t("r.set.title")}</h2><p class="note">{_t("r.set.note")}</p>',
           kv_table([(_t("r.set.run_id"), s.run_id), (_t("r.set.created"), s.created), (_t("r.set.format"), s.format),
                     (_t("r.set.version"), s.ragexam_version), (_t("r.set.miss_k"), view.k)], names=True),
           f'<h3>{_t("r.set.config")}</h3>', kv_table(list(s.config.to_dict().items()), names=True),
           f'<h3>{_t("r.set.signatures")}</h3>',
           f'<table><thead><tr><th>{_t("r.col.pipeline")}</th><th>{_t("r.set.signature")}</th></tr></thead><tbody>']
    for p in s.pipelines:
        out.append(f'<tr><td>{_e(p.name)}</td><td class="sig">{_e(p.signature)}</td></tr>')
    shown = {p.name: p.signature for p in s.pipelines}
    for name, res in s.results.items():  # a result's own signature only where it is not its pipeline's again
        if res.signature and shown.get(name) != res.signature:
            out.append(f'<tr><td>{_e(name)} <small>{_t("r.set.results")}</small></td>'
                       f'<td class="sig">{_e(res.signature)}</td></tr>')
    out.append("</tbody></table>")
    note = p_value_note(s.comparisons, s.config.n_permutations)
    if note:
        out.append(f'<p class="note">{_e(note)}</p>')
    out.append(f'<details><summary>{_t("r.set.json")}</summary><pre>'
               + _e(json.dumps({"config": s.config.to_dict(), "dataset": s.dataset.to_dict(),
                                "pipelines": [p.to_dict() for p in s.pipelines]}, ensure_ascii=False, indent=2))
               + "</pre></details></section>")
    return "".join(out)
