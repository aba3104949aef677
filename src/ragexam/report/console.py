"""Console output of ``ragexam runs``, ``show``, ``compare`` and ``check`` (rich tables).

``show`` re-renders a stored run with :func:`ragexam.report.console_run.render_run` (the same
tables ``ragexam run`` printed); a stored *score* (kind ``score``) with :func:`print_score_summary`.

Every table stays readable at 80 columns (:mod:`ragexam.report.tables`): pipelines are named in
full when the table fits, else by the labels ``P1``, ``P2``, ... of a legend printed above it, and
value columns that do not fit go to a second block.  Lists whose entries are long texts (recorded
runs, flipped questions) are stacked, one entry per line group, instead of squeezed into columns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from ragexam import fmt
from ragexam.storage.score_summary import AttributionSection, ScoreResult, ScoreSummary
from ragexam.report.tables import Column, Keys, pipeline_keys, pipeline_labels, print_fitted, print_legend
from ragexam.report.terminal import PIPE_WIDTH, console  # noqa: F401  (the one console factory)

if TYPE_CHECKING:
    from ragexam.analysis.exam.compare import Flip, RunComparison

__all__ = ["console", "print_runs", "print_score_summary", "show_run", "print_comparison", "print_gate"]


def _labelled(names: Sequence[Optional[str]], labels: Dict[str, str]) -> List[Optional[tuple]]:
    return [None if n is None else (labels.get(n, "?"), n) for n in names]


def print_runs(entries: Sequence[Any], con=None, *, path: Optional[str] = None) -> None:
    """The list of ``ragexam runs``, one group of lines per record: id, date, kind and dataset, then
    the headline metric of each pipeline with the pipeline's full name (never cut)."""
    from rich.text import Text

    con = con or console()
    if not entries:
        con.print(Text(f"No recorded runs{f' in {path}' if path else ''}. `ragexam run` records every run."))
        return
    con.print(Text(f"Recorded runs{f' ({path})' if path else ''}: {fmt.plural(len(entries), 'record')}",
                   style="table.title"))
    for e in entries:
        date = (e.created or e.recorded or "")[:16].replace("T", " ")
        head = Text(str(e.run_id), style="bold")
        head.append(f"  {date}  {e.kind}  {e.dataset or fmt.MISSING}")
        relevance = getattr(e, "relevance", None)  # the grading rule (runs recorded before it was kept: none)
        if relevance:
            head.append(f"  relevance {relevance}")
        con.print(head, soft_wrap=True)
        metric = e.headline_metric or "headline"
        for p in e.pipelines:
            line = Text(f"    {metric} {fmt.num(e.headline.get(p))}  ")
            line.append(str(p))
            con.print(line, soft_wrap=True)
        if not e.pipelines:
            con.print(Text("    (no pipelines)", style="dim"))


def print_score_summary(summary: Union[ScoreSummary, Mapping[str, Any]], con=None) -> None:
    """A stored ``ragexam score`` (its :class:`~ragexam.storage.score_summary.ScoreSummary`, or that summary's
    JSON): text metrics per pipeline and question type, the judge means and pass rates with intervals and coverage
    (when a judge ran, :func:`ragexam.report.console_judge.print_judge`), and the stage-attribution tables."""
    from rich.text import Text

    s = ScoreSummary.from_dict(summary, source="score")
    con = con or console()
    settings = s.used_settings
    head = f"score {s.run_id or '(not recorded in the history)'} · {s.created}"
    head += f" · qa {settings.get('qa')} · answers {settings.get('answers')}"
    if s.scored_run or settings.get("run"):
        head += f" · run {s.scored_run or settings.get('run')}"
    con.print(Text(head))
    for note in s.notes:
        t = Text("note ", style="yellow")
        t.append(str(note))
        con.print(t)
    att = s.attribution
    names = list(dict.fromkeys([*s.text, *(s.judge.summary if s.judge is not None else {}),
                                *(att.by_type if att is not None else {})]))
    labels = pipeline_labels(names)
    if names:
        print_legend(con, labels, baseline=False)
        con.print()
    _print_score_text(s, labels, con)
    if s.judge is not None:
        from ragexam.report.console_judge import print_judge

        print_judge(s.judge, con, labels)
    if att is not None:
        _print_stage_tables(att, con)
    if s.segments is not None:
        from ragexam.report.console_segments import print_segments

        print_segments(s.segments, con)


