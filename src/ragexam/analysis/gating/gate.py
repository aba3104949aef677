"""``ragexam check RUN --min hit@5=0.8``: metric floors for CI, on runs and on scores.

A floor ``METRIC=VALUE`` passes when the metric's **95% CI lower bound** is at least ``VALUE``
(with ``point=True``: when its **mean** is).  Using the lower bound by default means a gate
passes only when the run is *confidently* above the floor, so a lucky small question set does
not pass a weak pipeline.  Each pipeline of the run is checked (or the one named).

``RUN`` is a retrieval run (a ``ragexam run --out`` folder or a recorded run) or a score (a
``ragexam score --out`` folder or a recorded score).  Where the interval comes from:

* the run's own ``ci95`` when it has one (retrieval runs; a score's judge means, bootstrapped over the judged items
  with the same seed and resamples as below, and pass rates ``<metric>_pass``, Wilson's over the judged items);
* otherwise a percentile bootstrap over the per-question (per-answer) values, with the run's
  ``seed`` and ``n_resamples`` (default 12345 and 2000), :mod:`ragexam.stats.bootstrap`:

  - a **mean** (retrieval metrics, ROUGE-L, ``ok_share``, judge metrics): the bootstrap of the
    mean of the values;
  - a **corpus statistic** (BLEU, chrF: computed from summed per-answer statistics, not a mean
    of sentence scores): segments are resampled, their summable statistics summed and the score
    recomputed (:func:`ragexam.stats.bootstrap_sums_ci`, what sacrebleu's paired bootstrap
    does), so the corpus score and its interval describe the same statistic.

Which values: a judge metric uses the **judged items only** (an unjudged item is never a number)
and the result reports the coverage (judged of judgeable); ``ok_share`` the **decided answers only** (a stage
label other than ``unjudged``) and reports how many were decided; text metrics use the answerable
questions, as the score's aggregates do.  A floor on a judge metric nothing was judged on fails, and one on
``ok_share`` when no answer was decided ("no value").

**A judge metric is gated only when its judge was shown to separate good from bad** on this question set: its
verdict in the score's ``judge.trust`` (:mod:`ragexam.analysis.answers.trusted`) is ``separates`` or ``weakly``
(:data:`~ragexam.storage.score_summary.GATED`).  Otherwise -- the judge does not separate, its scale is inverted,
its check had too few questions, it was checked on another set only, not checked, or no check can measure the
metric -- the floor fails saying why and naming the judge, and what to do: a stronger ``--judge-model``, or
``trust_judge`` (``--trust-judge``) to gate anyway.  And **"too few" is honoured**: a judge mean over fewer than
:data:`~ragexam.stats.proportion.MIN_FOR_INTERVAL` judged items has no interval (the score says "n = 4: too few for
an interval"), so a floor on its lower bound cannot pass (``point`` compares the mean).

**Human labels come first.**  When the score carries a human-corrected estimate of the metric for the pipeline
(``score --human``; ``judge.ppi``: a correction on the pass scale for ``<metric>_pass``, on the mean scale for
``<metric>``), the floor is checked on the number ``score`` says to quote
(:attr:`~ragexam.storage.score_summary.HumanCorrected.preferred`: the corrected mean, or the labels' own when the
judge does not narrow it) and its interval, and the line says so beside the judge's own mean and interval.  That
number rests on the labels, so a judge not shown to separate does not refuse it.  A score without a question set
(traced answers carrying their questions) had nothing to check its judge on: its fix is ``--trust-judge`` or
scoring again with ``--qa``/``--corpus``, never "without --no-judge-check".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.errors import InputError, MetricNameError, number_in
from ragexam.storage.runfolder import RunData
from ragexam.storage.score_summary import HumanCorrected, JudgeSection

__all__ = ["Floor", "GateResult", "parse_floor", "check_run", "CORPUS_METRICS"]

#: Score metrics computed from summed per-answer statistics (``RunRow.stats``), with the
#: vectorized function from summed statistics to the score (corpus BLEU: smooth exp, 4-gram, no
#: effective order; chrF: character 6-grams, beta 2), as in :mod:`ragexam.analysis.answers.scoring`.
CORPUS_METRICS = ("bleu", "chrf")
#: Score metrics aggregated over answerable questions only.
TEXT_METRICS = ("bleu", "chrf", "rouge_l")


@dataclass(frozen=True)
class Floor:
    """``metric`` must be at least ``minimum``."""

    metric: str
    minimum: float


@dataclass(frozen=True)
class GateResult:
    """One floor checked on one pipeline.  ``value`` is what was compared with the floor: the CI
    lower bound (``basis == "ci95 lower bound"``) or the mean (``basis == "mean"``); it is ``None``
    (and the floor fails) when nothing was judged.  ``n`` is the number of values the interval
    was computed from; ``judged``/``judgeable`` the coverage of a judge metric; ``interval`` says
    where the interval comes from (``run``, ``bootstrap of the mean (recorded)`` -- a score's judge
    mean, bootstrapped over the judged items when it was scored --, ``Wilson interval (recorded)`` -- a score's
    pass rate --, ``bootstrap of the mean``, ``corpus bootstrap``, or why there is none); ``refused`` why a judge
    metric's floor was not gated, ``judge_verdict`` its judge's trust verdict."""

    pipeline: str
    metric: str
    floor: float
    mean: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    value: Optional[float]
    basis: str
    passed: bool
    n: Optional[int] = None
    judged: Optional[int] = None
    judgeable: Optional[int] = None
    interval: Optional[str] = None
    #: why the floor was not gated (the judge not shown to separate), or why there is no lower bound (too few)
    refused: Optional[str] = None
    #: the judge's trust verdict of a judge metric (``separates``, ``weakly``, ...), when the score has one
    judge_verdict: Optional[str] = None
    #: gated on the score's human-corrected estimate (``score --human``): what it is, e.g. ``corrected by 6 human
    #: labels``; ``judge_low``/``judge_high`` the judge's own interval beside it
    human: Optional[str] = None
    judge_mean: Optional[float] = None
    judge_low: Optional[float] = None
    judge_high: Optional[float] = None

    def line(self) -> str:
        """``PASS hit@5 >= 0.8: ci95 lower bound 0.846 (mean 0.908, 95% CI 0.846–0.970) [pipeline]``."""
        verdict = "PASS" if self.passed else "FAIL"
        decided = self.metric == "ok_share"  # a share of the decided answers (coverage: decided of all)
        cover = ""
        if self.judgeable is not None:
            cover = f"; {'decided' if decided else 'judged'} {self.judged} of {self.judgeable}"
        if self.refused is not None and self.mean is not None:
            return (f"{verdict} {self.metric} >= {self.floor:g}: mean {self.mean:.3f}{cover}; {self.refused} "
                    f"[{self.pipeline}]")
        if self.human is not None:
            own = (f" [{self.judge_low:.3f}–{self.judge_high:.3f}]" if self.judge_low is not None and
                   self.judge_high is not None else "")
            mean = f" {self.judge_mean:.3f}" if self.judge_mean is not None else ""
            cover = f"; {self.human}, as `score --human` says to quote (judge alone{mean}{own}){cover}"
        elif self.judge_verdict == "weakly":
            cover += "; its judge separates only weakly"
        if self.value is None:
            what = self.interval if (self.interval or "").startswith("no interval") else \
                ("no value (no answer was decided)" if decided else "nothing was judged"
                 if self.judgeable is not None else "no value (nothing was scored)")
            return f"{verdict} {self.metric} >= {self.floor:g}: {what}{cover} [{self.pipeline}]"
        ci = (f", 95% CI {self.ci_low:.3f}–{self.ci_high:.3f}" if self.ci_low is not None and
              self.ci_high is not None else "")
        if self.basis == "mean":
            extra = (ci[2:] if ci else "no interval") + cover
        else:
            extra = f"mean {self.mean:.3f}{ci}{cover}"
        return (f"{verdict} {self.metric} >= {self.floor:g}: {self.basis} {self.value:.3f} "
                f"({extra}) [{self.pipeline}]")


def parse_floor(text: str) -> Floor:
    """``"hit@5=0.8"`` -> ``Floor("hit@5", 0.8)``; raises InputError naming the form expected."""
    if not isinstance(text, str) or text.count("=") != 1:
        raise InputError(f"received {text!r}; expected METRIC=VALUE, e.g. hit@5=0.8.", source="check",
                         field="--min")
    name, value = (s.strip() for s in text.split("="))
    if not name:
        raise InputError(f"received {text!r} with no metric name; expected METRIC=VALUE, e.g. hit@5=0.8.",
                         source="check", field="--min")
    try:
        x = float(value)
    except ValueError:
        raise InputError(f"received {value!r} as the floor of {name}; expected a number, e.g. {name}=0.8.",
                         source="check", field="--min") from None
    if not math.isfinite(x):
        raise InputError(f"received {value!r} as the floor of {name}; expected a finite number.",
                         source="check", field="--min")
    return Floor(name, x)


def _canonical(name: str, valid: Sequence[str]) -> Optional[str]:
    from ragexam.metrics.ranking.names import canonical

    return canonical(name, valid)



def _bounds(run: RunData, metric: str) -> Optional[Tuple[float, float]]:
    """The values ``metric`` can take: ``(0, 1)`` for a retrieval metric, a text metric and a pass rate (rates and
    shares), a judge metric's mean its scale's range (with 0-1 for its probability-weighted means); ``None`` when
    not known."""
    from ragexam.analysis.answers.rows import PASS_SUFFIX

    judge = _judge_of(run, metric)
    if judge is not None and judge[1] == metric:
        defn = judge[0].definitions.get(metric)
        scale = list(defn.score_range) if defn is not None and len(defn.score_range or []) == 2 else None
        return (min(0.0, scale[0]), max(1.0, scale[1])) if scale is not None else None
    if run.run is not None or metric in TEXT_METRICS or metric.endswith(PASS_SUFFIX):
        return 0.0, 1.0
    try:
        from ragexam.metrics.ranking.names import parse_metric

        parse_metric(metric)
    except (MetricNameError, ImportError):
        return None
    return 0.0, 1.0


def _check_floor(run: RunData, metric: str, floor: float) -> None:
    """A floor the metric cannot reach (``hit@5=80`` for a rate in [0, 1]) is an InputError naming ``--min``."""
    bounds = _bounds(run, metric)
    if bounds is None:
        return
    low, high = bounds
    hint = f", e.g. --min {metric}={floor / 100:g} for {floor:g}%" if high == 1.0 and 1 < floor <= 100 else ""
    number_in(floor, low, high, source="check", field="--min", what=f"a floor of {metric}",
              fix=f"Fix: {metric} lies from {low:g} to {high:g}; give its floor on that scale{hint}.")


def _results(run: RunData) -> Dict[str, Any]:
    """``{pipeline: {"metrics": ..., "ci95": ..., "coverage": ...}}`` of a run or score; a
    ``ragexam-score/1`` folder (no ``results``) is read from its ``text`` and ``judge`` sections."""
    if run.run is not None:
        return {p: {"n": r.n, "metrics": r.metrics, "ci95": r.ci95, "coverage": {},
                    "produced_nothing": r.produced_nothing} for p, r in run.run.results.items()}
    s = run.score
    if s.results:
        return {p: {"n": r.n, "metrics": r.metrics, "ci95": r.ci95,
                    "coverage": {m: {"n": c.n, "n_judged": c.n_judged} for m, c in r.coverage.items()}}
                for p, r in s.results.items()}
    judge = s.judge.summary if s.judge is not None else {}
    out: Dict[str, Any] = {}
    for p in list(s.text) + [p for p in judge if p not in s.text]:
        metrics = {m: getattr(s.text[p], m) for m in TEXT_METRICS if p in s.text}
        coverage = {}
        for m, st in (judge.get(p) or {}).items():
            metrics[m] = st.mean
            coverage[m] = {"n": st.n, "n_judged": st.n_judged}
        out[p] = {"metrics": metrics, "ci95": {}, "coverage": coverage}
    return out


def _corpus_statistic(metric: str) -> Callable[[Any], Any]:
    from ragexam.metrics.text import bleu_scores, chrf_scores

    return {"bleu": lambda sums: bleu_scores(sums), "chrf": lambda sums: chrf_scores(sums)}[metric]


def _interval(run: RunData, pipeline: str, metric: str, mean: Optional[float], point: bool
              ) -> Tuple[Optional[float], Optional[float], Optional[int], Optional[str]]:
    """``(low, high, n, how)`` bootstrapped from the rows; ``(None, None, n, None)`` when there is
    nothing to bootstrap and ``point`` (else InputError)."""
    from ragexam import stats

    score = run.is_score
    rows = run.rows(pipeline)
    if not score or metric in TEXT_METRICS:  # retrieval metrics and text metrics: answerable questions only
        rows = [r for r in rows if r.answerable]
    cfg = run.config
    n_resamples = int(cfg.get("n_resamples") or 2000)
    seed = int(cfg.get("seed") if isinstance(cfg.get("seed"), int) else stats.DEFAULT_SEED)
    if score and metric in CORPUS_METRICS:
        segs = [r.stats[metric] for r in rows if metric in r.stats]
        if segs:
            ci = stats.bootstrap_sums_ci(segs, _corpus_statistic(metric), name=f"corpus-{metric}",
                                         n_resamples=n_resamples, seed=seed)
            if mean is not None and not math.isclose(ci.mean, mean, rel_tol=1e-9, abs_tol=1e-12):
                raise InputError(f"the stored per-answer statistics give {metric} = {ci.mean:.6f} for {pipeline!r}, "
                                 f"but the score records {mean:.6f}; the record is inconsistent. Fix: score again.",
                                 source=run.source or "check", field="--min")
            return ci.low, ci.high, len(segs), "corpus bootstrap"
        if point:
            return None, None, None, None
        raise InputError(f"{metric!r} of {pipeline!r} is a corpus statistic (computed from summed per-answer "
                         "statistics), and this score does not store them (it was written by an older ragexam), so "
                         "no interval can be computed. Fix: score again, or use --point.",
                         source=run.source or "check", field="--min")
    legacy = f"{metric}_score"
    vals = []
    for r in rows:
        v = r.value(metric)
        if v is None and score:
            v = r.value(legacy)
        if v is not None:
            vals.append(v)
    if vals:
        ci = stats.bootstrap_ci(vals, n_resamples=n_resamples, seed=seed)
        return ci.low, ci.high, len(vals), "bootstrap of the mean"
    if point:
        return None, None, 0, None
    raise InputError(f"the run has no ci95 for {metric!r} of {pipeline!r} and no per-question values to "
                     "bootstrap one from. Fix: keep per_question.csv beside summary.json, or use --point.",
                     source="check", field="--min")


def _judge_of(run: RunData, metric: str) -> Optional[Tuple[JudgeSection, str]]:
    """``(judge section, judged metric)`` when ``metric`` (or the metric of a pass rate ``<metric>_pass``) is a
    judge metric of a score."""
    jd = run.score.judge if run.is_score and run.score is not None else None
    if jd is None:
        return None
    from ragexam.analysis.answers.rows import PASS_SUFFIX

    for m in jd.metrics:
        if metric in (m, m + PASS_SUFFIX):
            return jd, m
    return None


#: what to do about a judge metric that is not gated, by its verdict
_FIXES = {"does_not": "a stronger --judge-model, or --trust-judge to gate anyway",
          "inverted": "read the rubric and a few replies (a reversed scale or a swapped label), a stronger "
                      "--judge-model, or --trust-judge to gate anyway",
          "too_few": "score again with a larger --judge-check-sample (a verdict needs 10 questions), or --trust-judge "
                     "to gate anyway",
          "unknown": "score again with a larger --judge-check-sample, or --trust-judge to gate anyway",
          "other_set": "score again so a judge-check runs on this question set (without --no-judge-check; with "
                       "--run or --corpus for its contrast set), or --trust-judge to gate anyway",
          "unchecked": "score again with what the check needs (said above), or --trust-judge to gate anyway",
          "skipped": "score again without --no-judge-check, or --trust-judge to gate anyway",
          "no_contrast": "gate on a metric a judge-check can measure, or --trust-judge to gate anyway"}
#: the fix of a judge not shown to separate in a score without a question set (traced answers with their own
#: questions): no check could run on it, whatever a check elsewhere said
_NO_SET_FIX = ("no question set here: --trust-judge to gate on the judge's opinion anyway, or score again with --qa "
               "QA (a set with evidence and references) and --corpus (or --run) so a judge-check runs")


def _refusal(jd: JudgeSection, metric: str, no_set: bool = False) -> Tuple[Optional[str], Optional[str]]:
    """``(verdict, why not gated)`` of a judge metric (module docstring); ``why`` is ``None`` when it is gated.
    ``no_set``: the score had no question set, so the fix is ``--qa``/``--corpus`` or ``--trust-judge``."""
    t = jd.trust.get(metric)
    who = f"the judge {jd.model} at {jd.endpoint}"
    if t is None:
        return None, (f"not gated: the score records no verdict of whether {who} separates good from bad on "
                      f"{metric} (scored by an older ragexam); score again (it runs judge-check), or pass "
                      "--trust-judge to gate anyway")
    if t.gated:
        return t.verdict, None
    skipped = t.verdict == "unchecked" and "--no-judge-check" in t.text  # else its text says what the check lacked
    fix = _FIXES["skipped"] if skipped else _FIXES.get(t.verdict, _FIXES["unchecked"])
    if no_set and t.verdict in ("other_set", "unchecked"):
        fix = _NO_SET_FIX
    return t.verdict, f"not gated: {who} was not shown to separate good from bad on {metric} -- {t.text}; {fix}"


def _no_interval(res: Mapping[str, Any], metric: str) -> Optional[str]:
    """"n = 4: too few for an interval" of a run's metric whose recorded interval is none for that reason."""
    from ragexam.stats.proportion import too_few

    n = res.get("n")
    cis = res.get("ci95") or {}
    return too_few(n) if metric in cis and cis[metric] is None and isinstance(n, int) else None


