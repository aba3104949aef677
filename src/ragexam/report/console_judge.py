"""Console tables of the LLM judge: means and pass rates with their intervals, coverage, repeats, the judge
beside the evidence, and pairwise results.  Renders only: everything shown is in the dicts it is given
(``score.json``'s ``judge`` section, :meth:`ragexam.metrics.judge.PairwiseRun.to_dict`), so a live score and
a stored one look the same.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from ragexam import fmt

__all__ = ["print_judge", "print_judge_vs_evidence", "print_pairwise"]


def _counts(d: Optional[Mapping[str, Any]]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in (d or {}).items()) or "-"


def print_judge(judge: Mapping[str, Any], con: Any, labels: Optional[Dict[str, str]] = None) -> None:
    """The judge table of a score: per pipeline and metric the mean and its 95% CI, the pass rate and its
    95% CI (metrics with a pass rule), judged/judgeable, labels and unjudged reasons; with repeats, the
    share of items whose verdict flipped and the ties; then usage, signatures and the agreement table.
    ``labels``: the pipelines' short labels (``P1``...) when a legend was printed."""
    from rich.markup import escape
    from rich.table import Table

    from ragexam.report.tables import Column, pipeline_keys, pipeline_labels, print_fitted

    repeat = int(judge.get("repeat") or 1)
    summary = judge.get("summary") or {}
    labels = labels or pipeline_labels(list(summary))
    cols = ["mean", "95% CI", "pass rate", "pass 95% CI", "coverage"]
    if repeat > 1:
        cols += ["flipped", "ties"]
    cols += ["labels", "unjudged (reason: count)"]
    rows, metrics, values, sections = [], [], [], []
    for p, ms in summary.items():
        for i, (m, s) in enumerate((ms or {}).items()):
            s = s or {}
            n = s.get("n") or 0
            judged = f"{s.get('n_judged', 0)}/{n}" + (f" ({fmt.percent(s.get('coverage'))})" if n else "")
            labs = _counts(s.get("labels"))
            if s.get("average_mismatch"):
                labs += f", avg mismatch: {s['average_mismatch']}"
            row = [fmt.num(s.get("mean")), fmt.ci(s.get("ci95")), fmt.num(s.get("pass_rate")),
                   fmt.ci(s.get("pass_ci95")), judged]
            if repeat > 1:
                row += [f"{fmt.percent(s.get('flip_share'))} of {s.get('n_repeated', 0)}", str(s.get("ties", 0))]
            row += [labs, _counts(s.get("unjudged"))]
            rows.append((labels.get(p, "?"), p) if i == 0 else None)
            metrics.append([str(m)])
            values.append(row)
        sections.append(len(values) - 1)
    print_fitted(con, title=f"LLM judge: {judge.get('model')} at {judge.get('endpoint')} (prompts: "
                            f"{judge.get('language')}, repeat {repeat}); 95% CI: bootstrap over the judged answers",
                 keys=pipeline_keys(rows, extra=[Column("metric", "left")], extra_cells=metrics),
                 value_columns=[Column(c, "left" if c in ("labels", "unjudged (reason: count)") else "right")
                                for c in cols], values=values, sections=sections)
    definitions = judge.get("definitions") or {}
    rules = [f"{m}: {d['pass']}" for m, d in definitions.items() if isinstance(d, Mapping) and d.get("pass")]
    if rules:
        con.print("pass rules: " + escape("; ".join(rules)), highlight=False, soft_wrap=True)
    u = judge.get("usage") or {}
    if u:
        con.print(f"judge calls this run: {u.get('calls')} ({u.get('requests')} HTTP requests), from cache: "
                  f"{u.get('cached')}; tokens: {u.get('prompt_tokens')} prompt + {u.get('completion_tokens')} "
                  f"completion; cost: {fmt.cost(u.get('cost_usd'))}", highlight=False, soft_wrap=True)
    for m, sig in (judge.get("signatures") or {}).items():
        con.print(f"  {escape(m)}: {escape(str(sig))}", style="dim", highlight=False, soft_wrap=True)
    agreement = judge.get("agreement") or {}
    if agreement:
        t = Table(title=f"judge agreement with itself over {fmt.plural(repeat, 'repeat')}", title_justify="left")
        for col in ("metric", "units", "exact", "mean |diff|", "kappa", "kappa (quadratic)"):
            t.add_column(col, justify="left" if col == "metric" else "right")
        for m, a in agreement.items():
            t.add_row(escape(m), str(a.get("n_units")), fmt.num(a.get("exact")), fmt.num(a.get("mean_abs_diff")),
                      fmt.num(a.get("kappa")), fmt.num(a.get("kappa_quadratic")))
        con.print(t)
    print_judge_vs_evidence(judge.get("vs_evidence") or {}, con)