def _ok_share(ok: Optional[float], result: Optional[ScoreResult]) -> str:
    """The cell of ``ok_share`` with its own n -- every decided answer, out-of-corpus questions too, not the row's
    answerable questions: ``0.361 (n 36)``, ``0.300 (n 30 decided of 36)`` when some were undecided (the share is of
    the decided ones); ``-`` when none was."""
    cov = result.coverage.get("ok_share") if result is not None else None
    if cov is None:
        return fmt.num(ok)
    if not cov.n_judged:
        return "-"
    return f"{fmt.num(ok)} (n {cov.n_judged}" + (f" decided of {cov.n})" if cov.n_judged < cov.n else ")")


def _print_score_text(s: ScoreSummary, labels: Dict[str, str], con) -> None:
    """The text metrics per pipeline (with ``ok_share``) and per question type, P1, P2... for the pipelines."""
    rows: List[Optional[str]] = []
    types, values = [], []
    sections: List[int] = []
    for p, a in s.text.items():
        result = s.results.get(p)
        ok = result.metrics.get("ok_share") if result is not None else None
        rows.append(p)
        types.append(["all"])
        values.append([str(a.n), fmt.num(a.bleu), fmt.num(a.chrf), fmt.num(a.rouge_l), _ok_share(ok, result)])
        for ty, b in (s.text_by_type.get(p) or {}).items():
            if b.n:
                rows.append(None)
                types.append([str(ty)])
                values.append([str(b.n), fmt.num(b.bleu), fmt.num(b.chrf), fmt.num(b.rouge_l), ""])
        sections.append(len(values) - 1)
    print_fitted(con, title="Text metrics vs ground_truth (n: answerable questions); ok share: of every answer "
                            "decided, its own n",
                 keys=pipeline_keys(_labelled(rows, labels), extra=[Column("type", "left")], extra_cells=types),
                 value_columns=[Column(c) for c in ("n", "BLEU", "chrF", "ROUGE-L", "ok share")], values=values,
                 sections=sections)


def _print_stage_tables(att: AttributionSection, con) -> None:
    """Per pipeline the label x question-type table with totals and the unjudged reasons, then the signature."""
    from rich.text import Text

    for p, mat in att.by_type.items():
        types_ = list(mat)
        labs = list(att.labels) or list(dict.fromkeys(lab for ty in types_ for lab in mat[ty]))
        counts = att.counts.get(p) or {}
        con.print(Text(f"Stage attribution: {p}", style="table.title"))
        print_fitted(con, title=None, keys=Keys([Column("label", "left")], [[lab] for lab in labs]),
                     value_columns=[*[Column(str(ty)) for ty in types_], Column("total")],
                     values=[[str(mat[ty].get(lab, 0)) for ty in types_] + [str(counts.get(lab, fmt.MISSING))]
                             for lab in labs])
        reasons = att.unjudged_reasons.get(p) or {}
        if reasons:
            con.print(Text("  unjudged: " + ", ".join(f"{k}: {v}" for k, v in reasons.items())))
    if att.signature:
        con.print(Text(f"signature: {att.signature}", style="dim"), soft_wrap=True)


def show_run(summary: Mapping[str, Any], con=None, *, folder: Optional[str] = None) -> None:
    """Re-render a stored run: the tables ``ragexam run`` printed, or for a stored score
    :func:`print_score_summary`; ``folder``: the run folder it was read from (``None``: from the history)."""
    from ragexam.report.console_run import Saved, render_run
    from ragexam.storage.runfolder import is_score

    con = con or console()
    if is_score(summary):
        print_score_summary(summary, con)
    else:
        render_run(summary, con, saved=Saved(folder, stored=True))


