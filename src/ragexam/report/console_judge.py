"""Console tables of the LLM judge: means and pass rates with their intervals, coverage, repeats, the judge
beside the evidence, the estimates corrected by human labels, pairwise results, judge-check and the endpoint
probe.  Renders only: everything shown is in what it is given (``score.json``'s typed ``judge`` section,
:meth:`ragexam.metrics.judge.PairwiseRun.to_dict`, :meth:`ragexam.analysis.judging.check.JudgeCheck.to_dict`), so a
live result and a stored one look the same.

Tables of words (questions, reasons, reasoning) go through :func:`table_or_lines`: a table when it fits the
console, else one wrapped line per row, so a narrow terminal never breaks a word or a metric name in the middle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Union

from ragexam import fmt
from ragexam.report.i18n import Lang
from ragexam.storage.score_summary import HumanCorrected, JudgeSection, JudgeStat, JudgeTrust, VsEvidence

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["print_judge", "print_judge_vs_evidence", "print_pairwise", "print_judge_check", "print_probe",
           "print_ppi", "print_fitness", "print_trust", "trust_word", "table_or_lines"]


def table_or_lines(con: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
                   right: Sequence[str] = ()) -> None:
    """``rows`` under ``headers`` as a table with unbroken cells when it fits the console; else ``title`` and one
    line per row, ``header: value`` pairs that wrap between words (never inside one)."""
    from rich.table import Table
    from rich.text import Text

    from ragexam.report.tables import fits

    t = Table()
    for h in headers:
        t.add_column(h, justify="right" if h in right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*[Text(str(c)) for c in r])
    con.print(Text(title, style="table.title"))  # apart from the table: it wraps at the console's width
    if fits(con, t):
        con.print(t)
        return
    for r in rows:
        line = Text("  ")
        for i, (h, c) in enumerate((h, c) for h, c in zip(headers, r) if str(c).strip()):
            line.append(("   " if i else "") + (f"{h}: " if h else ""), style="dim")
            line.append(str(c))
        con.print(line)


def _counts(d: Optional[Mapping[str, Any]]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in (d or {}).items()) or "-"


def print_judge(judge: Union[JudgeSection, Mapping[str, Any]], con: Console,
                labels: Optional[Dict[str, str]] = None) -> None:
    """The judge table of a score (its :class:`~ragexam.storage.score_summary.JudgeSection`, or that section's
    JSON): per pipeline and metric the mean and its 95% CI, the pass rate and its 95% CI (metrics with a pass
    rule), judged/judgeable (and the answers the metric does not apply to, ``n/a``, counted apart and said below),
    labels and unjudged reasons; with repeats, the share of items whose verdict flipped
    and the ties; then usage, signatures and the agreement table.  ``labels``: the pipelines' short labels
    (``P1``...) when a legend was printed."""
    from rich.markup import escape

    from ragexam.metrics.judge.results import not_applicable_words
    from ragexam.report.tables import Column, pipeline_keys, pipeline_labels, print_fitted

    judge = JudgeSection.from_dict(judge, source="judge")
    repeat = int(judge.repeat or 1)
    labels = labels or pipeline_labels(list(judge.summary))
    weighted = any(s.scoring == "probability" for ms in judge.summary.values() for s in ms.values())
    cols = ["mean", "95% CI"] + (["written"] if weighted else []) + ["pass rate", "pass 95% CI", "coverage"]
    cols += [_EN.text("r.judge.col.trust")] if judge.trust else []
    if repeat > 1:
        cols += ["flipped", "ties"]
    cols += ["labels", "unjudged (reason: count)"]
    rows, metrics, values, sections, said, empty, inapplicable = [], [], [], [], [], [], []
    for p, ms in judge.summary.items():
        shown = 0
        for m, s in ms.items():
            inapplicable += [f"{labels.get(p, p)} {m}: {not_applicable_words(s)}"] if s.n_not_applicable else []
            if not s.n:  # nothing to judge (abstention on a set without out-of-corpus questions): no row of zeros
                empty.append(f"{labels.get(p, p)} {m}")
                continue
            rows.append((labels.get(p, "?"), p) if shown == 0 else None)
            shown += 1
            human = (judge.ppi.get(p) or {}).get(m)
            metrics.append([_metric_label(m, s, human)])
            values.append(_judge_cells(m, s, repeat, weighted, human, judge.trust.get(m) if judge.trust else False))
            if s.interval_note:
                said.append(f"{labels.get(p, p)} {m}: {s.interval_note}")
        if shown:
            sections.append(len(values) - 1)
    if values:
        print_fitted(con, title=f"LLM judge: {judge.model} at {judge.endpoint} (prompts: "
                                f"{judge.language}, repeat {repeat}); 95% CI: bootstrap over the judged answers, "
                                "pass rates Wilson's",
                     keys=pipeline_keys(rows, extra=[Column("metric", "left")], extra_cells=metrics),
                     value_columns=[Column(c, "left" if c in ("labels", "unjudged (reason: count)") else "right")
                                    for c in cols], values=values, sections=sections)
    if empty:
        con.print(f"nothing to judge (no answer of the kind the metric judges): {', '.join(empty)}",
                  highlight=False, markup=False, soft_wrap=True)
    if inapplicable:
        con.print("coverage is judged of judgeable answers; not applicable, counted apart: " + "; ".join(inapplicable),
                  highlight=False, markup=False, soft_wrap=True)
    if judge.ppi:
        con.print(_EN.text("r.judge.preferred_note") + " (the judge's own means: the table 'corrected by human "
                  "labels' below)", highlight=False, markup=False, soft_wrap=True)
    if weighted:
        con.print("probability-weighted means are named beside their metric (mean P(true): the judge's probability "
                  "of true; expected score: the 1-5 score weighted by the probability of each level); 'written' is "
                  "the mean of the scores the judge wrote, and the pass rate counts the written verdicts",
                  highlight=False, markup=False, soft_wrap=True)
    for line in said:
        con.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    rules = [f"{m}: {d.pass_rule}" for m, d in judge.definitions.items() if d is not None and d.pass_rule]
    if rules:
        con.print("pass rules: " + escape("; ".join(rules)), highlight=False, soft_wrap=True)
    u = judge.usage
    if u:
        con.print(f"judge calls this run: {u.get('calls')} ({u.get('requests')} HTTP requests), from cache: "
                  f"{u.get('cached')}; tokens: {u.get('prompt_tokens')} prompt + {u.get('completion_tokens')} "
                  f"completion; cost: {fmt.cost(u.get('cost_usd'))}", highlight=False, soft_wrap=True)
    for m, sig in judge.signatures.items():
        con.print(f"  {escape(m)}: {escape(str(sig))}", style="dim", highlight=False, soft_wrap=True)
    if judge.agreement:
        cols = ("metric", "units", "exact", "mean |diff|", "kappa", "kappa (quadratic)")
        table_or_lines(con, f"judge agreement with itself over {fmt.plural(repeat, 'repeat')}", cols,
                       [[m, a.n_units, fmt.num(a.exact), fmt.num(a.mean_abs_diff), fmt.num(a.kappa),
                         fmt.num(a.kappa_quadratic)] for m, a in judge.agreement.items()], right=cols[1:])
    print_judge_vs_evidence(judge.vs_evidence, con)
    print_ppi(judge.ppi, con, labels)
    print_trust(judge.trust, con)


#: the catalogue's English: the words the report uses too (:mod:`ragexam.report.strings`)
_EN = Lang("en")


def trust_word(verdict: str) -> str:
    """A trust verdict (:data:`~ragexam.storage.score_summary.TRUST_VERDICTS`) in a word or two."""
    return _EN.text(f"r.trust.{verdict}") if f"r.trust.{verdict}" in _EN.strings else verdict


def print_trust(trust: Mapping[str, JudgeTrust], con: Console) -> None:
    """How far each judged metric's judge was shown to separate good from bad: its verdict and sentence."""
    if not trust:
        return
    from rich.text import Text

    con.print(Text(_EN.text("r.judge.trust_title"), style="table.title"))
    for m, t in trust.items():
        con.print(f"  {m}: {trust_word(t.verdict)} -- {t.text}", highlight=False, markup=False, soft_wrap=True)
        if t.evidence is not None and t.check is not None and t.verdict == t.check.verdict:
            con.print(f"    beside the evidence of these answers: {t.evidence.text}", highlight=False, markup=False,
                      soft_wrap=True)
    if any(not t.gated for t in trust.values()):
        con.print("  a metric whose judge was not shown to separate is the judge's opinion, not a measurement: "
                  "`ragexam check` does not gate on it (a stronger --judge-model, or --trust-judge to gate anyway)",
                  highlight=False, markup=False, soft_wrap=True)


