"""Console output of ``ragexam runs``, ``show``, ``compare`` and ``check`` (rich tables).

``show`` re-renders a stored run with :func:`ragexam.report.console_run.render_run` (the same
tables ``ragexam run`` prints) when that module is present, else with :func:`print_summary`, a
compact metric table; a stored *score* (kind ``score``) with :func:`print_score_summary`.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence

__all__ = ["console", "print_runs", "print_summary", "print_score_summary", "show_run", "print_comparison",
           "print_gate"]


def console(stderr: bool = False):
    """A rich Console that does not wrap long lines into the next column (132 columns off a tty)."""
    import sys

    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 132
    return Console(file=stream, soft_wrap=False, width=width, highlight=False)


def _f(x: Any, digits: int = 3) -> str:
    return "—" if not isinstance(x, (int, float)) or isinstance(x, bool) else f"{x:.{digits}f}"


def _p(p: Any) -> str:
    if not isinstance(p, (int, float)):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def print_runs(entries: Sequence[Any], con=None, *, path: Optional[str] = None) -> None:
    """The table of ``ragexam runs``: id, date, kind, dataset, pipelines, headline metric."""
    from rich.markup import escape
    from rich.table import Table

    con = con or console()
    if not entries:
        con.print(f"No recorded runs{f' in {escape(path)}' if path else ''}. `ragexam run` records every run.")
        return
    table = Table(title=f"Recorded runs{f' ({escape(path)})' if path else ''}", title_justify="left")
    for col, kw in (("id", {"no_wrap": True}), ("date", {"no_wrap": True}), ("kind", {}), ("dataset", {}),
                    ("pipelines", {}), ("headline", {"justify": "right"})):
        table.add_column(col, **kw)
    for e in entries:
        date = (e.created or e.recorded or "")[:16].replace("T", " ")
        head = []
        for p in e.pipelines:
            v = e.headline.get(p)
            head.append(f"{_f(v)}" if v is not None else "—")
        metric = e.headline_metric or "—"
        table.add_row(escape(e.run_id), date, e.kind, escape(e.dataset or "—"),
                      "\n".join(escape(p) for p in e.pipelines),
                      "\n".join(f"{metric} {h}" for h in head) if head else "—")
    con.print(table)


def print_summary(summary: Mapping[str, Any], con=None) -> None:
    """A compact metric table of a run summary (means with 95% CIs) and its comparisons."""
    from rich.markup import escape
    from rich.table import Table

    from ragexam.storage.runfolder import dataset_label

    con = con or console()
    results = summary.get("results") or {}
    metrics: List[str] = []
    for res in results.values():
        for m in (res or {}).get("metrics") or {}:
            if m not in metrics:
                metrics.append(m)
    ds = summary.get("dataset") or {}
    con.print(f"run {escape(str(summary.get('run_id')))} · {escape(str(summary.get('created', '')))} · dataset "
              f"{escape(dataset_label(summary))} · {ds.get('n_scored', '?')} scored questions")
    table = Table(title="Metrics (mean, 95% CI)", title_justify="left")
    table.add_column("pipeline")
    table.add_column("n", justify="right")
    for m in metrics:
        table.add_column(m, justify="right")
    for p, res in results.items():
        cells = []
        for m in metrics:
            v = ((res or {}).get("metrics") or {}).get(m)
            ci = ((res or {}).get("ci95") or {}).get(m)
            ci_txt = f"\n[dim]{_f(ci[0], 2)}–{_f(ci[1], 2)}[/dim]" if isinstance(ci, (list, tuple)) and len(ci) == 2 else ""
            cells.append(f"{_f(v)}{ci_txt}")
        table.add_row(escape(p), str((res or {}).get("n", "—")), *cells)
    con.print(table)
    comps = [c for c in summary.get("comparisons") or [] if isinstance(c, Mapping)]
    if comps:
        t = Table(title="Against the baseline", title_justify="left")
        for col in ("pipeline", "metric", "diff", "95% CI", "p", "p (Holm)"):
            t.add_column(col, justify="right" if col not in ("pipeline", "metric") else "left")
        for c in comps:
            ci = c.get("ci95") or [None, None]
            t.add_row(escape(str(c.get("pipeline"))), escape(str(c.get("metric"))),
                      f"{c['diff']:+.3f}" if isinstance(c.get("diff"), (int, float)) else "—",
                      f"{_f(ci[0])} to {_f(ci[1])}", _p(c.get("p_value")), _p(c.get("p_holm")))
        con.print(t)


def print_score_summary(summary: Mapping[str, Any], con=None) -> None:
    """A stored ``ragexam score`` (see :mod:`ragexam.analysis.recording`): text metrics per pipeline and
    question type, the judge means with coverage (when a judge ran), and the stage-attribution tables."""
    from rich.markup import escape
    from rich.table import Table

    con = con or console()
    settings = summary.get("settings") or summary.get("config") or {}
    head = f"score {escape(str(summary.get('run_id')))} · {escape(str(summary.get('created', '')))}"
    head += f" · qa {escape(str(settings.get('qa')))} · answers {escape(str(settings.get('answers')))}"
    if summary.get("scored_run") or settings.get("run"):
        head += f" · run {escape(str(summary.get('scored_run') or settings.get('run')))}"
    con.print(head)
    for note in summary.get("notes") or []:
        con.print(f"[yellow]note[/yellow] {escape(str(note))}")
    text = summary.get("text") or {}
    by_type = summary.get("text_by_type") or {}
    results = summary.get("results") or {}
    t = Table(title="Text metrics vs ground_truth (answerable questions)", title_justify="left")
    for col in ("pipeline", "type", "n", "BLEU", "chrF", "ROUGE-L", "ok share"):
        t.add_column(col, justify="left" if col in ("pipeline", "type") else "right")
    for p, a in text.items():
        ok = (((results.get(p) or {}).get("metrics") or {}).get("ok_share"))
        t.add_row(escape(p), "all", str((a or {}).get("n", "—")), _f((a or {}).get("bleu")),
                  _f((a or {}).get("chrf")), _f((a or {}).get("rouge_l")), _f(ok))
        for ty, b in (by_type.get(p) or {}).items():
            if (b or {}).get("n"):
                t.add_row("", escape(str(ty)), str(b["n"]), _f(b.get("bleu")), _f(b.get("chrf")),
                          _f(b.get("rouge_l")), "")
    con.print(t)
    judge = summary.get("judge")
    if isinstance(judge, Mapping):
        t = Table(title=f"LLM judge: {escape(str(judge.get('model')))} (repeat {judge.get('repeat')})",
                  title_justify="left")
        for col in ("pipeline", "metric", "mean", "coverage"):
            t.add_column(col, justify="right" if col in ("mean", "coverage") else "left")
        for p, ms in (judge.get("summary") or {}).items():
            for m, s in (ms or {}).items():
                s = s or {}
                t.add_row(escape(p), escape(m), _f(s.get("mean")), f"{s.get('n_judged', '—')}/{s.get('n', '—')}")
        con.print(t)
    att = summary.get("attribution") or {}
    labels = list(att.get("labels") or [])
    for p, mat in (att.get("by_type") or {}).items():
        types = list(mat or {})
        labs = labels or list(dict.fromkeys(lab for ty in types for lab in (mat[ty] or {})))
        t = Table(title=f"Stage attribution: {escape(p)}", title_justify="left")
        t.add_column("label")
        for ty in types:
            t.add_column(escape(str(ty)), justify="right")
        t.add_column("total", justify="right")
        counts = (att.get("counts") or {}).get(p) or {}
        for lab in labs:
            t.add_row(escape(lab), *[str((mat[ty] or {}).get(lab, 0)) for ty in types], str(counts.get(lab, "—")))
        con.print(t)
        reasons = (att.get("unjudged_reasons") or {}).get(p) or {}
        if reasons:
            con.print("  unjudged: " + escape(", ".join(f"{k}: {v}" for k, v in reasons.items())))
    if att.get("signature"):
        con.print(f"[dim]signature: {escape(str(att['signature']))}[/dim]", soft_wrap=True)


def show_run(summary: Mapping[str, Any], con=None) -> None:
    """Re-render a stored run: the run's own console tables when available, else :func:`print_summary`;
    a stored score with :func:`print_score_summary`."""
    from ragexam.storage.runfolder import is_score

    con = con or console()
    if is_score(summary):
        print_score_summary(summary, con)
        return
    try:
        from ragexam.report.console_run import render_run
    except ImportError:
        render_run = None
    if render_run is not None:
        render_run(summary, con)
    else:
        print_summary(summary, con)


def print_comparison(cmp: Any, con=None, *, max_flips: int = 30) -> None:
    """The output of ``ragexam compare``."""
    from rich.markup import escape
    from rich.table import Table

    con = con or console()
    con.print(f"[bold]A[/bold] = {escape(cmp.run_a)}   [bold]B[/bold] = {escape(cmp.run_b)}")
    for note in cmp.notes:
        con.print(f"[yellow]note:[/yellow] {escape(note)}")
    for pc in cmp.pipelines:
        title = pc.pipeline_a if pc.pipeline_a == pc.pipeline_b else f"{pc.pipeline_a} (A) vs {pc.pipeline_b} (B)"
        shared = f"{pc.n_shared} shared questions"
        if pc.only_a or pc.only_b:
            shared += f" ({len(pc.only_a)} only in A, {len(pc.only_b)} only in B: not compared)"
        t = Table(title=f"{escape(title)}: B − A on {shared}", title_justify="left")
        for col in ("metric", "A", "B", "diff", "95% CI", "p", "p (Holm)", "verdict"):
            t.add_column(col, justify="left" if col in ("metric", "verdict") else "right",
                         overflow="fold", max_width=60 if col == "verdict" else None)
        for m in pc.metrics:
            sig = m.p_holm < 0.05 and (m.ci_low > 0 or m.ci_high < 0)
            style = ("green" if m.diff > 0 else "red") if sig else None
            diff = f"[{style}]{m.diff:+.3f}[/{style}]" if style else f"{m.diff:+.3f}"
            t.add_row(escape(m.metric), _f(m.mean_a), _f(m.mean_b), diff, f"{m.ci_low:+.3f} to {m.ci_high:+.3f}",
                      _p(m.p_value), _p(m.p_holm), escape(m.verdict))
        con.print(t)
        con.print(f"Holm's correction over {len(pc.metrics)} metrics; green/red: p (Holm) < 0.05 and the CI "
                  "excludes 0.")
        con.print(f"[bold]Flipped at k={pc.k}[/bold]: {len(pc.lost)} found → missed, "
                  f"{len(pc.gained)} missed → found")
        if pc.flips:
            ft = Table(show_lines=True)
            for col in ("question", "flip", "type", "rank A", "rank B", "evidence", "top ids A", "top ids B"):
                ft.add_column(col, overflow="fold", max_width=40 if col in ("evidence", "question") else 28)
            for f in pc.flips[:max_flips]:
                style = "red" if f.direction == "found→missed" else "green"
                q = f.query_id + (f"\n{f.question}" if f.question else "")
                ft.add_row(escape(q), f"[{style}]{f.direction}[/{style}]", escape(f.type or "—"),
                           str(f.first_rank_a) if f.first_rank_a is not None else "—",
                           str(f.first_rank_b) if f.first_rank_b is not None else "—",
                           escape(" / ".join(f.evidence) or "—"), escape(", ".join(f.top_a[:5])),
                           escape(", ".join(f.top_b[:5])))
            con.print(ft)
            if len(pc.flips) > max_flips:
                con.print(f"… and {len(pc.flips) - max_flips} more (use --json for all).")
        con.print(f"[dim]{escape(pc.signature)}[/dim]")


def print_gate(results: Sequence[Any], con=None) -> None:
    """One PASS/FAIL line per floor and pipeline, then the overall result."""
    from rich.markup import escape

    con = con or console()
    for r in results:
        style = "green" if r.passed else "red"
        con.print(f"[{style}]{escape(r.line())}[/{style}]")
    failed = sum(1 for r in results if not r.passed)
    con.print(f"{'FAILED' if failed else 'PASSED'}: {len(results) - failed} of {len(results)} floor check(s) passed.")