def print_comparison(cmp: "RunComparison", con=None, *, max_flips: int = 30) -> None:
    """The output of ``ragexam compare``: per pipeline pair, the metric table (B − A), every verdict in
    words, then the questions that flipped."""
    from rich.text import Text

    con = con or console()
    for side, rid in (("A", cmp.run_a), ("B", cmp.run_b)):
        t = Text(side, style="bold")
        t.append(f" = {rid}")
        con.print(t, soft_wrap=True)
    for note in cmp.notes:
        t = Text("note: ", style="yellow")
        t.append(str(note))
        con.print(t)
    for pc in cmp.pipelines:
        title = pc.pipeline_a if pc.pipeline_a == pc.pipeline_b else f"{pc.pipeline_a} (A) vs {pc.pipeline_b} (B)"
        shared = fmt.plural(pc.n_shared, "shared question")
        only = [f"{len(ids)} only in {side}" for side, ids in (("A", pc.only_a), ("B", pc.only_b)) if ids]
        if only:
            shared += f" ({', '.join(only)}: not compared)"
        values = []
        for m in pc.metrics:
            sig = m.p_holm < 0.05 and (m.ci_low > 0 or m.ci_high < 0)
            style = ("green" if m.diff > 0 else "red") if sig else ""
            values.append([fmt.num(m.mean_a), fmt.num(m.mean_b), Text(fmt.signed(m.diff), style=style),
                           fmt.signed_ci((m.ci_low, m.ci_high)), fmt.p_value(m.p_value), fmt.p_value(m.p_holm)])
        print_fitted(con, title=f"{title}: B − A on {shared}", keys=Keys([Column("metric", "left")],
                                                                         [[_compared_metric(m, cmp)]
                                                                          for m in pc.metrics]),
                     value_columns=[Column("A"), Column("B"), Column("diff"), Column("95% CI"), Column("p"),
                                    Column("p (Holm)")], values=values)
        con.print(f"Holm's correction over {fmt.plural(len(pc.metrics), 'metric')}; green/red: p (Holm) < 0.05 "
                  "and the CI excludes 0.")
        _verdicts(con, [(m.metric, m.verdict) for m in pc.metrics])
        flipped = [f"{len(fs)} {what}" for fs, what in ((pc.lost, "found → missed"), (pc.gained, "missed → found"))
                   if fs]
        con.print(Text(f"Flipped at k={pc.k}", style="bold").append(
            f": {', '.join(flipped) if flipped else 'no question flipped'}", style=""))
        for f in pc.flips[:max_flips]:
            _flip(con, f)
        if len(pc.flips) > max_flips:
            con.print(f"… and {len(pc.flips) - max_flips} more (use --json for all).")
        con.print(Text(pc.signature, style="dim"), soft_wrap=True)


def _compared_metric(diff: Any, cmp: Any) -> str:
    """A compared metric's cell: its name (two scores' ``chrf (mean per answer)``), the shared questions left out
    of it, and for a judged metric of two scores whether its judge
    separates on each side (``judge separates? A yes, B no``;
    :attr:`~ragexam.analysis.exam.compare.RunComparison.judge_trust`)."""
    from ragexam.analysis.answers.rows import PASS_SUFFIX
    from ragexam.report.console_judge import trust_word

    metric = diff.metric
    label = metric + (f" (on {diff.n}; {diff.left_out} left out)" if getattr(diff, "left_out", 0) else "")
    sides = getattr(cmp, "judge_trust", {}).get(metric[:-len(PASS_SUFFIX)] if metric.endswith(PASS_SUFFIX) else metric)
    if not sides:
        return label
    return f"{label} (judge separates? " + ", ".join(f"{k} {trust_word(v)}" for k, v in sides.items()) + ")"


def _verdicts(con, rows: Sequence[tuple]) -> None:
    """``metric  verdict`` lines, the verdict wrapping under itself."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for metric, verdict in rows:
        grid.add_row(Text(f"  {metric}", style="bold"), Text(str(verdict)))
    con.print(grid)


def _flip(con, f: "Flip") -> None:
    """One flipped question, stacked: id, direction, type and ranks; the question; the evidence; the top
    ids of A and B (a run's), each score's stage label and verdict of its answer (a score's); a row with nothing to
    show is left out."""
    from rich.table import Table
    from rich.text import Text

    style = "red" if f.direction == "found→missed" else "green"
    head = Text(f"  {f.query_id} ", style="bold")
    head.append(f.direction, style=style)
    ranks = ["not found" if r is None else str(r) for r in (f.first_rank_a, f.first_rank_b)]
    head.append(f"  ({f.type or fmt.MISSING}; first correct rank A {ranks[0]}, B {ranks[1]})")
    con.print(head)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column()
    if f.question:
        grid.add_row("    question", Text(f.question))
    if f.evidence:
        grid.add_row("    evidence", Text(" / ".join(f.evidence)))
    for side, top, said in (("A", f.top_a, f.verdict_a), ("B", f.top_b, f.verdict_b)):
        if top:
            grid.add_row(f"    top {side}", Text(", ".join(top[:5])))
        if said:
            grid.add_row(f"    answer {side}", Text(said))
    if grid.row_count:
        con.print(grid)


def print_gate(results: Sequence[Any], con=None) -> None:
    """One PASS/FAIL line per floor and pipeline, then the overall result."""
    from rich.text import Text

    con = con or console()
    for r in results:
        con.print(Text(r.line(), style="green" if r.passed else "red"))
    failed = sum(1 for r in results if not r.passed)
    con.print(f"{'FAILED' if failed else 'PASSED'}: {len(results) - failed} of "
              f"{fmt.plural(len(results), 'floor check')} passed.")
