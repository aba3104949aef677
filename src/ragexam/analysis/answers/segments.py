"""``ragexam score --by FIELD``: the answers in segments -- a model, a day, a tag, any field of the trace -- each with
its judge metrics and intervals, the exam's evidence where a question is an exam question, feedback, latency and
token percentiles; every segment compared with the baseline; the answers to read first.

What ``FIELD`` reads (:func:`segment_names`), from each answer's ``trace`` (``ragexam traces import``) or line:

* ``model``: the model that wrote the answer; ``day``: the day of the trace's timestamp in UTC (``YYYY-MM-DD``,
  :attr:`ragexam.data.traces.meta.TraceMeta.day`); ``tag``: every tag of the trace -- an answer with two tags is
  counted in both segments (the section says ``overlapping``), so the segments' answers add up to more than the
  answers; ``feedback``: ``negative`` (some feedback is negative), ``positive`` (feedback, none negative);
  ``pipeline``: the answer's pipeline;
* any other field of ``trace`` by its name (``source``, ``user``, ``session``, ``latency_ms``, ...) and any other
  key of the answer line (``prompt_version``, ...).  ``trace.model`` is ``model``; an answer whose trace lacks a
  field of ``trace`` (or that has no trace) is read from the key of its line of that name (``"model": "m1"`` on a
  plain answers file).

An answer without the field is in the segment ``(none)``, counted and said, never dropped; a question nobody
answered (a row of the question set with no answer) is in no segment, and a note counts it.  A field no answer has
is an error that lists the fields the answers do have.  Segments come in order: days by date, others by their
number of answers, most first; ``(none)`` last.  The **baseline** is ``baseline`` (``--baseline``) or the first.

Each segment (:class:`~ragexam.storage.score_summary.Segment`): its answers, failed requests and distinct
questions; every judge metric as the score reports it (:func:`ragexam.analysis.answers.scored.judge_stat`: mean
and pass rate with their intervals, coverage, unjudged reasons); the exam's evidence on its answers whose question
is an exam question (``evidence_hit``, ``evidence_precision``, ``evidence_recall`` of their contexts:
:func:`ragexam.analysis.answers.rows.evidence_per_context`); feedback; p50/p90/p99 of latency and of input,
output and total tokens (:func:`ragexam.stats.quantiles.percentiles`, with the values each needs).  Below
:data:`MIN_N` values nothing gets an interval (``too few``), and a set of identical values gets none from the
bootstrap (it would be zero-width): the note says so.

Comparisons (:func:`compare_segments`): each segment against the baseline on each judge metric's score and each
evidence metric.  A question is identified by its exam question when it is one (a question of the set, or the
exam question a traced one matched), else by its text after normalisation
(:func:`ragexam.questions.traces_sample.question_key`); its value in a segment is the mean over its answers there.
Answers in both segments (overlapping segments: tags) are left out of their comparison (``in_both``): the
comparison is of what differs.  When the two segments share at least :data:`MIN_N` questions with a value, the comparison is **paired** on them
(:func:`ragexam.stats.compare`: a model switch asked the same questions; the answers of the other questions are
counted in ``left_out``); otherwise **unpaired** on all their answers (:func:`ragexam.stats.unpaired.
unpaired_compare`), when each has at least :data:`MIN_N`; otherwise ``too_few``.  Holm's correction runs over every
comparison of the section (:func:`ragexam.stats.comparison.holm_family`), and the verdicts are decided on it.

The answers to read first (:func:`worst`): negative feedback first, then failed requests, then the most failed
judge verdicts, then the lowest judged score (on the metric's scale from 0 to 1), then the file's order;
:data:`WORST_N` of them, and how many there are (``n_worst``).
"""

from __future__ import annotations

import functools
import json
import math
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.analysis.answers.rows import AnswerRow, evidence_per_context
from ragexam.analysis.answers.scored import judge_stat
from ragexam.analysis.answers.traffic import exam_id, is_traced
from ragexam.errors import InputError
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.storage.score_summary import (ExamMatching, Feedback, JudgeStat, MeanStat, Segment, SegmentComparison,
                                           SegmentsSection, Spread, WorstTrace)

__all__ = ["segment_names", "group", "segment", "compare_segments", "worst", "segments_section", "MIN_N",
           "WORST_N", "NONE", "EVIDENCE_METRICS", "TRACE_FIELDS", "SPECIAL_FIELDS"]

