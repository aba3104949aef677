"""``assert_exam``: the exam as a test assertion, with a failure message worth reading.

:func:`assert_exam` checks metric floors on a result with the same rules as ``ragexam check``
(:func:`ragexam.analysis.gating.gate.check_run`): by default a floor passes when the metric's **95% CI
lower bound** is at least the floor (``on="lower_bound"``), so a small lucky question set does not
pass a weak pipeline; ``on="mean"`` compares the mean.  Judge metrics use the judged answers only and
their coverage can be floored too (``min_coverage``); a judge metric's pass rate is
``<metric>_pass`` (``"faithfulness_pass": 0.9``).  As in ``ragexam check``, a judge metric whose judge was not
shown to separate good from bad on the question set (its trust verdict, :mod:`ragexam.analysis.answers.trusted`)
fails its floor saying why, unless ``trust_judge=True``.

The failure (:class:`ExamFailure`, an ``AssertionError``) lists, for every floor that failed: the
metric, its value and interval, the floor, the coverage of a judge metric, and the worst questions
-- lowest values first, unjudged answers with their reason -- with the question text when the result
has it.  Passing floors are listed too, so one message tells the whole story.

``result`` may be a :class:`~ragexam.analysis.answers.scoring.ScoreReport` (``score_answers``), a
:class:`~ragexam.analysis.exam.run.RunResult` (``ragexam.run``), a
:class:`~ragexam.storage.runfolder.RunData`, or the path of a ``run --out`` / ``score --out`` folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError, number_in

if TYPE_CHECKING:
    from ragexam.analysis.answers.scored import ScoreReport
    from ragexam.analysis.exam.run import RunResult
    from ragexam.analysis.gating.gate import GateResult
    from ragexam.storage.runfolder import RunData

#: what an exam is checked on: a score (ScoreReport), a run (RunResult), a read folder (RunData) or a folder's path
ExamResult = Union["ScoreReport", "RunResult", "RunData", str, Path]

__all__ = ["assert_exam", "check_exam", "ExamFailure", "ExamCheck"]

_ON = {"lower_bound": False, "mean": True}


class ExamFailure(AssertionError):
    """A floor of :func:`assert_exam` failed; ``checks`` holds every :class:`ExamCheck`."""

    def __init__(self, message: str, checks: Sequence["ExamCheck"]) -> None:
        super().__init__(message)
        self.checks = list(checks)


@dataclass(frozen=True)
class ExamCheck:
    """One floor on one pipeline: the gate's result (:class:`ragexam.analysis.gating.gate.GateResult`), the
    coverage floor's verdict and the worst questions ``(query_id, value or None, note)``."""

    gate: "GateResult"
    coverage_ok: bool
    worst: Tuple[Tuple[str, Optional[float], str], ...]

    @property
    def passed(self) -> bool:
        return bool(self.gate.passed) and self.coverage_ok


def _as_run(result: ExamResult) -> Tuple["RunData", Optional["ScoreReport"]]:
    """``(RunData, rows by (pipeline, query_id) with notes or None)`` for any accepted result."""
    from ragexam.storage.runfolder import RunData, read_folder

    if isinstance(result, (str, Path)):
        return read_folder(result), None
    if isinstance(result, RunData):
        return result, None
    if hasattr(result, "report") and hasattr(result, "check_plan"):  # what ragexam.score(...) returns
        if result.report is None:
            raise InputError("received the ScoreOutcome of a dry run: nothing was scored; expected a score. Fix: "
                             "ragexam.score(...) without dry_run", source="assert_exam", field="result")
        return _as_run(result.report)
    if hasattr(result, "typed_rows") and hasattr(result, "summary"):  # a ScoreReport
        return RunData(summary=result.summary, per_question=result.typed_rows(), source="score"), result
    if hasattr(result, "summary") and hasattr(result, "per_question"):  # a RunResult
        return RunData(summary=result.summary, per_question=list(result.per_question), source="run"), None
    raise InputError(f"received {type(result).__name__}; expected what ragexam.score(...) or ragexam.run(...) returns "
                     "(a ScoreOutcome, a ScoreReport, a RunResult), a RunData or the path of a run or score folder",
                     source="assert_exam", field="result")


def _worst(run, report, pipeline: str, metric: str, n: int) -> Tuple[Tuple[str, Optional[float], str], ...]:
    if n <= 0:
        return ()
    base = metric[: -len("_pass")] if metric.endswith("_pass") else metric
    out: List[Tuple[str, Optional[float], str]] = []
    if report is not None and base in getattr(report, "judge_metrics", ()):
        for r in report.rows:
            if r.pipeline != pipeline or base not in r.judge:
                continue
            sc = r.judge[base]
            text = r.question.question
            if not sc.judged:
                out.append((r.query_id, None, f"unjudged: {sc.reason} · {text}"))
                continue
            value = float(sc.passed) if metric.endswith("_pass") and sc.passed is not None else sc.score
            label = f"{sc.label} · " if sc.label else ""
            why = (sc.details or {}).get("reasoning") or ""
            out.append((r.query_id, value, f"{label}{text}" + (f" — judge: {why[:120]}" if why else "")))
    else:
        questions = {}
        if report is not None:
            questions = {r.query_id: r.question.question for r in report.rows}
        for row in run.rows(pipeline):
            if metric not in row.metrics:
                continue
            v = row.metrics[metric]
            if v is None and not row.answerable:
                continue
            out.append((row.query_id, v, questions.get(row.query_id, "") or ("not scored" if v is None else "")))
    out.sort(key=lambda t: (t[1] is not None, t[1] if t[1] is not None else 0.0, t[0]))
    return tuple(out[:n])