def _too_few(jd: JudgeSection, pipeline: str, metric: str) -> Optional[str]:
    """The score's "n = 4: too few for an interval" of a judge mean without an interval."""
    st = (jd.summary.get(pipeline) or {}).get(metric)
    return st.interval_note if st is not None and st.ci95 is None and st.interval_note else None


def _recorded_how(metric: str) -> str:
    """Where a score's recorded interval of a judge metric comes from: Wilson's for a pass rate, the bootstrap of
    the mean for a mean (:func:`ragexam.metrics.judge.summarize`)."""
    from ragexam.analysis.answers.rows import PASS_SUFFIX

    return "Wilson interval (recorded)" if metric.endswith(PASS_SUFFIX) else "bootstrap of the mean (recorded)"


def _segment_results(run: RunData, segment: str) -> Dict[str, Any]:
    """``{"FIELD=NAME": {"metrics", "ci95", "coverage", "notes"}}`` of the score's segments (``score --by``):
    each judge metric's mean and, with a pass rule, its pass rate ``<metric>_pass``, the exam's evidence metrics,
    with the intervals the score recorded (``segment``: one segment's name, or ``all``)."""
    sec = run.score.segments if run.is_score and run.score is not None else None
    if sec is None or sec.by is None:
        raise InputError("--segment checks a segment of a score made with --by FIELD; this one has none. Fix: "
                         "`ragexam score ... --by model --out DIR`, then check DIR", source=run.source or "check",
                         field="--segment")
    if segment != "all" and segment not in sec.segments:
        raise InputError(f"received {segment!r}; expected a segment of --by {sec.by}: {', '.join(sec.segments)} "
                         "(or all)", source=run.source or "check", field="--segment")
    out: Dict[str, Any] = {}
    for name, s in sec.segments.items():
        if segment not in ("all", name):
            continue
        res: Dict[str, Dict[str, Any]] = {"metrics": {}, "ci95": {}, "coverage": {}, "notes": {}}
        for m, st in s.judge.items():
            parts = [(m, st.mean, st.ci95)] + ([(m + "_pass", st.pass_rate, st.pass_ci95)]
                                                if st.pass_rate is not None else [])
            for key, mean, ci in parts:
                res["metrics"][key], res["ci95"][key] = mean, ci
                res["coverage"][key] = {"n": st.n, "n_judged": st.n_judged}
                res["notes"][key] = s.interval_notes.get(m)
        for m, ev in s.evidence.items():
            res["metrics"][m], res["ci95"][m], res["notes"][m] = ev.mean, ev.ci95, ev.note
            res["coverage"][m] = {"n": ev.n, "n_judged": ev.n}
        out[f"{sec.by}={name}"] = res
    return out


