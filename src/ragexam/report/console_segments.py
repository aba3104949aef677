"""Console rendering of a score's segments (``ragexam score --by``, ``ragexam show`` of such a score).

Rendering only: :func:`print_segments` prints a :class:`~ragexam.storage.score_summary.SegmentsSection` -- the
segments with their judge metrics and the exam's evidence (each value with its interval and n, or why it has none),
latency and token percentiles, the comparisons with the baseline, the answers to read first and how traced
questions were matched to the exam.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from ragexam import fmt
from ragexam.storage.score_summary import JudgeStat, MeanStat, Segment, SegmentsSection, Spread

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

__all__ = ["print_segments", "stat_cell", "spread_cell", "title_of"]


def title_of(sec: SegmentsSection) -> str:
    """``Segments by model (3; baseline gpt-4o-mini)``, or ``All answers`` without ``--by``."""
    if sec.by is None:
        return "All answers"
    return (f"Segments by {sec.by} ({len(sec.segments)}; baseline {sec.baseline})"
            + ("; an answer is in every one it has" if sec.overlapping else ""))


def stat_cell(stat: Optional[object], note: Optional[str] = None) -> str:
    """``0.812 [.75–.88] n=40``, ``0.900 n=3 (too few)``, or ``-`` for nothing judged: a judge metric
    (:class:`JudgeStat`: its mean) or an evidence metric (:class:`MeanStat`)."""
    if stat is None:
        return fmt.MISSING
    n = stat.n_judged if isinstance(stat, JudgeStat) else stat.n
    if not n or stat.mean is None:
        return fmt.MISSING
    ci = f" [{fmt.ci(stat.ci95)}]" if stat.ci95 else ""
    why = note or (stat.note if isinstance(stat, MeanStat) else None)
    short = " (too few)" if why and why.startswith("n = ") else (" (all equal)" if why else "")
    return f"{fmt.num(stat.mean)}{ci} n={n}{short}"


def spread_cell(s: Spread) -> str:
    """``812 / 1,930 / - (n=40)``: p50 / p90 / p99 (``-``: too few values for it), or ``-`` with none."""
    if not s.n:
        return fmt.MISSING
    return " / ".join(f"{v:,.0f}" if v is not None else fmt.MISSING for v in (s.p50, s.p90, s.p99)) + f" (n={s.n})"


def _metrics(sec: SegmentsSection) -> List[str]:
    """The judge metrics some segment had answers for (abstention judges out-of-corpus questions only)."""
    return list(dict.fromkeys(m for s in sec.segments.values() for m, st in s.judge.items() if st.n))


def _segment_table(sec: SegmentsSection, con: "Console") -> None:
    from ragexam.report.tables import Column, Keys, print_fitted

    metrics = _metrics(sec)
    evidence = list(dict.fromkeys(m for s in sec.segments.values() for m in s.evidence))
    names = list(sec.segments)

    def cells(s: Segment) -> List[str]:
        fb = f"{s.feedback.negative} of {s.feedback.n}" if s.feedback.n else fmt.MISSING
        return [f"{s.n_answers}{' (too few)' if s.too_few else ''}", str(s.n_questions), str(s.n_failed), fb,
                *(stat_cell(s.judge.get(m), s.interval_notes.get(m)) for m in metrics),
                *(stat_cell(s.evidence.get(m)) for m in evidence)]
    title = title_of(sec) + (": answers, failed requests, feedback and judge metrics (mean [95% CI] n judged)"
                             if metrics else ": answers, failed requests and feedback (no judge metric)")
    print_fitted(con, title=title,
                 keys=Keys([Column("segment", "left")], [[n + (" *" if n == sec.baseline and sec.by else "")]
                                                         for n in names]),
                 value_columns=[Column("answers"), Column("questions"), Column("failed requests"),
                                Column("thumbs-down"),
                                *(Column(m) for m in metrics), *(Column(f"exam {m}") for m in evidence)],
                 values=[cells(sec.segments[n]) for n in names])
    kinds = list(dict.fromkeys(k for s in sec.segments.values() for k in s.tokens))
    if any(s.latency_ms.n or s.tokens for s in sec.segments.values()):
        print_fitted(con, title="Latency (ms) and tokens: p50 / p90 / p99 (n); '-': too few values for it "
                                "(p50 needs 2, p90 10, p99 100)",
                     keys=Keys([Column("segment", "left")], [[n] for n in names]),
                     value_columns=[Column("latency ms"), *(Column(f"{k} tokens") for k in kinds)],
                     values=[[spread_cell(s.latency_ms), *(spread_cell(s.tokens.get(k, Spread())) for k in kinds)]
                             for s in sec.segments.values()])


def _comparisons(sec: SegmentsSection, con: "Console") -> None:
    from ragexam.report.console_judge import table_or_lines

    if not sec.comparisons:
        return
    rows = []
    for c in sec.comparisons:
        n = (f"paired, {c.n} questions" + (f" ({fmt.plural(c.left_out, 'answer')} of others left out)"
                                           if c.left_out else "")
             if c.design == "paired" else f"unpaired, {c.n_a} and {c.n_b} answers" if c.design == "unpaired"
             else "too few") + (f"; {c.in_both} answers in both not compared" if c.in_both else "")
        rows.append([c.metric, c.b, n, fmt.signed(c.diff), fmt.signed_ci(c.ci95), fmt.p_value(c.p_holm),
                     c.reading or c.verdict])
    table_or_lines(con, f"Each segment against the baseline {sec.baseline} (B − A; p after Holm over all "
                        f"{sum(1 for c in sec.comparisons if c.design != 'too_few')} comparisons)",
                   ("metric", "segment", "compared on", "diff", "95% CI", "p Holm", "reading"), rows,
                   right=("diff", "p Holm"))


def _worst(sec: SegmentsSection, con: "Console", list_n: int) -> None:
    from ragexam.report.console_judge import table_or_lines

    shown = sec.worst[:list_n]
    if not shown:
        return
    rows = [[w.query_id, ", ".join(w.segments), w.why, w.question[:80] + ("…" if len(w.question) > 80 else "")]
            for w in shown]
    total = sec.n_worst if sec.n_worst is not None else len(sec.worst)
    kept = f"; score.json keeps the first {len(sec.worst)}" if list_n > len(sec.worst) and total > len(sec.worst) \
        else ""
    table_or_lines(con, f"Answers to read first ({len(shown)} of {total}{kept}; negative feedback, "
                        "failed requests, failed verdicts, lowest judged scores)",
                   ("answer", "segment" if sec.by else "", "why", "question"), rows)


def _exam(sec: SegmentsSection, con: "Console") -> None:
    from rich.text import Text

    e = sec.exam
    if e is None:
        return
    matched = e.n_exact + e.n_near
    line = (f"Exam questions: {matched} of {fmt.plural(e.n_traced, 'traced answer')} ask a question of {e.qa}"
            + (f" ({e.n_exact} exact, {e.n_near} near: cosine >= {e.threshold:g} with the same numbers)"
               if matched else "") + "; their contexts are graded against the exam's evidence (exam columns)")
    con.print(Text(line), soft_wrap=True)
    if e.signature:
        con.print(Text(f"  {e.signature}", style="dim"), soft_wrap=True)


def print_segments(sec: SegmentsSection, con: "Console", *, list_n: int = 20) -> None:
    """The section (module docstring); ``list_n``: how many answers to read first to list (0: none)."""
    from rich.text import Text

    for n in sec.notes:  # the judge-check warnings are the score's notes, printed with them
        con.print(Text.assemble(("note ", "yellow"), n), soft_wrap=True)
    if not sec.segments:
        con.print(Text("No answers to segment."))
        return
    _segment_table(sec, con)
    _comparisons(sec, con)
    _exam(sec, con)
    if list_n:
        _worst(sec, con, list_n)