def _metric_label(metric: str, s: JudgeStat, human: Optional[HumanCorrected]) -> str:
    """The metric's cell: its name, what its mean is when not a plain mean, and which human estimate the row
    shows in place of the judge's own (:attr:`HumanCorrected.preferred`)."""
    parts = [s.value_name] if s.value_name != "mean" else []
    if human is not None:
        which = human.preferred[0]
        labels = fmt.plural(human.n_labelled, 'human label')
        parts.append(f"{human.on}: corrected by {labels}" if which == "corrected" else f"{human.on} of {labels} alone")
    return f"{metric} ({'; '.join(parts)})" if parts else str(metric)


def _judge_cells(metric: str, s: JudgeStat, repeat: int, weighted: bool, human: Optional[HumanCorrected] = None,
                 trust: Union[JudgeTrust, None, bool] = False) -> List[str]:
    """One metric's cells of the judge table: a human estimate (``human``) takes the place of the judge's mean or
    pass rate, whichever scale the labels are on; ``trust``: the metric's verdict (``None``: none recorded) when
    the section has any, ``False`` when it has none (no column)."""
    from ragexam.metrics.judge.registry import registered

    judged = f"{s.n_judged}/{s.n}" + (f" ({fmt.percent(s.coverage)})" if s.n else "") + \
        (f"; {s.n_not_applicable} n/a" if s.n_not_applicable else "")
    labs = _counts(s.labels)
    if s.average_mismatch:
        labs += f", avg mismatch: {s.average_mismatch}"
    if s.quoted is not None:  # supported by the quotation rule, not by the judge (docs/judge.md)
        what = getattr(registered().get(str(metric)), "unit_kind", None) or "units"
        labs += f", quoted: {s.quoted.units}/{s.quoted.of} {what}" if s.quoted.units else ""
    mean, ci, rate, rate_ci = human.in_place_of(s) if human is not None else (s.mean, s.ci95, s.pass_rate,
                                                                                s.pass_ci95)
    row = [fmt.num(mean), fmt.ci(ci)] + ([fmt.num(s.written_mean) if s.written_mean is not None else ""]
                                         if weighted else [])
    row += [fmt.num(rate), fmt.ci(rate_ci), judged]
    if trust is not False:
        row.append(trust_word(trust.verdict) if isinstance(trust, JudgeTrust) else "-")
    if repeat > 1:
        row += [f"{fmt.percent(s.flip_share)} of {s.n_repeated}", str(s.ties)]
    return row + [labs, _counts(s.unjudged)]


