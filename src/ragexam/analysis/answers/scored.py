"""What ``ragexam score`` computed: :class:`ScoreReport`, the rows with every verdict and the typed
:class:`~ragexam.storage.score_summary.ScoreSummary` made from them.

The summary's parts are computed here from a *segment* of rows -- today the rows of one pipeline (and of one
pipeline's question type): :func:`segment_result` (text metrics, ``ok_share``, judge means and pass rates with
their intervals and coverage), :func:`judge_stat`, :func:`vs_evidence`, :func:`human_corrected`.  The summarize
stage (:func:`ragexam.analysis.answers.stages.summarize`) assembles them into the summary.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.analysis.answers.diagnosis import Attribution
from ragexam.analysis.answers.options import check_min_coverage
from ragexam.analysis.answers.rows import EVIDENCE_TWINS, PASS_SUFFIX, AnswerRow
from ragexam.analysis.judging.agreement import RepeatAgreement
from ragexam.metrics.judge import Judge, JudgeRun, MetricSummary
from ragexam.metrics.judge.results import not_applicable_words
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.storage.runfolder import RunRow
from ragexam.storage.score_summary import (Coverage, Disagreement, HumanCorrected, JudgeSettings, ScoreResult,
                                           ScoreSettings, ScoreSummary, TextScores, VsEvidence)

__all__ = ["ScoreReport", "segments", "segment_result", "judge_stat", "vs_evidence", "human_corrected",
           "pass_metrics", "judge_settings", "HumanLabels"]

#: human labels of judged metrics, ``{metric: {item_id: label}}``
HumanLabels = Dict[str, Dict[str, object]]


def segments(rows: Sequence[AnswerRow]) -> Dict[str, List[AnswerRow]]:
    """The rows of each pipeline, pipelines in the rows' order (the summary's units)."""
    out: Dict[str, List[AnswerRow]] = {}
    for r in rows:
        out.setdefault(r.pipeline, []).append(r)
    return out


def _type(r: AnswerRow) -> str:
    return r.question.type or "(none)"


def pass_metrics(judge_run: Optional[JudgeRun], metrics: Sequence[str]) -> Tuple[str, ...]:
    """The judge metrics with a pass rule (their pass rate is ``<metric>_pass``)."""
    if judge_run is None:
        return ()
    return tuple(m for m in metrics if (d := judge_run.definition(m)) is not None and d.pass_rule is not None)


def judge_stat(rows: Sequence[AnswerRow], metric: str, seed: Optional[int], qtype: Optional[str] = None, *,
               definition: Optional[JudgeMetric] = None) -> MetricSummary:
    """The :class:`~ragexam.metrics.judge.MetricSummary` of ``metric`` over ``rows`` (of question type ``qtype``),
    with bootstrap intervals drawn with ``seed``; ``definition``: the metric judged (its scale, and what a
    probability mean is called), default the registered one of that name."""
    from ragexam.metrics.judge import summarize

    scores = [r.judge[metric] for r in rows if metric in r.judge and (qtype is None or _type(r) == qtype)]
    return summarize(scores, metric, seed=seed, definition=definition)


def segment_result(rows: Sequence[AnswerRow], text: TextScores, metrics: Sequence[str], pass_metrics: Sequence[str],
                   seed: Optional[int], definitions: Optional[Mapping[str, JudgeMetric]] = None) -> ScoreResult:
    """``results[pipeline]`` of a segment's rows: ``n`` the answerable questions with a text score; the corpus
    ``chrf`` and ``bleu`` and the mean ``rouge_l`` over them; ``ok_share``, the share of the *decided* rows whose
    stage is ok or abstained_ok (a row labelled unjudged -- no answer, no correctness source, the judge failed -- is
    neither ok nor not ok: :attr:`AnswerRow.ok`), None when no row was decided, with its coverage (decided of all
    rows); each judge metric's mean over its judged items and, for a metric with a pass rule, its pass rate
    ``<metric>_pass``, with their intervals (:func:`judge_stat`; ``definitions``: the judged metrics by name) and
    coverage."""
    values: Dict[str, Optional[float]] = {m: fmt.finite(getattr(text, m)) for m in ("chrf", "bleu", "rouge_l")}
    oks = [r.ok for r in rows if r.ok is not None]
    values["ok_share"] = (sum(oks) / len(oks)) if oks else None
    coverage: Dict[str, Coverage] = {"ok_share": Coverage(len(rows), len(oks))}
    ci95: Dict[str, Optional[Tuple[float, float]]] = {}
    for m in metrics:
        s = judge_stat(rows, m, seed, definition=(definitions or {}).get(m))
        values[m] = fmt.finite(s.mean)
        coverage[m] = Coverage(s.n, s.n_judged, s.n_not_applicable)
        if s.ci95 is not None:
            ci95[m] = (s.ci95[0], s.ci95[1])
        if m in pass_metrics:
            values[m + PASS_SUFFIX] = fmt.finite(s.pass_rate)
            coverage[m + PASS_SUFFIX] = Coverage(s.n, s.n_judged, s.n_not_applicable)
            if s.pass_ci95 is not None:
                ci95[m + PASS_SUFFIX] = (s.pass_ci95[0], s.pass_ci95[1])
    return ScoreResult(n=text.n, metrics=values, ci95=ci95, coverage=coverage)


def vs_evidence(rows: Sequence[AnswerRow], metrics: Sequence[str]) -> List[VsEvidence]:
    """Each judge metric that has an evidence-based twin (:data:`~ragexam.analysis.answers.rows.EVIDENCE_TWINS`)
    beside it, over the answers of ``rows`` where both have a value: ``n``, the judge's mean and the evidence mean,
    ``agree`` (share of answers on which both say the contexts are good, or both say they are not: values rounded
    to the nearest of 0/1), and the answers where the two differ most, largest gap first.  Read them: either the
    judge is wrong, or the evidence string is too narrow (another chunk answers too)."""
    out = []
    for m in metrics:
        if m not in EVIDENCE_TWINS:
            continue
        twin, how = EVIDENCE_TWINS[m]
        pairs = []
        for r in rows:
            sc = r.judge.get(m)
            if sc is None or not sc.judged or twin not in r.evidence:
                continue
            jv = float(sc.passed) if how == "passed" else float(sc.score)
            pairs.append((r.query_id, jv, float(r.evidence[twin])))  # type: ignore[arg-type]
        if not pairs:
            continue
        n = len(pairs)
        worst = sorted(pairs, key=lambda t: (-abs(t[1] - t[2]), t[0]))
        out.append(VsEvidence(judge_metric=m, judge_value="pass rate" if how == "passed" else "mean",
                              evidence_metric=twin, n=n, judge=sum(a for _, a, _ in pairs) / n,
                              evidence=sum(b for _, _, b in pairs) / n,
                              agree=sum(1 for _, a, b in pairs if (a >= 0.5) == (b >= 0.5)) / n,
                              disagreements=[Disagreement(q, a, b) for q, a, b in worst if abs(a - b) > 1e-12][:10]))
    return out


def human_corrected(rows: Sequence[AnswerRow], metric: str, defn: Optional[JudgeMetric],
                    labels: Mapping[str, object]) -> Optional[HumanCorrected]:
    """The judge mean of ``metric`` over ``rows`` corrected by the human labels (prediction-powered inference,
    :func:`ragexam.stats.ppi.ppi_mean`): the judge's value of every judged answer, and the (human, judge) pairs of
    the labelled ones -- on the scale the labels are on
    (:meth:`~ragexam.metrics.judge.metric.JudgeMetric.human_value`: a true/false label of faithfulness is compared
    with the judge's pass).  ``None`` with fewer than 2 labelled judged answers.  ``quote`` says which number to
    report."""
    from ragexam.stats.ppi import ppi_mean

    if not labels or defn is None:
        return None
    judged = [r for r in rows if metric in r.judge and r.judge[metric].judged]
    f_all = [defn.judge_value(r.judge[metric]) for r in judged]
    pairs = [(defn.judge_value(r.judge[metric]), defn.human_value(labels[r.item_id])) for r in judged
             if r.item_id in labels]
    if len(pairs) < 2 or any(v is None for v in f_all):
        return None
    low, high = (0.0, 1.0) if defn.human_on_pass else defn.score_range
    est = ppi_mean(f_all, [f for f, _ in pairs], [y for _, y in pairs], scale=(float(low), float(high)))
    scale = "pass rate" if defn.human_on_pass else "mean"
    unlabelled = sum(1 for r in rows if r.item_id in labels and not (metric in r.judge and r.judge[metric].judged))
    out = HumanCorrected(**asdict(est), signature=est.signature, metric=metric, on=scale, labelled_unjudged=unlabelled)
    out.quote = (f"quote the corrected {scale} {fmt.num(est.estimate)} [{fmt.ci((est.low, est.high), short=False)}]: "
                 f"the judge's {scale} corrected by {fmt.plural(est.n_labelled, 'human label')}"
                 if out.corrected_narrower else
                 f"quote the labels' own {scale} {fmt.num(est.labels_mean)} "
                 f"[{fmt.ci((est.labels_low, est.labels_high), short=False)}]: the judge does not narrow it")
    return out


@dataclass
class ScoreReport:
    """Everything ``ragexam score`` computed: every row with its verdicts, the live judge run and stage
    attribution, and :attr:`summary` (``score.json``, :meth:`to_dict`)."""

    rows: List[AnswerRow]
    summary: ScoreSummary
    attribution: Attribution
    judge_run: Optional[JudgeRun] = None
    judge_metrics: Tuple[str, ...] = ()
    agreement: Dict[str, RepeatAgreement] = field(default_factory=dict)
    seed: Optional[int] = None
    human: HumanLabels = field(default_factory=dict)

    # -- the summary's parts, by name -------------------------------------------------------------------------

    @property
    def settings(self) -> ScoreSettings:
        return self.summary.settings

    @property
    def notes(self) -> List[str]:
        return self.summary.notes

    @property
    def text(self) -> Dict[str, TextScores]:
        """Corpus text metrics per pipeline."""
        return self.summary.text

    @property
    def text_by_type(self) -> Dict[str, Dict[str, TextScores]]:
        """Corpus text metrics per pipeline and question type."""
        return self.summary.text_by_type

    @property
    def pipelines(self) -> List[str]:
        return list(dict.fromkeys(r.pipeline for r in self.rows))

    @property
    def pass_metrics(self) -> Tuple[str, ...]:
        """The judge metrics with a pass rule (their pass rate is ``<metric>_pass``)."""
        return pass_metrics(self.judge_run, self.judge_metrics)

    def judge_summary(self, pipeline: str, metric: str, qtype: Optional[str] = None) -> MetricSummary:
        """The :class:`~ragexam.metrics.judge.MetricSummary` of ``metric`` for ``pipeline`` (and question
        type ``qtype``), with bootstrap intervals drawn with the score's seed."""
        defn = self.judge_run.definition(metric) if self.judge_run is not None else None
        return judge_stat([r for r in self.rows if r.pipeline == pipeline], metric, self.seed, qtype, definition=defn)

    def ppi(self, pipeline: str, metric: str) -> Optional[Dict[str, object]]:
        """The JSON of the judge mean of ``metric`` for ``pipeline`` corrected by the human labels
        (:func:`human_corrected`), or ``None``."""
        ppi = self.summary.judge.ppi.get(pipeline, {}) if self.summary.judge is not None else {}
        return ppi[metric].to_dict() if metric in ppi else None

    def judge_vs_evidence(self) -> Dict[str, List[Dict[str, object]]]:
        """``{pipeline: [comparison]}`` (:func:`vs_evidence`), as JSON."""
        jd = self.summary.judge
        return {p: [c.to_dict() for c in comps] for p, comps in (jd.vs_evidence if jd is not None else {}).items()}

    def missing_answers(self) -> Dict[str, int]:
        return dict(self.summary.dataset.missing_answers)

    def results(self) -> Dict[str, ScoreResult]:
        """``{pipeline: results}`` (:func:`segment_result`)."""
        return self.summary.results

    def typed_rows(self) -> List[RunRow]:
        """Every row as :meth:`AnswerRow.typed_row` (what the history stores)."""
        return [r.typed_row(self.judge_metrics, self.pass_metrics) for r in self.rows]

    def coverage_failures(self, min_coverage: Optional[float] = None) -> List[str]:
        """Why a CI should fail this score: a judge metric whose coverage (judged / judgeable items: an answer the
        metric does not apply to, e.g. one that declines, is not judgeable) is below ``min_coverage`` (default: the ``min_coverage`` setting) for some pipeline, and -- always --
        a judge metric that judged none of a pipeline's items although there were some (e.g. ``no_contexts``
        for every answer: answers joined to a run without their pipeline), and a judge that judged nothing at
        all.  Empty when fine."""
        if self.judge_run is None:
            return []
        floor = self.settings.min_coverage if min_coverage is None else check_min_coverage(min_coverage)
        out = []
        total = judged = 0
        for p in self.pipelines:
            for m in self.judge_metrics:
                s = self.judge_summary(p, m)
                total += s.n
                judged += s.n_judged
                why = ", ".join(f"{k}: {v}" for k, v in s.unjudged.items())
                if s.n and not s.n_judged:
                    hint = ("; answers get contexts from their own 'contexts' field, or from --run DIR with "
                            "--pipeline NAME when they name no pipeline of a run of several") \
                        if "no_contexts" in s.unjudged else ""
                    out.append(f"{m} of {p!r}: judged 0 of {s.n} ({why}){hint}")
                elif floor is not None and s.n and s.n_judged / s.n < floor:
                    out.append(f"{m} of {p!r}: judged {s.n_judged} of {s.n} judgeable ({s.n_judged / s.n:.0%}), "
                               f"below --min-coverage {floor:g}" + (f"; {not_applicable_words(s)}, not counted"
                                                                   if s.n_not_applicable else ""))
        if total and not judged:
            out.insert(0, f"nothing was judged: 0 of {total} judgments succeeded (see the unjudged reasons)")
        return out

    def to_dict(self) -> Dict[str, object]:
        """``score.json``: the summary's JSON object."""
        return self.summary.to_dict()


def judge_settings(judge_run: Optional[JudgeRun], judge: Judge, metrics: Sequence[str], defs: Sequence[JudgeMetric],
                   repeat: int) -> JudgeSettings:
    """``settings.judge``: the judge's model and every setting of its calls."""
    return JudgeSettings(model=judge.model, endpoint=judge.endpoint, metrics=list(metrics), repeat=repeat,
                         temperature=judge.temperature, max_tokens=judge.max_tokens, seed=judge.seed,
                         max_attempts=judge.max_attempts,
                         scoring=dict(judge_run.scoring) if judge_run is not None else None,
                         rubrics=[d.source for d in defs if d.custom])