def check_exam(result: ExamResult, min: Mapping[str, float], *, on: str = "lower_bound",  # noqa: A002 (the documented name)
               pipeline: Optional[str] = None, min_coverage: Optional[float] = None, worst: int = 5,
               trust_judge: bool = False) -> List[ExamCheck]:
    """Every floor of ``min`` on every pipeline of ``result`` (or ``pipeline``) as :class:`ExamCheck` s;
    nothing is raised for a failed floor (see :func:`assert_exam`)."""
    from ragexam.analysis.gating.gate import Floor, check_run

    if on not in _ON:
        raise InputError(f"received {on!r}; expected 'lower_bound' or 'mean'", source="assert_exam", field="on")
    if not isinstance(min, Mapping) or not min:
        raise InputError(f"received {min!r}; expected a mapping metric -> floor, e.g. {{'hit@5': 0.8}}",
                         source="assert_exam", field="min")
    floors = []
    for name, value in min.items():
        floors.append(Floor(str(name), number_in(value, source="assert_exam", field="min",
                                                 what=f"a finite number as the floor of {name!r}")))
    if min_coverage is not None:
        number_in(min_coverage, 0.0, 1.0, source="assert_exam", field="min_coverage", what="a fraction")
    run, report = _as_run(result)
    out = []
    for g in check_run(run, floors, pipeline=pipeline, point=_ON[on], trust_judge=trust_judge):
        cov_ok = True
        if min_coverage is not None and g.judgeable:
            cov_ok = (g.judged or 0) / g.judgeable >= min_coverage
        out.append(ExamCheck(g, cov_ok, _worst(run, report, g.pipeline, g.metric, worst)))
    return out


def _fmt(x: Optional[float]) -> str:
    return "—" if x is None else f"{x:.3f}"


def _message(checks: Sequence[ExamCheck], on: str, min_coverage: Optional[float]) -> str:
    failed = [c for c in checks if not c.passed]
    lines = [f"ragexam exam failed: {len(failed)} of {len(checks)} floor check(s) "
             f"(compared: {'95% CI lower bound' if on == 'lower_bound' else 'mean'})"]
    for c in failed:
        g = c.gate
        ci = f"95% CI {_fmt(g.ci_low)}–{_fmt(g.ci_high)}" if g.ci_low is not None else "no interval"
        cover = ""
        if g.judgeable is not None:
            cover = f", judged {g.judged} of {g.judgeable}"
            if not c.coverage_ok:
                cover += f" (below min_coverage {min_coverage:g})"
        value = "nothing was judged" if g.value is None else f"{g.basis} {_fmt(g.value)}"
        verdict = "FAIL" if not g.passed else "FAIL (coverage)"
        lines.append(f"  {verdict} {g.metric} >= {g.floor:g} [{g.pipeline}]: {value} "
                     f"(mean {_fmt(g.mean)}, {ci}, n={g.n if g.n is not None else '—'}{cover})")
        if g.refused is not None:
            lines.append(f"    {g.refused.replace('--trust-judge', 'trust_judge=True')}")
        if c.worst:
            lines.append("    worst questions:")
            for qid, v, note in c.worst:
                lines.append(f"      {qid}  {_fmt(v) if v is not None else '  —  '}  {note}".rstrip())
    passed = [c for c in checks if c.passed]
    if passed:
        lines.append("  passed: " + "; ".join(f"{c.gate.metric} [{c.gate.pipeline}] {_fmt(c.gate.value)} >= "
                                              f"{c.gate.floor:g}" for c in passed))
    return "\n".join(lines)


def assert_exam(result: ExamResult, min: Mapping[str, float], *, on: str = "lower_bound",  # noqa: A002
                pipeline: Optional[str] = None, min_coverage: Optional[float] = None, worst: int = 5,
                trust_judge: bool = False) -> List[ExamCheck]:
    """Raise :class:`ExamFailure` unless every floor holds (see the module docstring).

    :param min: ``{metric: floor}``, e.g. ``{"hit@5": 0.8, "faithfulness": 0.9}``; metric names as in
        ``ragexam check --min`` (``faithfulness_pass`` for a judge metric's pass rate).
    :param on: ``"lower_bound"`` (default) or ``"mean"``.
    :param pipeline: check one pipeline (default: every pipeline of the result).
    :param min_coverage: also fail a judge metric judged on less than this share of its answers.
    :param worst: how many of the worst questions to list per failed floor.
    :param trust_judge: gate on a judge metric even when its judge was not shown to separate good from bad (by
        default such a floor fails, as ``ragexam check``'s does: :mod:`ragexam.analysis.gating.gate`).
    :returns: the checks (all passed).
    """
    checks = check_exam(result, min, on=on, pipeline=pipeline, min_coverage=min_coverage, worst=worst,
                        trust_judge=trust_judge)
    if not all(c.passed for c in checks):
        raise ExamFailure(_message(checks, on, min_coverage), checks)
    return checks