#: fewer values than this get no interval and no comparison (the judge's own floor for an interval)
MIN_N = 5
#: how many answers the section lists to read first
WORST_N = 20
#: the segment of answers without the field
NONE = "(none)"
#: the exam's evidence measured on a segment's contexts
EVIDENCE_METRICS = ("evidence_hit", "evidence_precision", "evidence_recall")
#: fields of ``trace`` read by their name
TRACE_FIELDS = ("source", "trace_id", "timestamp", "latency_ms", "model", "input_tokens", "output_tokens",
                "total_tokens", "user", "session")
#: fields with a rule of their own (module docstring)
SPECIAL_FIELDS = ("model", "day", "tag", "feedback", "pipeline")
_ALIASES = {"tags": "tag", "date": "day", "trace.tags": "tag"}

Value = Callable[[AnswerRow], Optional[float]]


# -- which segment an answer is in --------------------------------------------------------------------------------


def _field(by: str) -> str:
    name = by.strip()
    name = _ALIASES.get(name, name)
    return name[len("trace."):] if name.startswith("trace.") and name[len("trace."):] else name


def _name(value: object) -> str:
    if value is None or value == "":
        return NONE
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (str, int)):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def segment_names(row: AnswerRow, by: str) -> List[str]:
    """The segments of an answered row by the field ``by`` (module docstring)."""
    name = _field(by)
    rec = row.record
    t = rec.trace if rec is not None else None
    if name == "pipeline":
        return [row.pipeline]
    if name == "tag":
        return list(dict.fromkeys(t.tags)) if t is not None and t.tags else [NONE]
    if name == "day":
        return [_name(t.day if t is not None else None)]
    if name == "feedback":
        return [NONE if t is None or not t.feedback else ("negative" if t.negative else "positive")]
    traced = getattr(t, name) if t is not None and name in TRACE_FIELDS else None
    if traced is not None and traced != "":
        return [_name(traced)]
    return [_name(rec.metadata.get(name) if rec is not None else None)]  # a key of the line: ``"model": "m1"``


def _check_field(rows: Sequence[AnswerRow], by: str) -> None:
    """``by`` names a field some answer has (module docstring), else an error listing the ones they have."""
    name = _field(by)
    answered = [r.record for r in rows if r.record is not None]
    traced = any(rec.trace is not None for rec in answered)
    keys = sorted({k for rec in answered for k in rec.metadata})
    if name == "pipeline" or (traced and (name in SPECIAL_FIELDS or name in TRACE_FIELDS)) or name in keys:
        return
    have = (["model", "day", "tag", "feedback"] + [f for f in TRACE_FIELDS if f != "model"] if traced else []) + \
        ["pipeline"] + keys
    why = "" if traced or name not in SPECIAL_FIELDS + TRACE_FIELDS else \
        ("; no answer carries a 'trace' (it is written by `ragexam traces import`), so there is no " + name)
    raise InputError(f"received {by!r}{why}; expected a field the answers have: {', '.join(have)}", source="score",
                     field="by")


def group(rows: Sequence[AnswerRow], by: Optional[str]) -> Dict[str, List[AnswerRow]]:
    """The answered rows of each segment by ``by`` (``None``: one segment ``all``), in the order of the module
    docstring."""
    answered = [r for r in rows if r.record is not None]
    if by is None:
        return {"all": answered} if answered else {}
    _check_field(rows, by)
    out: Dict[str, List[AnswerRow]] = {}
    for r in answered:
        for name in segment_names(r, by):
            out.setdefault(name, []).append(r)
    if _field(by) == "day":
        order = sorted(out, key=lambda n: (n == NONE, n))
    else:
        order = sorted(out, key=lambda n: (n == NONE, -len(out[n]), n))
    return {n: out[n] for n in order}


# -- one segment --------------------------------------------------------------------------------------------------


def _evidence(r: AnswerRow) -> Mapping[str, object]:
    """The exam's evidence on the row's contexts (computed once), empty when its question has none."""
    if not r.evidence and r.question.answerable and r.question.evidence and r.contexts:
        r.evidence = evidence_per_context(r.question.evidence, r.contexts) or {}
    return r.evidence


