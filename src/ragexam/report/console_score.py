"""Console rendering of the answer commands: ``score``, the judge dry run, ``answer`` and ``judge-agreement``.

Rendering only: each function takes what :mod:`ragexam.api` returned and prints it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from ragexam import fmt
from ragexam.analysis.answers.traffic import is_traced

if TYPE_CHECKING:
    from rich.console import Console

    from ragexam.analysis.answers.scored import ScoreReport
    from ragexam.storage.score_summary import AttributionSection, ScoreSummary

PathLike = Union[str, Path]

__all__ = ["print_plan", "print_score", "print_answer_outcome", "print_agreement"]


def print_plan(plan, console, what: str = "judge") -> None:
    """A judge dry run (:class:`~ragexam.metrics.judge.JudgePlan`): calls by metric, tokens and cost."""
    from rich.table import Table

    t = Table(title=f"{what} dry run: {plan.model} at {plan.endpoint} (prompts: {plan.language}, repeat {plan.repeat})")
    for col in ("metric", "judgments", "cached", "shared", "no call", "calls", "est. prompt tok",
                "est. completion tok"):
        t.add_column(col, justify="left" if col == "metric" else "right")
    for m, d in plan.by_metric.items():
        t.add_row(m, str(d["total"]), str(d["cached"]), str(d["shared"]), str(d["skipped"]), str(d["calls"]),
                  str(d["est_prompt_tokens"]), str(d["est_completion_tokens"]))
    t.add_row("total", str(plan.total), str(plan.cached), str(plan.shared), str(plan.skipped), str(plan.calls),
              str(plan.est_prompt_tokens), str(plan.est_completion_tokens), style="bold")
    console.print(t)
    if plan.skipped:
        console.print("no call: judgments settled without the judge (an input is missing, or every claim is quoted "
                      "word for word from a context)", highlight=False, markup=False, soft_wrap=True)
    console.print(f"scoring: {plan.scoring}", highlight=False, markup=False)
    console.print(f"calls to make: {plan.calls} (cached: {plan.cached}); estimated tokens: "
                  f"{plan.est_prompt_tokens} prompt + {plan.est_completion_tokens} completion "
                  f"(ceil(chars/3) of each prompt + a fixed allowance per reply); estimated cost: "
                  f"{fmt.cost(plan.est_cost)}. Nothing was sent.", highlight=False, soft_wrap=True)


def print_score_plan(plan, check, why: str, console) -> None:
    """``score --dry-run``: the judge's plan, then the judge-check's (``check``; ``None``: it sends nothing, ``why``
    says why) and the calls of both."""
    print_plan(plan, console)
    if check is None:
        console.print(f"judge-check: nothing to send -- {why}", highlight=False, markup=False, soft_wrap=True)
        return
    console.print(f"and the {why}:", highlight=False, markup=False, soft_wrap=True)
    print_plan(check, console, what="judge-check")
    console.print(f"in all: {plan.calls + check.calls} calls to make; estimated cost: "
                  f"{fmt.cost(_sum_cost(plan.est_cost, check.est_cost))}", highlight=False, markup=False,
                  soft_wrap=True)


def _sum_cost(a: object, b: object) -> object:
    """Two estimated costs added (an unknown one -- a string -- makes the sum unknown)."""
    return a + b if isinstance(a, (int, float)) and isinstance(b, (int, float)) else (a if isinstance(a, str) else b)


def print_score(report: ScoreReport, console: Console, *, list_n: int = 30, out: Optional[PathLike] = None) -> None:
    """The tables of a live :class:`~ragexam.analysis.answers.scored.ScoreReport` from its summary: notes, text
    metrics per pipeline and type, the judge's metrics with coverage and usage, its agreement with itself, stage
    attribution, and up to ``list_n`` questions that are not ok (from its rows; all of them are in ``out``'s
    per_answer.csv when the score was written there); then the segments (``--by``, traced answers:
    :mod:`ragexam.report.console_segments`)."""
    from rich.markup import escape

    s = report.summary
    for note in s.notes:
        console.print(f"[yellow]note[/] {escape(note)}", highlight=False, soft_wrap=True)
    missing = {p: n for p, n in s.dataset.missing_answers.items() if n}
    if missing:
        console.print(f"[yellow]questions without an answer[/] (listed as unjudged: no_answer): "
                      f"{escape(', '.join(f'{p}: {n}' for p, n in missing.items()))}", highlight=False, soft_wrap=True)
    if not any(a.n for a in s.text.values()):
        console.print("text metrics vs ground_truth: none (no answered question has a reference answer)",
                      highlight=False, soft_wrap=True)
    else:
        _print_text(s, console)
    if s.judge is not None:
        from ragexam.report.console_judge import print_judge

        print_judge(s.judge, console)
    _print_attribution(s.attribution, s.dataset.pipelines, console)
    if list_n and not any(is_traced(r.question) for r in report.rows):  # traced answers: the segments' list
        _print_questions(report, console, list_n, out)
    if s.segments is not None:
        from ragexam.report.console_segments import print_segments

        print_segments(s.segments, console, list_n=list_n)


def _print_text(s: ScoreSummary, console: Console) -> None:
    """Text metrics per pipeline and question type, then their signatures."""
    from rich.markup import escape
    from rich.table import Table

    t = Table(title="text metrics vs ground_truth (answerable questions)")
    for col in ("pipeline", "type", "n", "BLEU", "chrF", "ROUGE-L"):
        t.add_column(col, justify="left" if col in ("pipeline", "type") else "right")
    sigs: Dict[str, str] = {}
    for p in s.dataset.pipelines:
        a = s.text[p]
        t.add_row(escape(p), "all", str(a.n), fmt.num(a.bleu), fmt.num(a.chrf), fmt.num(a.rouge_l))
        sigs = a.signatures or sigs
        for ty, b in s.text_by_type[p].items():
            if b.n:
                t.add_row("", escape(ty), str(b.n), fmt.num(b.bleu), fmt.num(b.chrf), fmt.num(b.rouge_l))
    console.print(t)
    for name, sig in sigs.items():
        console.print(f"  {name}: {sig}", style="dim", highlight=False, soft_wrap=True)


def _print_attribution(att: AttributionSection, pipelines: List[str], console: Console) -> None:
    """Per pipeline the label x question-type table with totals, the unjudged reasons, then the signature."""
    from rich.markup import escape
    from rich.table import Table

    for p in pipelines:
        mat = att.by_type.get(p) or {}
        counts = att.counts.get(p) or {}
        reasons = att.unjudged_reasons.get(p) or {}
        if counts and all(n == 0 for lab, n in counts.items() if lab != "unjudged"):
            console.print(f"stage attribution: {escape(p)}: every one of its {counts.get('unjudged', 0)} answers "
                          "unjudged (" + escape(", ".join(f"{k}: {v}" for k, v in reasons.items())) + ")",
                          highlight=False, soft_wrap=True)
            continue
        t = Table(title=f"stage attribution: {p}")
        t.add_column("label")
        for ty in mat:
            t.add_column(escape(ty), justify="right")
        t.add_column("total", justify="right")
        for lab in att.labels:
            t.add_row(lab, *[str(mat[ty][lab]) for ty in mat], str(counts[lab]))
        console.print(t)
        if reasons:
            console.print("  unjudged: " + escape(", ".join(f"{k}: {v}" for k, v in reasons.items())),
                          highlight=False, soft_wrap=True)
    console.print(f"  signature: {att.signature}", style="dim", highlight=False, soft_wrap=True)


def _print_questions(report: ScoreReport, console: Console, list_n: int, out: Optional[PathLike]) -> None:
    """Up to ``list_n`` questions whose stage is not ok, with their verdict and the start of the answer; where all
    of them are (``out``'s per_answer.csv), or how to write them when they were not written."""
    from ragexam.report.console_judge import table_or_lines

    bad = [r for r in report.rows if r.stage.label not in ("ok", "abstained_ok")]
    if not bad:
        return
    has_note = any(r.record is not None and "note" in r.record.metadata for r in bad)
    rows = []
    for r in bad[:list_n]:
        s = r.stage
        verdict = s.to_record().verdict
        ans = r.answer or ""
        note = [str(r.record.metadata.get("note", "")) if r.record is not None else ""] if has_note else []
        rows.append([r.pipeline, r.query_id, r.question.type or "", s.label,
                     str(r.first_rank) if r.first_rank is not None else "-", verdict, *note,
                     ans[:80] + ("…" if len(ans) > 80 else "")])
    headers = ("pipeline", "query_id", "type", "label", "first_rank", "verdict") + (("note",) if has_note else ()) + \
        ("answer",)
    where = f"all in {Path(out) / 'per_answer.csv'}" if out is not None else "--out DIR writes all to per_answer.csv"
    undecided = sum(r.stage.label == "unjudged" for r in bad)  # nobody could tell: not counted as not ok
    what = "not ok" if not undecided else "undecided" if undecided == len(bad) else \
        f"not ok or undecided: {len(bad) - undecided} not ok, {undecided} undecided"
    table_or_lines(console, f"questions to read ({min(len(bad), list_n)} of {len(bad)} {what}; {where})", headers,
                   rows)


def print_answer_outcome(outcome: Any, console) -> None:
    """What ``ragexam answer`` did (or, on a dry run, would do)."""
    if outcome.note:
        console.print(f"note: {outcome.note}", highlight=False, markup=False, soft_wrap=True)
    if outcome.plan is not None:
        plan = outcome.plan
        console.print(f"answer dry run: {fmt.plural(plan['total'], 'answer')}, {plan['cached']} cached, "
                      f"{plan['shared']} share a prompt with another, calls to make: {plan['calls']}; estimated "
                      f"tokens: {plan['est_prompt_tokens']} prompt + {plan['est_completion_tokens']} completion "
                      f"(ceil(chars/3) + 250 per answer); estimated cost: {fmt.cost(outcome.cost)}. Nothing was sent.",
                      highlight=False, markup=False, soft_wrap=True)
        return
    u = outcome.usage
    failed = f" ({outcome.failed} failed, see their 'error')" if outcome.failed else ""
    console.print(f"Wrote {fmt.plural(len(outcome.records), 'answer')}{failed} to {outcome.out}. Calls: {u['calls']} (cached: {u['cached']}); tokens: {u['prompt_tokens']} "
                  f"prompt + {u['completion_tokens']} completion; cost: {fmt.cost(outcome.cost)}.",
                  highlight=False, markup=False, soft_wrap=True)


def print_agreement(outcome: Any, console) -> None:
    """The judge against human labels: one row per metric, then the largest disagreements to read."""
    from rich.markup import escape

    from ragexam.report.console_judge import table_or_lines

    jr = outcome.judge_run
    cols = ("metric", "labelled", "compared", "units", "exact", "kappa", "weighted kappa", "spearman", "mean |diff|",
            "unjudged")
    table_or_lines(console, f"judge {jr.model} vs human labels", cols, [
        [m, a.n_labelled, a.n_compared, a.n_units, fmt.num(a.exact), fmt.num(a.kappa),
         (fmt.num(a.kappa_weighted) + f" ({a.weights})") if a.weights else "-", fmt.num(a.spearman),
         fmt.num(a.mean_abs_diff), ", ".join(f"{k}: {v}" for k, v in a.unjudged.items()) or "-"]
        for m, a in outcome.results.items()], right=cols[1:-1])
    by_id = {r.item_id: r for r in outcome.rows}
    for m, a in outcome.results.items():
        for n in a.notes:
            console.print(f"[yellow]note[/] {m}: {escape(n)}", highlight=False, soft_wrap=True)
        if not a.disagreements:
            continue
        per_context = jr.definition(m) is not None and jr.definition(m).per_context
        table_or_lines(console, f"{m}: largest disagreements (judge vs human)",
                       ("query_id", "context", "judge", "human", "question / answer", "judge reasoning"),
                       [[by_id[d.item_id].query_id, str(d.unit + 1) if per_context else "", d.judge, d.human,
                         by_id[d.item_id].question.question[:60] + " / " + (by_id[d.item_id].answer or "")[:80],
                         (d.reasoning or "")[:160]] for d in a.disagreements])
    for m, s in jr.signatures.items():
        console.print(f"  {m}: {s}", style="dim", highlight=False, soft_wrap=True)
