"""A score's segments in HTML (``ragexam score --by``): one fragment for the static page, the run's report and
``ragexam serve``'s score page, in English or Korean.

:func:`section` renders a :class:`~ragexam.storage.score_summary.SegmentsSection`: the segments with their judge
metrics and the exam's evidence (mean, 95% interval, n; "too few" with the reason in its title), feedback, latency
and token percentiles, the comparisons with the baseline, the answers to read first and the exam matching.  Its
texts are :data:`TEXTS` (``key: (English, 한국어)``), which ``ragexam serve``'s catalogue includes
(:mod:`ragexam.serve.strings`), so its tests check them as they check every text of the pages; names, questions,
verdicts and notes computed in English are data (``class="data"``).

The page of a score without a run (production traces: ``score --by ... --report FILE``) is
:mod:`ragexam.report.score_page`.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

from ragexam import fmt
from ragexam.report.views import fmt_e as _e
from ragexam.storage.score_summary import JudgeStat, MeanStat, SegmentsSection, Spread

__all__ = ["TEXTS", "section", "SEGMENTS_CSS"]

#: every text of the fragment: ``key: (English, 한국어)``; ``{name}`` takes an escaped value
TEXTS: Dict[str, Tuple[str, str]] = {
    "seg.nav": ("Segments", "구간"),
    "seg.title": ("Segments by <code>{by}</code>", "<code>{by}</code>별 구간"),
    "seg.title_all": ("All answers", "전체 답변"),
    "seg.intro": ("Each segment's judge metrics over its judged answers (the mean, its 95% interval below, n judged), "
                  "the exam's evidence on the answers whose question is an exam question, feedback, latency and "
                  "tokens.", "구간마다 판정된 답변에 대한 심판 지표(평균, 그 아래 95% 구간, 판정한 답변 수), 시험 "
                  "문제와 같은 질문의 답변에 대해 시험 근거로 잰 결과, 피드백, 지연 시간과 토큰 수입니다."),
    "seg.baseline": ('Baseline: <b class="data">{name}</b>.', '기준 구간: <b class="data">{name}</b>.'),
    "seg.overlap": ("An answer is counted in every <code>{by}</code> it has: the segments overlap.",
                    "답변은 자기가 가진 <code>{by}</code>마다 모두 셉니다. 구간끼리 겹칩니다."),
    "seg.too_few": ("too few", "너무 적음"),
    "seg.n": ("n = {n}", "{n}개"),
    "seg.of": ("{k} of {n}", "{n}개 중 {k}개"),
    "seg.col.segment": ("segment", "구간"),
    "seg.col.answers": ("answers", "답변"),
    "seg.col.questions": ("questions", "질문"),
    "seg.col.failed": ("failed requests", "실패한 요청"),
    "seg.col.negative": ("negative feedback", "부정 피드백"),
    "seg.col.exam": ("exam: {metric}", "시험 근거: {metric}"),
    "seg.spread.title": ("Latency and tokens", "지연 시간과 토큰"),
    "seg.spread.note": ("p50 / p90 / p99 and the number of answers that recorded it. A percentile is shown only when "
                        "values lie above it: p90 needs 10 of them, p99 100.",
                        "p50 / p90 / p99와 값을 기록한 답변 수입니다. 백분위수는 그보다 큰 값이 있을 때만 보입니다. "
                        "p90은 10개, p99는 100개가 있어야 합니다."),
    "seg.col.latency": ("latency (ms)", "지연 시간 (ms)"),
    "seg.tokens.input": ("input tokens", "입력 토큰"),
    "seg.tokens.output": ("output tokens", "출력 토큰"),
    "seg.tokens.total": ("total tokens", "전체 토큰"),
    "seg.cmp.title": ("Against the baseline", "기준 구간과 비교"),
    "seg.cmp.note": ("B − A per metric: paired on the questions both segments asked when they share at least "
                     "{min_n}, otherwise unpaired on all their answers; p after Holm's correction over the {n} "
                     "comparisons.", "지표마다 B − A입니다. 두 구간이 같은 질문을 {min_n}개 이상 받았으면 그 질문으로 "
                     "짝지어 비교하고, 아니면 모든 답변을 짝짓지 않고 비교합니다. p는 비교 {n}개 전체에 Holm "
                     "보정을 한 값입니다."),
    "seg.col.metric": ("metric", "지표"),
    "seg.col.compared_on": ("compared on", "비교 방식"),
    "seg.col.diff": ("diff", "차이"),
    "seg.col.ci": ("95% CI", "95% 구간"),
    "seg.col.p": ("p (Holm)", "p (Holm 보정)"),
    "seg.col.verdict": ("verdict", "판정"),
    "seg.paired": ("paired, {n} questions", "짝지은 비교, 질문 {n}개"),
    "seg.left_out": ("; {n} answers of other questions left out", "; 다른 질문의 답변 {n}개는 빠짐"),
    "seg.unpaired": ("unpaired, {a} and {b} answers", "짝짓지 않은 비교, 답변 {a}개와 {b}개"),
    "seg.cmp_too_few": ("too few to compare", "비교하기에 너무 적음"),
    "seg.in_both": ("; {n} answers in both segments not compared", "; 두 구간에 모두 든 답변 {n}개는 비교하지 않음"),
    "seg.worst.title": ("Answers to read first", "먼저 읽을 답변"),
    "seg.worst.note": ("Negative feedback first, then failed requests, failed judge verdicts and the lowest judged "
                       "scores.", "부정 피드백, 실패한 요청, 통과하지 못한 심판 판정, 가장 낮은 판정 점수 순입니다."),
    "seg.col.answer_id": ("answer", "답변 ID"),
    "seg.col.why": ("why", "이유"),
    "seg.col.question": ("question", "질문"),
    "seg.exam": ("{m} of {n} traced answers ask a question of the exam <code>{qa}</code> ({exact} exact, {near} "
                 "near: cosine ≥ {t} with the same numbers); their contexts are also graded against the exam's "
                 "evidence (the exam columns).", "추적된 답변 {n}개 중 {m}개가 시험 <code>{qa}</code>의 질문입니다 "
                 "(같은 질문 {exact}개, 거의 같은 질문 {near}개: 코사인 {t} 이상이고 숫자가 같음). 이 답변의 "
                 "컨텍스트는 시험 근거로도 채점합니다 (시험 근거 열)."),
    "seg.exam_none": ("None of the {n} traced answers asks a question of the exam <code>{qa}</code>.",
                      "추적된 답변 {n}개 중 시험 <code>{qa}</code>의 질문은 없습니다."),
    "seg.warnings": ("The judge's own check", "심판 점검 결과"),
    "seg.notes": ("Notes", "참고"),
    "seg.none": ("No answers to segment.", "구간으로 나눌 답변이 없습니다."),
}

#: the fragment's own style (beside :data:`ragexam.report.sections.FRAGMENT_CSS`)
SEGMENTS_CSS = ".segments td.toofew{color:var(--muted)}.segments .why{max-width:40em}"


class _Texts:
    """The fragment's texts in one language: ``t(key, **values)``; ``english``: whether that language is English
    (a reason computed in English is shown as a tooltip only then)."""

    def __init__(self, lang: str) -> None:
        self.pick = 1 if lang == "ko" else 0
        self.english = self.pick == 0

    def __call__(self, key: str, **values: Any) -> str:
        safe = {k: v if isinstance(v, (int, float)) else _e(v) for k, v in values.items()}
        return TEXTS[key][self.pick].format(**safe)


def _stat(stat: Optional[Union[JudgeStat, MeanStat]], note: Optional[str], t: _Texts) -> str:
    n = 0 if stat is None else (stat.n_judged if isinstance(stat, JudgeStat) else stat.n)
    if stat is None or not n or stat.mean is None:
        return '<td class="num">–</td>'
    why = note or (stat.note if isinstance(stat, MeanStat) else None)
    title = f' title="{_e(why)}"' if why and t.english else ""
    ci = f'<span class="ci">{fmt.ci(stat.ci95, digits=3, short=False)}</span>' if stat.ci95 else \
        (f'<span class="ci"{title}>{t("seg.too_few") if why and why.startswith("n = ") else "–"}</span>'
         if why else "")
    return f'<td class="num"><span class="v">{fmt.num(stat.mean)}</span>{ci}<span class="ci">{t("seg.n", n=n)}</span></td>'


def _spread(s: Spread, t: _Texts) -> str:
    if not s.n:
        return '<td class="num">–</td>'
    cells = " / ".join(f"{v:,.0f}" if v is not None else "–" for v in (s.p50, s.p90, s.p99))
    return f'<td class="num">{cells}<span class="ci">{t("seg.n", n=s.n)}</span></td>'


def _table(sec: SegmentsSection, t: _Texts) -> List[str]:
    metrics = list(dict.fromkeys(m for s in sec.segments.values() for m, st in s.judge.items() if st.n))
    evidence = list(dict.fromkeys(m for s in sec.segments.values() for m in s.evidence))
    head = [t("seg.col.segment"), t("seg.col.answers"), t("seg.col.questions"), t("seg.col.failed"),
            t("seg.col.negative")] + [f'<span class="data">{_e(m)}</span>' for m in metrics] + \
        [t("seg.col.exam", metric=m) for m in evidence]
    out = ['<div class="scroll"><table class="metrics segments"><thead><tr>'
           + "".join(f"<th{' class=num' if i else ''}>{h}</th>" for i, h in enumerate(head)) + "</tr></thead><tbody>"]
    for s in sec.segments.values():
        few = f' <span class="tag">{t("seg.too_few")}</span>' if s.too_few else ""
        fb = t("seg.of", k=s.feedback.negative, n=s.feedback.n) if s.feedback.n else "–"
        row = [f'<td><span class="data">{_e(s.name)}</span>{few}</td>', f'<td class="num">{s.n_answers}</td>',
               f'<td class="num">{s.n_questions}</td>', f'<td class="num">{s.n_failed}</td>',
               f'<td class="num">{fb}</td>']
        row += [_stat(s.judge.get(m), s.interval_notes.get(m), t) for m in metrics]
        row += [_stat(s.evidence.get(m), None, t) for m in evidence]
        out.append("<tr>" + "".join(row) + "</tr>")
    out.append("</tbody></table></div>")
    return out


def _spreads(sec: SegmentsSection, t: _Texts) -> List[str]:
    kinds = list(dict.fromkeys(k for s in sec.segments.values() for k in s.tokens))
    if not any(s.latency_ms.n or s.tokens for s in sec.segments.values()):
        return []
    head = [t("seg.col.segment"), t("seg.col.latency")] + [t(f"seg.tokens.{k}") for k in kinds]
    out = [f'<h3>{t("seg.spread.title")}</h3><p class="note">{t("seg.spread.note")}</p>',
           '<div class="scroll"><table class="metrics"><thead><tr>'
           + "".join(f"<th{' class=num' if i else ''}>{h}</th>" for i, h in enumerate(head)) + "</tr></thead><tbody>"]
    for s in sec.segments.values():
        out.append(f'<tr><td><span class="data">{_e(s.name)}</span></td>{_spread(s.latency_ms, t)}'
                   + "".join(_spread(s.tokens.get(k, Spread()), t) for k in kinds) + "</tr>")
    out.append("</tbody></table></div>")
    return out


def _comparisons(sec: SegmentsSection, t: _Texts) -> List[str]:
    if not sec.comparisons:
        return []
    tested = sum(1 for c in sec.comparisons if c.design != "too_few")
    head = [t("seg.col.metric"), t("seg.col.segment"), t("seg.col.compared_on"), t("seg.col.diff"), t("seg.col.ci"),
            t("seg.col.p"), t("seg.col.verdict")]
    out = [f'<h3>{t("seg.cmp.title")}</h3><p class="note">{t("seg.cmp.note", min_n=sec.min_n, n=tested)}</p>',
           '<div class="scroll"><table class="metrics"><thead><tr>'
           + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    for c in sec.comparisons:
        if c.design == "paired":
            how = t("seg.paired", n=c.n) + (t("seg.left_out", n=c.left_out) if c.left_out else "")
        elif c.design == "unpaired":
            how = t("seg.unpaired", a=c.n_a, b=c.n_b)
        else:
            how = t("seg.cmp_too_few")
        how += t("seg.in_both", n=c.in_both) if c.in_both else ""
        out.append(f'<tr><td class="data">{_e(c.metric)}</td><td class="data">{_e(c.b)}</td><td>{how}</td>'
                   f'<td class="num">{fmt.signed(c.diff)}</td><td class="num">{fmt.signed_ci(c.ci95)}</td>'
                   f'<td class="num">{fmt.p_value(c.p_holm)}</td><td class="data" lang="en">{_e(c.verdict)}</td></tr>')
    out.append("</tbody></table></div>")
    return out


def _worst(sec: SegmentsSection, t: _Texts) -> List[str]:
    if not sec.worst:
        return []
    head = [t("seg.col.answer_id")] + ([t("seg.col.segment")] if sec.by else []) + [t("seg.col.why"),
                                                                                   t("seg.col.question")]
    out = [f'<h3>{t("seg.worst.title")}</h3><p class="note">{t("seg.worst.note")}</p>',
           '<div class="scroll"><table class="worst"><thead><tr>' + "".join(f"<th>{h}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for w in sec.worst:
        seg = f'<td class="data">{_e(", ".join(w.segments))}</td>' if sec.by else ""
        out.append(f'<tr><td><code>{_e(w.query_id)}</code></td>{seg}<td class="data why" lang="en">{_e(w.why)}</td>'
                   f'<td class="data">{_e(w.question)}</td></tr>')
    out.append("</tbody></table></div>")
    return out


def _exam(sec: SegmentsSection, t: _Texts) -> List[str]:
    e = sec.exam
    if e is None:
        return []
    m = e.n_exact + e.n_near
    text = t("seg.exam", m=m, n=e.n_traced, qa=e.qa or "?", exact=e.n_exact, near=e.n_near,
             t=f"{e.threshold:g}" if e.threshold is not None else "?") if m else \
        t("seg.exam_none", n=e.n_traced, qa=e.qa or "?")
    return [f'<p class="note">{text}</p>', f'<p class="note sig data">{_e(e.signature or "")}</p>']


def section(sec: Optional[SegmentsSection], lang: str = "en") -> str:
    """The fragment (module docstring) in ``lang`` (``en``, ``ko``); ``""`` without a section."""
    if sec is None:
        return ""
    t = _Texts(lang)
    title = t("seg.title", by=sec.by) if sec.by else t("seg.title_all")
    out = [f'<section id="segments"><h2>{title}</h2><p class="note">{t("seg.intro")}'
           + (" " + t("seg.baseline", name=sec.baseline) if sec.by and sec.baseline else "")
           + (" " + t("seg.overlap", by=sec.by) if sec.overlapping else "") + "</p>"]
    if sec.warnings:
        out.append(f'<div class="box warn"><b>{t("seg.warnings")}</b><ul class="data" lang="en">'
                   + "".join(f"<li>{_e(w)}</li>" for w in sec.warnings) + "</ul></div>")
    if not sec.segments:
        out.append(f'<p class="box">{t("seg.none")}</p></section>')
        return "".join(out)
    out += _table(sec, t) + _spreads(sec, t) + _comparisons(sec, t) + _exam(sec, t) + _worst(sec, t)
    if sec.notes:
        out.append(f'<h3>{t("seg.notes")}</h3><ul class="note data" lang="en">'
                   + "".join(f"<li>{_e(n)}</li>" for n in sec.notes) + "</ul>")
    out.append("</section>")
    return "".join(out)