def _mean_interval(values: Sequence[float], seed: int) -> Tuple[Optional[Tuple[float, float]], Optional[str]]:
    """``(interval, note)`` of a mean: none below :data:`MIN_N` values or when every value is the same (a
    zero-width bootstrap interval would read as certainty), else the percentile bootstrap."""
    from ragexam.stats import bootstrap_ci

    if len(values) < MIN_N:
        return None, f"n = {len(values)}: too few for an interval (at least {MIN_N})"
    if len(set(values)) == 1:
        return None, f"every one of the {len(values)} values is {values[0]:g}: no bootstrap interval"
    ci = bootstrap_ci(list(values), seed=seed)
    return (ci.low, ci.high), None


def _judge_stat(rows: Sequence[AnswerRow], metric: str, seed: int, notes: Dict[str, str]) -> JudgeStat:
    """The score's :class:`JudgeStat` of ``metric`` over ``rows``, without the intervals the section's floor
    refuses (:func:`_mean_interval`'s rule), said in ``notes``."""
    st = judge_stat(rows, metric, seed).to_record()
    for name, ci in (("mean", "ci95"), ("pass rate", "pass_ci95")):
        interval = getattr(st, ci)
        if interval is None:
            continue
        if st.n_judged < MIN_N:
            notes[metric] = f"n = {st.n_judged}: too few for an interval (at least {MIN_N})"
            setattr(st, ci, None)
        elif interval[1] - interval[0] <= 0:
            notes.setdefault(metric, f"every judged answer has the same {name}: no bootstrap interval")
            setattr(st, ci, None)
    return st


def _spread(values: Iterable[Optional[float]]) -> Spread:
    from ragexam.stats.quantiles import percentiles

    p = percentiles([float(v) for v in values if v is not None])
    return Spread(n=p.n, p50=p.values.get(50), p90=p.values.get(90), p99=p.values.get(99),
                  too_few={f"p{q}": m for q, m in p.too_few.items()} if p.n else {})


def segment(name: str, rows: Sequence[AnswerRow], metrics: Sequence[str], seed: int) -> Segment:
    """One :class:`~ragexam.storage.score_summary.Segment` (module docstring)."""
    notes: Dict[str, str] = {}
    judge = {m: _judge_stat(rows, m, seed, notes) for m in metrics}
    exam = [r for r in rows if _evidence(r)]
    evidence = {}
    for m in EVIDENCE_METRICS if exam else ():
        vals = [float(_evidence(r)[m]) for r in exam]  # type: ignore[arg-type]
        ci, note = _mean_interval(vals, seed)
        evidence[m] = MeanStat(n=len(vals), mean=sum(vals) / len(vals), ci95=ci, note=note)
    traces = [r.record.trace for r in rows if r.record is not None and r.record.trace is not None]
    return Segment(
        name=name, n_answers=len(rows), n_failed=sum(1 for r in rows if r.answer is None),
        n_questions=len({pair_key(r) for r in rows}), judge=judge, n_exam=len(exam), evidence=evidence,
        feedback=Feedback(n=sum(1 for t in traces if t.feedback), negative=sum(1 for t in traces if t.negative)),
        latency_ms=_spread(t.latency_ms for t in traces),
        tokens={k: _spread(getattr(t, f"{k}_tokens") for t in traces) for k in ("input", "output", "total")
                if any(getattr(t, f"{k}_tokens") is not None for t in traces)},
        too_few=len(rows) < MIN_N, interval_notes=notes)


# -- comparisons --------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1 << 17)
def _text_key(text: str) -> str:
    from ragexam.questions.traces_sample import question_key

    return "text:" + question_key(text)


def pair_key(r: AnswerRow) -> str:
    """The question an answer answers, for pairing (module docstring): its exam question, else its text."""
    exam = exam_id(r.question)
    return f"exam:{exam}" if exam is not None else _text_key(r.question.question)


def _value(metric: str) -> Value:
    if metric in EVIDENCE_METRICS:
        return lambda r: float(_evidence(r)[metric]) if _evidence(r) else None  # type: ignore[arg-type]

    def judged(r: AnswerRow) -> Optional[float]:
        sc = r.judge.get(metric)
        return float(sc.score) if sc is not None and sc.judged and sc.score is not None else None
    return judged


def _by_question(rows: Sequence[AnswerRow], value: Value) -> Tuple[Dict[str, float], int]:
    """``({question: mean value over its answers}, answers with a value)``."""
    sums: Dict[str, List[float]] = {}
    for r in rows:
        v = value(r)
        if v is not None:
            sums.setdefault(pair_key(r), []).append(v)
    # math.fsum: exact, so a question's answers summed in another order give the same mean (no 1e-17 "differences")
    return {k: math.fsum(v) / len(v) for k, v in sums.items()}, sum(len(v) for v in sums.values())