def print_judge_vs_evidence(vs: Mapping[str, Any], con: Any, *, ids: int = 6) -> None:
    """Judge metrics beside their evidence-based twins (``ScoreReport.judge_vs_evidence``)."""
    from rich.markup import escape
    from rich.table import Table

    if not vs:
        return
    t = Table(title="the judge beside the evidence (same contexts; no LLM for the evidence column)",
              title_justify="left")
    for col in ("pipeline", "judge", "value", "evidence", "value ", "n", "agree", "disagreeing questions"):
        t.add_column(col, justify="right" if col in ("value", "value ", "n", "agree") else "left", overflow="fold")
    for p, comps in vs.items():
        for c in comps or []:
            dis = c.get("disagreements") or []
            t.add_row(escape(p), f"{escape(str(c.get('judge_metric')))} ({c.get('judge_value')})",
                      fmt.num(c.get("judge")), escape(str(c.get("evidence_metric"))), fmt.num(c.get("evidence")),
                      str(c.get("n")), fmt.percent(c.get("agree")),
                      escape(", ".join(str(d.get("query_id")) for d in dis[:ids]) + (" ..." if len(dis) > ids else "")
                             or "-"))
    con.print(t)


def print_pairwise(data: Mapping[str, Any], con: Any, *, list_n: int = 10) -> None:
    """A pairwise run (:meth:`ragexam.metrics.judge.PairwiseRun.to_dict`): outcome counts, B's preference and
    win rates with intervals, consistency and the position-bias share, then the inconsistent pairs."""
    from rich.markup import escape
    from rich.table import Table

    s = data.get("summary") or {}
    a, b = escape(str(data.get("a"))), escape(str(data.get("b")))
    con.print(f"[bold]A[/bold] = {a}   [bold]B[/bold] = {b}   judge {escape(str(data.get('model')))} at "
              f"{escape(str(data.get('endpoint')))}, both orders asked (a verdict counts when both agree)")
    for note in data.get("notes") or []:
        con.print(f"[yellow]note[/yellow] {escape(str(note))}", highlight=False, soft_wrap=True)
    counts = s.get("counts") or {}
    t = Table(title=f"{b} vs {a}: {s.get('n_judged', 0)} of {s.get('n', 0)} pairs judged", title_justify="left")
    for col in ("", "value", "95% CI"):
        t.add_column(col, justify="left" if not col else "right")
    t.add_row("B preferred (+1 B, -1 A, 0 tie)", fmt.signed(s.get("preference_b")), fmt.ci(s.get("preference_ci95")))
    t.add_row(f"B wins ({counts.get('B', 0)})", fmt.percent(s.get("win_rate_b")), fmt.ci(s.get("win_rate_b_ci95")))
    t.add_row(f"A wins ({counts.get('A', 0)})", fmt.percent(s.get("win_rate_a")), fmt.ci(s.get("win_rate_a_ci95")))
    t.add_row(f"ties ({counts.get('tie', 0)}), inconsistent ({counts.get('inconsistent', 0)})",
              f"consistent {fmt.percent(s.get('consistency'))}", "")
    t.add_row(f"first-shown answer won ({s.get('n_decisive_orders', 0)} decisive orders)",
              fmt.percent(s.get("first_position_share")), "")
    con.print(t)
    if s.get("unjudged"):
        con.print("unjudged: " + escape(_counts(s.get("unjudged"))), highlight=False, soft_wrap=True)
    odd = [r for r in data.get("results") or [] if r.get("outcome") == "inconsistent"]
    if odd and list_n:
        t = Table(title="inconsistent pairs (the orders disagreed)", title_justify="left")
        for col in ("question", "order A,B said", "order B,A said"):
            t.add_column(col)
        for r in odd[:list_n]:
            t.add_row(escape(str(r.get("item_id"))), str(r.get("winner_ab")), str(r.get("winner_ba")))
        con.print(t)
    if data.get("signature"):
        con.print(f"[dim]{escape(str(data['signature']))}[/dim]", highlight=False, soft_wrap=True)
