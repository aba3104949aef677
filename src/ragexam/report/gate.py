"""``ragexam check RUN --min hit@5=0.8``: metric floors for CI.

A floor ``METRIC=VALUE`` passes when the metric's **95% CI lower bound** is at least ``VALUE``
(with ``point=True``: when its **mean** is).  Using the lower bound by default means a gate
passes only when the run is *confidently* above the floor, so a lucky small question set does
not pass a weak pipeline.  Each pipeline of the run is checked (or the one named).

The lower bound is the run's own ``ci95`` when present; otherwise it is bootstrapped from
``per_question.csv`` with the run's ``seed`` and ``n_resamples``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from ragexam.errors import InputError, MetricNameError
from ragexam.report.rundata import RunData

__all__ = ["Floor", "GateResult", "parse_floor", "check_run"]


@dataclass(frozen=True)
class Floor:
    """``metric`` must be at least ``minimum``."""

    metric: str
    minimum: float


@dataclass(frozen=True)
class GateResult:
    """One floor checked on one pipeline.  ``value`` is what was compared with the floor: the CI
    lower bound (``basis == "ci95 lower bound"``) or the mean (``basis == "mean"``)."""

    pipeline: str
    metric: str
    floor: float
    mean: float
    ci_low: Optional[float]
    ci_high: Optional[float]
    value: float
    basis: str
    passed: bool

    def line(self) -> str:
        """``PASS hit@5 >= 0.80: ci95 lower bound 0.846 (mean 0.908, 95% CI 0.846–0.970) [pipeline]``."""
        ci = f", 95% CI {self.ci_low:.3f}–{self.ci_high:.3f}" if self.ci_low is not None and \
            self.ci_high is not None else ""
        verdict = "PASS" if self.passed else "FAIL"
        extra = f"95% CI {self.ci_low:.3f}–{self.ci_high:.3f}" if self.basis == "mean" and ci else \
            f"mean {self.mean:.3f}{ci}"
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


def check_run(run: RunData, floors: Sequence[Floor], *, pipeline: Optional[str] = None,
              point: bool = False) -> List[GateResult]:
    """Check every floor on every pipeline of ``run`` (or on ``pipeline`` only).

    :raises MetricNameError: a floor names a metric the run does not have (the message lists the
        valid ones); :raises InputError: an unknown pipeline, no floors.
    """
    if not floors:
        raise InputError("received no floors; expected at least one --min METRIC=VALUE.", source="check",
                         field="--min")
    results = run.summary.get("results") or {}
    pipes = run.pipelines
    if pipeline is not None:
        if pipeline not in results:
            raise InputError(f"received {pipeline!r}, which is not a pipeline of this run; its pipelines: "
                             f"{', '.join(pipes)}.", source="check", field="--pipeline")
        pipes = [pipeline]
    out: List[GateResult] = []
    for p in pipes:
        res = results.get(p) or {}
        metrics: Dict[str, Any] = res.get("metrics") or {}
        valid = list(metrics)
        for fl in floors:
            name = _canonical(fl.metric, valid)
            if name is None:
                raise MetricNameError(f"received {fl.metric!r}, which this run did not compute for {p!r}; "
                                      f"valid metrics: {', '.join(valid) or 'none'}.", source="check",
                                      field="--min")
            mean = float(metrics[name])
            lo_hi = (res.get("ci95") or {}).get(name)
            if isinstance(lo_hi, (list, tuple)) and len(lo_hi) == 2:
                lo, hi = float(lo_hi[0]), float(lo_hi[1])
            else:
                lo, hi = _bootstrap(run, p, name)
            value = mean if point else lo
            out.append(GateResult(pipeline=p, metric=name, floor=fl.minimum, mean=mean, ci_low=lo, ci_high=hi,
                                  value=value, basis="mean" if point else "ci95 lower bound",
                                  passed=value >= fl.minimum))
    return out


def _bootstrap(run: RunData, pipeline: str, metric: str):
    from ragexam.analysis import stats

    vals = [r.get(metric) for r in run.rows(pipeline) if r.get("answerable", True)]
    vals = [v for v in vals if v is not None]
    if not vals:
        raise InputError(f"the run has no ci95 for {metric!r} of {pipeline!r} and no per-question values to "
                         "bootstrap one from. Fix: keep per_question.csv beside summary.json, or use --point.",
                         source="check", field="--min")
    cfg = run.summary.get("config") or {}
    ci = stats.bootstrap_ci(vals, n_resamples=int(cfg.get("n_resamples", 2000)),
                            seed=int(cfg.get("seed", stats.DEFAULT_SEED)))
    return ci.low, ci.high