def check_run(run: RunData, floors: Sequence[Floor], *, pipeline: Optional[str] = None,
              point: bool = False, segment: Optional[str] = None, trust_judge: bool = False) -> List[GateResult]:
    """Check every floor on every pipeline of ``run`` (or on ``pipeline`` only); with ``segment`` (a score made
    with ``--by``), on that segment (or every one: ``all``) instead, against the intervals the score recorded:
    a segment too small for an interval fails unless ``point``.  A judge metric is gated only when its judge was
    shown to separate, unless ``trust_judge`` (module docstring).

    :raises MetricNameError: a floor names a metric the run does not have (the message lists the
        valid ones); :raises InputError: an unknown pipeline, no floors, no interval can be computed
        (and ``point`` is False).
    """
    if not floors:
        raise InputError("received no floors; expected at least one --min METRIC=VALUE.", source="check",
                         field="--min")
    if segment is not None:
        return _check_results(run, _segment_results(run, segment), None, floors, point, trust_judge)
    results = _results(run)
    return [_with_human(run, g, point) for g in _check_results(run, results, pipeline, floors, point, trust_judge)]


def _human_of(run: RunData, pipeline: str, metric: str) -> Optional[HumanCorrected]:
    """The score's human-corrected estimate (``score --human``) of ``metric`` for ``pipeline``: a correction on the
    pass scale corrects the pass rate ``<metric>_pass``, one on the mean scale the mean."""
    from ragexam.analysis.answers.rows import PASS_SUFFIX

    judge = _judge_of(run, metric)
    if judge is None:
        return None
    hc = (judge[0].ppi.get(pipeline) or {}).get(judge[1])
    if hc is None or hc.estimate is None:
        return None
    return hc if metric == (judge[1] + PASS_SUFFIX if hc.on == "pass rate" else judge[1]) else None


