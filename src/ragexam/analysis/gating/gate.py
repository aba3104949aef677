"""``ragexam check RUN --min hit@5=0.8``: metric floors for CI, on runs and on scores.

A floor ``METRIC=VALUE`` passes when the metric's **95% CI lower bound** is at least ``VALUE``
(with ``point=True``: when its **mean** is).  Using the lower bound by default means a gate
passes only when the run is *confidently* above the floor, so a lucky small question set does
not pass a weak pipeline.  Each pipeline of the run is checked (or the one named).

``RUN`` is a retrieval run (a ``ragexam run --out`` folder or a recorded run) or a score (a
``ragexam score --out`` folder or a recorded score).  Where the interval comes from:

* the run's own ``ci95`` when it has one (retrieval runs; a score's judge metrics and pass rates
  ``<metric>_pass``, bootstrapped over the judged items with the same seed and resamples as below);
* otherwise a percentile bootstrap over the per-question (per-answer) values, with the run's
  ``seed`` and ``n_resamples`` (default 12345 and 2000), :mod:`ragexam.stats.bootstrap`:

  - a **mean** (retrieval metrics, ROUGE-L, ``ok_share``, judge metrics): the bootstrap of the
    mean of the values;
  - a **corpus statistic** (BLEU, chrF: computed from summed per-answer statistics, not a mean
    of sentence scores): segments are resampled, their summable statistics summed and the score
    recomputed (:func:`ragexam.stats.bootstrap_sums_ci`, what sacrebleu's paired bootstrap
    does), so the corpus score and its interval describe the same statistic.

Which values: a judge metric uses the **judged items only** (an unjudged item is never a number)
and the result reports the coverage (judged of judgeable); text metrics use the answerable
questions, as the score's aggregates do.  A floor on a judge metric nothing was judged on fails.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam.errors import InputError, MetricNameError
from ragexam.storage.runfolder import RunData

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
    means and pass rates, bootstrapped over the judged items when it was scored --, ``bootstrap of
    the mean``, ``corpus bootstrap``)."""

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

    def line(self) -> str:
        """``PASS hit@5 >= 0.8: ci95 lower bound 0.846 (mean 0.908, 95% CI 0.846–0.970) [pipeline]``."""
        verdict = "PASS" if self.passed else "FAIL"
        cover = ""
        if self.judgeable is not None:
            cover = f"; judged {self.judged} of {self.judgeable}"
        if self.value is None:
            what = self.interval if (self.interval or "").startswith("no interval") else \
                ("nothing was judged" if self.judgeable is not None else "no value (nothing was scored)")
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
    if name in valid:
        return name
    lowered = {v.lower(): v for v in valid}
    if name.lower() in lowered:
        return lowered[name.lower()]
    try:
        from ragexam.metrics.ranking.names import parse_metric

        canon = parse_metric(name).name
    except (MetricNameError, ImportError):
        return None
    return canon if canon in valid else None


def _finite(x: object) -> Optional[float]:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(float(x)):
        return None
    return float(x)


def _results(run: RunData) -> Dict[str, Any]:
    """``{pipeline: {"metrics": ..., "ci95": ..., "coverage": ...}}`` of a run or score; a
    ``ragexam-score/1`` folder (no ``results``) is read from its ``text`` and ``judge`` sections."""
    if run.run is not None:
        return {p: {"metrics": r.metrics, "ci95": r.ci95, "coverage": {}} for p, r in run.run.results.items()}
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
              point: bool = False, segment: Optional[str] = None) -> List[GateResult]:
    """Check every floor on every pipeline of ``run`` (or on ``pipeline`` only); with ``segment`` (a score made
    with ``--by``), on that segment (or every one: ``all``) instead, against the intervals the score recorded:
    a segment too small for an interval fails unless ``point``.

    :raises MetricNameError: a floor names a metric the run does not have (the message lists the
        valid ones); :raises InputError: an unknown pipeline, no floors, no interval can be computed
        (and ``point`` is False).
    """
    if not floors:
        raise InputError("received no floors; expected at least one --min METRIC=VALUE.", source="check",
                         field="--min")
    if segment is not None:
        return _check_results(run, _segment_results(run, segment), None, floors, point)
    results = _results(run)
    return _check_results(run, results, pipeline, floors, point)


def _check_results(run: RunData, results: Dict[str, Any], pipeline: Optional[str], floors: Sequence[Floor],
                   point: bool) -> List[GateResult]:
    """The floors on ``results`` (:func:`_results`, :func:`_segment_results`)."""
    pipes = [p for p in run.pipelines if p in results] or list(results)
    if pipeline is not None:
        if pipeline not in results:
            raise InputError(f"received {pipeline!r}, which is not a pipeline of this run; its pipelines: "
                             f"{', '.join(pipes)}.", source="check", field="--pipeline")
        pipes = [pipeline]
    out: List[GateResult] = []
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
            mean = _finite(metrics[name])
            cov = (res.get("coverage") or {}).get(name) or {}
            judged = cov.get("n_judged") if isinstance(cov.get("n_judged"), int) else None
            judgeable = cov.get("n") if isinstance(cov.get("n"), int) else None
            lo_hi = (res.get("ci95") or {}).get(name)
            if mean is None:
                lo = hi = n = how = None
            elif isinstance(lo_hi, (list, tuple)) and len(lo_hi) == 2:
                lo, hi = float(lo_hi[0]), float(lo_hi[1])
                n, how = (judged, "bootstrap of the mean (recorded)") if judged is not None else (res.get("n"), "run")
            elif "notes" in res:  # a segment: its recorded interval, or none
                lo = hi = None
                n, how = judged, f"no interval: {(res['notes'].get(name) or 'none recorded')}"
            else:
                lo, hi, n, how = _interval(run, p, name, mean, point)
            value = mean if point else lo
            out.append(GateResult(pipeline=p, metric=name, floor=fl.minimum, mean=mean, ci_low=lo, ci_high=hi,
                                  value=value, basis="mean" if point else "ci95 lower bound",
                                  passed=value is not None and value >= fl.minimum, n=n, judged=judged,
                                  judgeable=judgeable, interval=how))
    return out
