"""A score's segments in HTML (``ragexam score --by``): one fragment for the static page, the run's report and
``ragexam serve``'s score page, in English or Korean.

:func:`section` renders a :class:`~ragexam.storage.score_summary.SegmentsSection`: the segments with their judge
metrics and the exam's evidence (mean, 95% interval, n; "too few" with the reason in its title), feedback, latency
and token percentiles, the comparisons with the baseline, the answers to read first and the exam matching.  Its
texts are the ``r.seg.*`` keys of the report's catalogue (:mod:`ragexam.report.strings`, through
:mod:`ragexam.report.i18n`, as every section of the report and every page of ``ragexam serve``); names, questions,
verdicts and notes computed in English are data (``class="data"``).

The page of a score without a run (production traces: ``score --by ... --report FILE``) is
:mod:`ragexam.report.score_page`.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Union

from ragexam import fmt
from ragexam.report.i18n import Html, current, language, speaking
from ragexam.report.views import fmt_e as _e
from ragexam.storage.score_summary import JudgeStat, MeanStat, SegmentsSection, Spread

__all__ = ["section", "SEGMENTS_CSS"]

#: a text of the catalogue in the fragment's language: ``t(key, **values)`` (:meth:`ragexam.report.i18n.Lang.t`)
_T = Callable[..., Html]

#: the fragment's own style (beside :data:`ragexam.report.sections.FRAGMENT_CSS`)
SEGMENTS_CSS = ".segments td.toofew{color:var(--muted)}.segments .why{max-width:40em}"


def _stat(stat: Optional[Union[JudgeStat, MeanStat]], note: Optional[str], t: _T) -> str:
    n = 0 if stat is None else (stat.n_judged if isinstance(stat, JudgeStat) else stat.n)
    if stat is None or not n or stat.mean is None:
        return '<td class="num">–</td>'
    why = note or (stat.note if isinstance(stat, MeanStat) else None)
    title = f' title="{_e(why)}"' if why and current().code == "en" else ""
    ci = f'<span class="ci">{fmt.ci(stat.ci95, digits=3, short=False)}</span>' if stat.ci95 else \
        (f'<span class="ci"{title}>{t("r.seg.too_few") if why and why.startswith("n = ") else "–"}</span>'
         if why else "")
    return f'<td class="num"><span class="v">{fmt.num(stat.mean)}</span>{ci}<span class="ci">{t("r.seg.n", n=n)}</span></td>'


def _spread(s: Spread, t: _T) -> str:
    if not s.n:
        return '<td class="num">–</td>'
    cells = " / ".join(f"{v:,.0f}" if v is not None else "–" for v in (s.p50, s.p90, s.p99))
    return f'<td class="num">{cells}<span class="ci">{t("r.seg.n", n=s.n)}</span></td>'


def _table(sec: SegmentsSection, t: _T) -> List[str]:
    metrics = list(dict.fromkeys(m for s in sec.segments.values() for m, st in s.judge.items() if st.n))
    evidence = list(dict.fromkeys(m for s in sec.segments.values() for m in s.evidence))
    head = [t("r.seg.col.segment"), t("r.seg.col.answers"), t("r.seg.col.questions"), t("r.seg.col.failed"),
            t("r.seg.col.negative")] + [f'<span class="data">{_e(m)}</span>' for m in metrics] + \
        [t("r.seg.col.exam", metric=m) for m in evidence]
    out = ['<div class="scroll"><table class="metrics segments"><thead><tr>'
           + "".join(f"<th{' class=num' if i else ''}>{h}</th>" for i, h in enumerate(head)) + "</tr></thead><tbody>"]
    for s in sec.segments.values():
        few = f' <span class="tag">{t("r.seg.too_few")}</span>' if s.too_few else ""
        fb = t("r.seg.of", k=s.feedback.negative, n=s.feedback.n) if s.feedback.n else "–"
        row = [f'<td><span class="data">{_e(s.name)}</span>{few}</td>', f'<td class="num">{s.n_answers}</td>',
               f'<td class="num">{s.n_questions}</td>', f'<td class="num">{s.n_failed}</td>',
               f'<td class="num">{fb}</td>']
        row += [_stat(s.judge.get(m), s.interval_notes.get(m), t) for m in metrics]
        row += [_stat(s.evidence.get(m), None, t) for m in evidence]
        out.append("<tr>" + "".join(row) + "</tr>")
    out.append("</tbody></table></div>")
    return out


def _spreads(sec: SegmentsSection, t: _T) -> List[str]:
    kinds = list(dict.fromkeys(k for s in sec.segments.values() for k in s.tokens))
    if not any(s.latency_ms.n or s.tokens for s in sec.segments.values()):
        return []
    head = [t("r.seg.col.segment"), t("r.seg.col.latency")] + [t(f"r.seg.tokens.{k}") for k in kinds]
    out = [f'<h3>{t("r.seg.spread.title")}</h3><p class="note">{t("r.seg.spread.note")}</p>',
           '<div class="scroll"><table class="metrics"><thead><tr>'
           + "".join(f"<th{' class=num' if i else ''}>{h}</th>" for i, h in enumerate(head)) + "</tr></thead><tbody>"]
    for s in sec.segments.values():
        out.append(f'<tr><td><span class="data">{_e(s.name)}</span></td>{_spread(s.latency_ms, t)}'
                   + "".join(_spread(s.tokens.get(k, Spread()), t) for k in kinds) + "</tr>")
    out.append("</tbody></table></div>")
    return out


def _comparisons(sec: SegmentsSection, t: _T) -> List[str]:
    if not sec.comparisons:
        return []
    tested = sum(1 for c in sec.comparisons if c.design != "too_few")
    head = [t("r.seg.col.metric"), t("r.seg.col.segment"), t("r.seg.col.compared_on"), t("r.seg.col.diff"), t("r.seg.col.ci"),
            t("r.seg.col.p"), t("r.seg.col.verdict")]
    out = [f'<h3>{t("r.seg.cmp.title")}</h3><p class="note">{t("r.seg.cmp.note", min_n=sec.min_n, n=tested)}</p>',
           '<div class="scroll"><table class="metrics"><thead><tr>'
           + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for c in sec.comparisons:
        if c.design == "paired":
            how = t("r.seg.paired", n=c.n) + (t("r.seg.left_out", n=c.left_out) if c.left_out else "")
        elif c.design == "unpaired":
            how = t("r.seg.unpaired", a=c.n_a, b=c.n_b)
        else:
            how = t("r.seg.cmp_too_few")
        how += t("r.seg.in_both", n=c.in_both) if c.in_both else ""
        out.append(f'<tr><td class="data">{_e(c.metric)}</td><td class="data">{_e(c.b)}</td><td>{how}</td>'
                   f'<td class="num">{fmt.signed(c.diff)}</td><td class="num">{fmt.signed_ci(c.ci95)}</td>'
                   f'<td class="num">{fmt.p_value(c.p_holm)}</td><td class="data" lang="en">{_e(c.verdict)}</td></tr>')
    out.append("</tbody></table></div>")
    return out


def _worst(sec: SegmentsSection, t: _T) -> List[str]:
    if not sec.worst:
        return []
    head = [t("r.seg.col.answer_id")] + ([t("r.seg.col.segment")] if sec.by else []) + [t("r.seg.col.why"),
                                                                                   t("r.seg.col.question")]
    some = f' <small>({t("r.seg.worst.some", shown=len(sec.worst), n=sec.n_worst)})</small>' \
        if sec.n_worst is not None and sec.n_worst > len(sec.worst) else ""
    out = [f'<h3>{t("r.seg.worst.title")}{some}</h3><p class="note">{t("r.seg.worst.note")}</p>',
           '<div class="scroll"><table class="worst"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for w in sec.worst:
        seg = f'<td class="data">{_e(", ".join(w.segments))}</td>' if sec.by else ""
        out.append(f'<tr><td><code>{_e(w.query_id)}</code></td>{seg}<td class="data why" lang="en">{_e(w.why)}</td>'
                   f'<td class="data">{_e(w.question)}</td></tr>')
    out.append("</tbody></table></div>")
    return out


def _exam(sec: SegmentsSection, t: _T) -> List[str]:
    e = sec.exam
    if e is None:
        return []
    m = e.n_exact + e.n_near
    text = t("r.seg.exam", m=m, n=e.n_traced, qa=e.qa or "?", exact=e.n_exact, near=e.n_near,
             t=f"{e.threshold:g}" if e.threshold is not None else "?") if m else \
        t("r.seg.exam_none", n=e.n_traced, qa=e.qa or "?")
    return [f'<p class="note">{text}</p>', f'<p class="note sig data">{_e(e.signature or "")}</p>']


def section(sec: Optional[SegmentsSection], lang: Optional[str] = None) -> str:
    """The fragment (module docstring) in ``lang`` (``en``, ``ko``; ``None``: the current language,
    :func:`ragexam.report.i18n.current`); ``""`` without a section."""
    if sec is None:
        return ""
    with speaking(language(lang) if lang is not None else None) as spoken:
        return _section(sec, spoken.t)


def _section(sec: SegmentsSection, t: _T) -> str:
    title = t("r.seg.title", by=sec.by) if sec.by else t("r.seg.title_all")
    out = [f'<section id="segments"><h2>{title}</h2><p class="note">{t("r.seg.intro")}'
           + (" " + t("r.seg.baseline", name=sec.baseline) if sec.by and sec.baseline else "")
           + (" " + t("r.seg.overlap", by=sec.by) if sec.overlapping else "") + "</p>"]
    if sec.warnings:
        out.append(f'<div class="box warn"><b>{t("r.seg.warnings")}</b><ul class="data" lang="en">'
                   + "".join(f"<li>{_e(w)}</li>" for w in sec.warnings) + "</ul></div>")
    if not sec.segments:
        out.append(f'<p class="box">{t("r.seg.none")}</p></section>')
        return "".join(out)
    out += _table(sec, t) + _spreads(sec, t) + _comparisons(sec, t) + _exam(sec, t) + _worst(sec, t)
    if sec.notes:
        out.append(f'<h3>{t("r.seg.notes")}</h3><ul class="note data" lang="en">'
                   + "".join(f"<li>{_e(n)}</li>" for n in sec.notes) + "</ul>")
    out.append("</section>")
    return "".join(out)