def print_judge_vs_evidence(vs: Mapping[str, Sequence[VsEvidence]], con: Console, *, ids: int = 6) -> None:
    """Judge metrics beside their evidence-based twins (the judge section's ``vs_evidence``)."""
    if not vs:
        return
    rows = []
    for p, comps in vs.items():
        for c in comps or []:
            dis = c.disagreements
            rows.append([p, f"{c.judge_metric} ({c.judge_value})", fmt.num(c.judge), str(c.evidence_metric),
                         fmt.num(c.evidence), c.n, fmt.percent(c.agree),
                         ", ".join(str(d.query_id) for d in dis[:ids]) + (" ..." if len(dis) > ids else "") or "-"])
    table_or_lines(con, "the judge beside the evidence (same contexts; no LLM for the evidence column)",
                   ("pipeline", "judge", "value", "evidence", "value ", "n", "agree", "disagreeing questions"), rows,
                   right=("value", "value ", "n", "agree"))


def _auc_ci(low: Any, high: Any) -> str:
    """A judge-check's AUC interval, each end rounded so it does not cross a verdict's boundary
    (:func:`ragexam.analysis.judging.check.auc_ci_text`)."""
    from ragexam.analysis.judging.check import auc_ci_text

    return auc_ci_text(float(low), float(high)) if fmt.is_number(low) and fmt.is_number(high) else ""