def _with_human(run: RunData, g: GateResult, point: bool) -> GateResult:
    """``g`` gated on the score's human-corrected estimate when it has one (module docstring): the number `score
    --human` says to quote -- the judge's mean corrected by the labels, or the labels' own when the judge does not
    narrow it -- and its interval.  It rests on the labels, not on the judge's separating good from bad, so a judge
    not shown to separate does not refuse it."""
    hc = _human_of(run, g.pipeline, g.metric)
    if hc is None or (g.refused or "").startswith("the pipeline produced nothing"):
        return g
    kind, mean, (lo, hi) = hc.preferred  # type: ignore[misc]
    what = (f"corrected by {fmt.plural(hc.n_labelled, 'human label')}" if kind == "corrected" else
            f"the {fmt.plural(hc.n_labelled, 'human label')}' own {hc.on} (the judge does not narrow it)")
    value = mean if point else lo
    return replace(g, mean=mean, ci_low=lo, ci_high=hi, value=value, refused=None, human=what,
                   passed=value is not None and value >= g.floor, interval=f"human labels ({kind}, recorded)",
                   judge_mean=g.mean, judge_low=g.ci_low, judge_high=g.ci_high)


def _check_results(run: RunData, results: Dict[str, Any], pipeline: Optional[str], floors: Sequence[Floor],
                   point: bool, trust_judge: bool = False) -> List[GateResult]:
    """The floors on ``results`` (:func:`_results`, :func:`_segment_results`)."""
    pipes = [p for p in run.pipelines if p in results] or list(results)
    if pipeline is not None:
        if pipeline not in results:
            raise InputError(f"received {pipeline!r}, which is not a pipeline of this run; its pipelines: "
                             f"{', '.join(pipes)}.", source="check", field="--pipeline")
        pipes = [pipeline]
    out: List[GateResult] = []
    no_set = run.is_score and run.score is not None and run.score.settings.qa is None
    for p in pipes:
        res: Mapping[str, Any] = results.get(p) or {}
        metrics: Dict[str, Any] = res.get("metrics") or {}
        valid = list(metrics)
        for fl in floors:
            name = _canonical(fl.metric, valid)
            if name is None:
                raise MetricNameError(f"received {fl.metric!r}, which this run did not compute for {p!r}; "
                                      f"valid metrics: {', '.join(valid) or 'none'}.", source="check",
                                      field="--min")
            _check_floor(run, name, fl.minimum)
            mean = fmt.finite(metrics[name])
            cov = (res.get("coverage") or {}).get(name) or {}
            judged = cov.get("n_judged") if isinstance(cov.get("n_judged"), int) else None
            judgeable = cov.get("n") if isinstance(cov.get("n"), int) else None
            lo_hi = (res.get("ci95") or {}).get(name)
            judge = _judge_of(run, name)
            verdict, refused = _refusal(*judge, no_set) if judge is not None else (None, None)
            few = _too_few(judge[0], p, name) if judge is not None and judge[1] == name else _no_interval(res, name)
            if trust_judge:
                refused = None
            if res.get("produced_nothing"):  # its zeros are no result of the pipeline: a floor of 0 must not pass
                refused = f"the pipeline produced nothing ({res['produced_nothing']}): its values are no result"
            if mean is None:
                lo = hi = n = how = None
            elif isinstance(lo_hi, (list, tuple)) and len(lo_hi) == 2:
                lo, hi = float(lo_hi[0]), float(lo_hi[1])
                n, how = (judged, _recorded_how(name)) if judged is not None else (res.get("n"), "run")
            elif few is not None:
                lo = hi = None
                n, how = judged, few
                if not point:
                    refused = refused or (f"no 95% CI lower bound: {few}, so the floor cannot be met on it (--point "
                                          "compares the mean)")
            elif "notes" in res:  # a segment: its recorded interval, or none
                lo = hi = None
                n, how = judged, f"no interval: {(res['notes'].get(name) or 'none recorded')}"
            else:
                lo, hi, n, how = _interval(run, p, name, mean, point)
            value = mean if point else lo
            out.append(GateResult(pipeline=p, metric=name, floor=fl.minimum, mean=mean, ci_low=lo, ci_high=hi,
                                  value=value, basis="mean" if point else "ci95 lower bound",
                                  passed=refused is None and value is not None and value >= fl.minimum, n=n,
                                  judged=judged, judgeable=judgeable, interval=how, refused=refused,
                                  judge_verdict=verdict))
    return out