def _compare_one(metric: str, a: str, b: str, rows_a: Sequence[AnswerRow], rows_b: Sequence[AnswerRow], seed: int):
    """``(SegmentComparison without its test, the stats result or None)`` of one metric (module docstring)."""
    from ragexam import stats
    from ragexam.stats.unpaired import unpaired_compare

    value = _value(metric)
    both = {id(r) for r in rows_a} & {id(r) for r in rows_b}  # overlapping segments (tags): compare what differs
    in_both = sum(1 for r in rows_a if id(r) in both and value(r) is not None)
    rows_a = [r for r in rows_a if id(r) not in both]
    rows_b = [r for r in rows_b if id(r) not in both]
    qa_, n_a = _by_question(rows_a, value)
    qb_, n_b = _by_question(rows_b, value)
    common = set(qa_) & set(qb_)
    shared = sorted(common)
    base = SegmentComparison(metric=metric, a=a, b=b, n_a=n_a, n_b=n_b, in_both=in_both)
    if len(shared) >= MIN_N:
        res = stats.compare([qa_[k] for k in shared], [qb_[k] for k in shared], names=(a, b), seed=seed)
        kept = sum(1 for r in [*rows_a, *rows_b] if pair_key(r) in common and value(r) is not None)
        base.design, base.n, base.left_out = "paired", len(shared), n_a + n_b - kept
        base.mean_a = sum(qa_[k] for k in shared) / len(shared)
        base.mean_b = sum(qb_[k] for k in shared) / len(shared)
        return base, res
    va = [v for r in rows_a if (v := value(r)) is not None]
    vb = [v for r in rows_b if (v := value(r)) is not None]
    if len(va) >= MIN_N and len(vb) >= MIN_N:
        res = unpaired_compare(va, vb, names=(a, b), seed=seed)
        base.design, base.mean_a, base.mean_b = "unpaired", res.mean_a, res.mean_b
        return base, res
    base.design, base.reading = "too_few", "too few"
    base.verdict = (f"too few to compare: {len(shared)} shared questions and {len(va)} and {len(vb)} answers with "
                    f"a value (at least {MIN_N} shared, or {MIN_N} answers each)"
                    + (f"; {in_both} answers in both segments are not compared" if in_both else ""))
    return base, None


def compare_segments(groups: Mapping[str, Sequence[AnswerRow]], baseline: str, metrics: Sequence[str],
                     seed: int) -> List[SegmentComparison]:
    """Every segment against ``baseline`` on each of ``metrics`` (module docstring), Holm over all of them."""
    from ragexam.stats.comparison import holm_family

    pending = [_compare_one(m, baseline, name, groups[baseline], rows, seed)
               for name, rows in groups.items() if name != baseline for m in metrics]
    tested = holm_family([res for _, res in pending if res is not None])
    done = iter(tested)
    out = []
    for base, res in pending:
        if res is not None:
            t = next(done)
            base.diff, base.ci95, base.p_value, base.p_holm = t.diff, (t.ci_low, t.ci_high), t.p_value, t.p_adjusted
            base.mdd, base.verdict, base.reading, base.signature = t.mdd, t.verdict, t.reading, str(t.signature)
        out.append(base)
    return out


# -- the answers to read first ------------------------------------------------------------------------------------


def _scaled(metric: str, score: float, defs: Mapping[str, JudgeMetric]) -> float:
    d = defs.get(metric)
    lo, hi = (d.score_range[0], d.score_range[1]) if d is not None and len(d.score_range) == 2 else (0.0, 1.0)
    return (score - lo) / (hi - lo) if hi > lo else score


def worst(rows: Sequence[AnswerRow], by: Optional[str], defs: Mapping[str, JudgeMetric],
          n: int = WORST_N) -> List[WorstTrace]:
    """The ``n`` answers to read first (module docstring)."""
    import heapq

    ranked = _to_read(rows, defs)
    return [_worst_trace(rows[k[-1]], by, defs) for k in heapq.nsmallest(n, ranked)]