def ppi_caveats(e: HumanCorrected) -> List[str]:
    """What was done to a corrected estimate to keep it honest (:mod:`ragexam.stats.ppi`): clipped to the scale,
    its interval floored by Wilson's over the labels."""
    out = []
    if e.clipped and e.judge_mean is not None and e.correction is not None:
        raw = e.judge_mean + e.correction
        out.append(f"the judge's {e.on} {fmt.num(e.judge_mean)} plus the labels' correction "
                   f"{fmt.signed(e.correction)} is {fmt.num(raw)}, outside the scale: clipped to it")
    if e.floored:
        out.append(f"its interval is at least Wilson's over the {fmt.plural(e.n_labelled, 'label')} (too few labels, "
                   "or corrections without spread, to narrow it: no spread is not certainty)")
    return out


def print_ppi(ppi: Mapping[str, Mapping[str, HumanCorrected]], con: Console,
              labels: Optional[Dict[str, str]] = None) -> None:
    """Each judge mean beside its prediction-powered estimate from the human labels, and which to quote."""
    rows, quotes = [], []
    for p, by_metric in ppi.items():
        for m, e in (by_metric or {}).items():
            tag = (labels or {}).get(p, p)
            rows.append([tag, f"{m} ({e.on})", fmt.num(e.judge_mean), fmt.num(e.estimate), fmt.ci((e.low, e.high)),
                         fmt.num(e.labels_mean), fmt.ci((e.labels_low, e.labels_high)),
                         f"{e.n_labelled} of {e.n_all}"])
            quotes.append(f"  {tag} {m}: {e.quote}")
            quotes.extend(f"  {tag} {m}: {n}" for n in ppi_caveats(e))
    if not rows:
        return
    table_or_lines(con, "corrected by human labels (prediction-powered inference; 95% normal intervals)",
                   ("pipeline", "metric", "judge", "corrected", "95% CI", "labels only", "95% CI ", "labelled"),
                   rows, right=("judge", "corrected", "95% CI", "labels only", "95% CI ", "labelled"))
    for q in quotes:
        con.print(q, highlight=False, markup=False)


def print_pairwise(data: Mapping[str, Any], con: Console, *, list_n: int = 10) -> None:
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
        table_or_lines(con, "inconsistent pairs (the orders disagreed)", ("question", "order A,B said", "order B,A said"),
                       [[r.get("item_id"), r.get("winner_ab"), r.get("winner_ba")] for r in odd[:list_n]])
    if data.get("signature"):
        con.print(f"[dim]{escape(str(data['signature']))}[/dim]", highlight=False, soft_wrap=True)