def _to_read(rows: Sequence[AnswerRow], defs: Mapping[str, JudgeMetric]) -> List[Tuple[bool, bool, int, float, int]]:
    """The rank of every answer to read (negative feedback, a failed request, a failed verdict, a judged score), in
    the rows' order: the smallest first is read first."""

    def rank(i: int, r: AnswerRow) -> Optional[Tuple[bool, bool, int, float, int]]:
        negative = r.record is not None and r.record.trace is not None and r.record.trace.negative
        failed = sum(1 for sc in r.judge.values() if sc.judged and sc.passed is False)
        low = _lowest(r, defs)
        if r.record is None or not (negative or failed or r.answer is None or low is not None):
            return None
        return (not negative, r.answer is not None, -failed, 2.0 if low is None else low, i)

    return [k for i, r in enumerate(rows) if (k := rank(i, r)) is not None]


def _lowest(r: AnswerRow, defs: Mapping[str, JudgeMetric]) -> Optional[float]:
    low = _lowest_of(r, defs)
    return low[1] if low is not None else None


def _lowest_of(r: AnswerRow, defs: Mapping[str, JudgeMetric]) -> Optional[Tuple[str, float]]:
    """``(metric, score on its 0-1 scale)`` of the answer's lowest judged score, or ``None``."""
    scores = [(m, _scaled(m, float(sc.score), defs)) for m, sc in r.judge.items() if sc.judged and sc.score is not None]
    return min(scores, key=lambda ms: ms[1]) if scores else None


def _worst_trace(r: AnswerRow, by: Optional[str], defs: Mapping[str, JudgeMetric]) -> WorstTrace:
    rec = r.record
    negative = rec is not None and rec.trace is not None and rec.trace.negative
    failed = [f"{m} {sc.label or fmt.num(sc.score)}" for m, sc in r.judge.items() if sc.judged and sc.passed is False]
    lowest = _lowest_of(r, defs)
    low = lowest[1] if lowest is not None else None
    why = (["negative feedback"] if negative else []) + (["failed request"] if r.answer is None else []) \
        + ([f"did not pass: {', '.join(failed)}"] if failed else []) \
        + ([f"lowest judged score: {lowest[0]} {fmt.num(low)} (on a 0-1 scale)"] if lowest is not None else [])
    return WorstTrace(query_id=r.query_id, segments=segment_names(r, by) if by else [],
                      question=r.question.question[:300], answer=(r.answer or "")[:300] or None, negative=negative,
                      failed=failed, score=low, why="; ".join(why),
                      error=rec.error if rec is not None and r.answer is None else None)


# -- the section --------------------------------------------------------------------------------------------------


def segments_section(rows: Sequence[AnswerRow], *, by: Optional[str], baseline: Optional[str],
                     metrics: Sequence[str], defs: Mapping[str, JudgeMetric], seed: int,
                     matching: Optional[ExamMatching] = None, warnings: Sequence[str] = ()) -> SegmentsSection:
    """The ``segments`` section of a score (module docstring)."""
    groups = group(rows, by)
    if baseline is not None and baseline not in groups:
        raise InputError(f"received {baseline!r}; expected a segment of --by {by}: {', '.join(groups) or 'none'}",
                         source="score", field="baseline")
    base = baseline if baseline is not None else next(iter(groups), None)
    segs = {name: segment(name, rs, metrics, seed) for name, rs in groups.items()}
    compared = [m for m in metrics if any(s.judge[m].n_judged for s in segs.values())] + \
        [m for m in EVIDENCE_METRICS if any(m in s.evidence for s in segs.values())]
    notes = []
    unanswered = sum(1 for r in rows if r.record is None)
    if unanswered:
        notes.append(f"{fmt.plural(unanswered, 'question')} of the set without an answer: in no segment")
    if NONE in segs and by is not None:
        notes.append(f"{fmt.plural(segs[NONE].n_answers, 'answer')} without {by}: the segment {NONE}")
    overlapping = sum(s.n_answers for s in segs.values()) > sum(1 for r in rows if r.record is not None)
    if overlapping:
        notes.append(f"an answer is counted in every {by} it has: the segments overlap")
    if any(is_traced(r.question) for r in rows) and matching is None:
        notes.append("no question set was given: the exam's evidence is not measured (pass --qa to match the traced "
                     "questions to the exam's)")
    return SegmentsSection(by=by, overlapping=overlapping, baseline=base, min_n=MIN_N, segments=segs,
                           comparisons=compare_segments(groups, base, compared, seed) if base is not None else [],
                           worst=worst(rows, by, defs), exam=matching, warnings=list(warnings), notes=notes,
                           n_worst=len(_to_read(rows, defs)))