def print_judge_check(data: Mapping[str, Any], con: Console) -> None:
    """A judge-check (:meth:`ragexam.analysis.judging.check.JudgeCheck.to_dict`): per metric and scoring the AUC
    with its interval, the AUC against each kind of negative, the score gap, the pairs ordered correctly and how
    many items were scored under that scoring -- no number where none was; then each verdict in words."""
    j = data.get("judge") or {}
    settings = data.get("settings") or {}
    ds = settings.get("dataset") or {}
    on = f"{ds.get('name')} ({ds.get('n')} questions, {ds.get('sha')})" if ds else settings.get("qa")
    con.print(f"judge-check: {j.get('model')} at {j.get('endpoint')} (prompts: {j.get('language')}) on {on}; "
              "the judge's own verdicts (quotation rule off)", highlight=False, markup=False, soft_wrap=True)
    rows, verdicts = [], []
    for m, mc in (data.get("metrics") or {}).items():
        for sc, sep in (mc.get("separation") or {}).items():
            a = sep.get("auc") or {}
            kinds = ", ".join(f"{k} {v:.2f}" for k, v in (sep.get("auc_by_negative") or {}).items())
            scored = sep.get("n_scored", mc.get("n_judged"))
            shown = bool(a) and bool(scored)
            rows.append([m, sc, fmt.num(a.get("auc"), 2) if shown else "-",
                         _auc_ci(a.get("low"), a.get("high")) if shown else "-", (kinds or "-") if shown else "-",
                         fmt.signed(sep.get("gap")) if shown else "-",
                         fmt.percent(sep.get("ordered")) if shown else "-",
                         f"{scored}/{sep.get('n_items', mc.get('n'))}", str(sep.get("n_questions", "-"))])
            verdicts.append(f"  {m} ({sc}): {sep.get('text')}")
        if mc.get("unjudged"):
            verdicts.append(f"  {m}: unjudged " + ", ".join(f"{k}: {v}" for k, v in mc["unjudged"].items()))
    table_or_lines(con, "does the judge separate good from bad? (ROC AUC; 95% CI: bootstrap over questions, never "
                        "narrower than Wilson's)",
                   ("metric", "scoring", "AUC", "95% CI", "AUC vs each negative", "gap", "ordered", "scored",
                    "questions"), rows, right=("AUC", "95% CI", "gap", "ordered", "scored", "questions"))
    for v in verdicts:
        con.print(v, highlight=False, markup=False)
    for n in data.get("notes") or []:
        con.print(f"note: {n}", highlight=False, markup=False)
    for m, sig in (j.get("signatures") or {}).items():
        con.print(f"  {m}: {sig}", style="dim", highlight=False, markup=False, soft_wrap=True)


def print_probe(data: Mapping[str, Any], con: Console) -> None:
    """What an endpoint supports (:class:`ragexam.llm.probe.ProbeResult`)."""
    rows = [[k, data.get(k)] for k in ("json_schema", "json_object", "logprobs", "top_logprobs", "seed")]
    when = "stored " + str(data.get("checked", ""))[:19] if data.get("cached") else \
        f"asked now ({fmt.plural(data.get('requests') or 0, 'request')})"
    table_or_lines(con, f"{data.get('model')} at {data.get('endpoint')} ({when})", ("feature", "support"), rows)
    for n in data.get("notes") or []:
        con.print(f"  {'' if n.startswith('logprobs: ') else 'refused: '}{n}", highlight=False, markup=False)
    scoring = "probability" if data.get("logprobs") == "yes" else "sample"
    con.print(f"the judge's --scoring auto uses {scoring} scores here", highlight=False, markup=False)


def print_fitness(data: Mapping[str, Any], con: Any) -> None:
    """A fitness probe (:meth:`ragexam.analysis.judging.fitness.Fitness.to_dict`): the endpoint, the judge-check of
    the sample, the generation's cost, then each job's verdict and the sentence that sums them up."""
    print_probe(data.get("probe") or {}, con)
    print_judge_check(data.get("judge_check") or {}, con)
    g = data.get("generation") or {}
    seconds = g.get("seconds")
    made = (g.get("calls") or 0) + (g.get("cached") or 0)
    con.print(f"generation: {g.get('kept', 0)} kept in {fmt.plural(made, 'call')}"
              f" ({g.get('cached') or 0} from the cache), {fmt.plural(g.get('requests') or 0, 'request')}"
              + (f", {fmt.num(seconds, 0)} s" if seconds is not None else ""), highlight=False, markup=False,
              soft_wrap=True)
    b = data.get("budget") or {}
    con.print(f"spent {fmt.plural(data.get('replies') or 0, 'model reply', 'model replies')} of at most "
              f"{b.get('most_replies')} announced", highlight=False, markup=False, soft_wrap=True)
    table_or_lines(con, "what this model is fit for here", ("job", "fit", "why"),
                   [[j.get("job"), {True: "yes", False: "no", None: "not shown"}[j.get("fit")], j.get("why")]
                    for j in data.get("jobs") or []])
    con.print(str(data.get("summary") or ""), highlight=False, markup=False, soft_wrap=True)
