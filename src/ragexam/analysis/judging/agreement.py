"""How far to trust the judge: agreement with itself (repeats) and with human labels.

Units
-----
Each metric is compared on these units and values:

==================  ===========================================  ==========================
metric              unit                                         value (scale)
==================  ===========================================  ==========================
context_relevance   one retrieved context of one item            its 1-5 score
context_precision   one retrieved context of one item            useful=1 / not useful=0
context_recall      one item                                     complete=1 / incomplete=0
answer_correctness  one item                                     its 1-5 score
answer_relevancy    one item                                     its 1-5 score
faithfulness        one item                                     faithful=1 / unfaithful=0
abstention          one item                                     abstained=1 / answered=0
a custom rubric     one item                                     its level (the rubric's scale)
==================  ===========================================  ==========================

(:meth:`ragexam.metrics.judge.metric.JudgeMetric.units` and ``unit_scale``.)

Repeat agreement (``--repeat N``, N >= 2)
-----------------------------------------
Over the units whose item was judged in *every* repeat (the others are counted, not used):

* ``exact`` -- share of units on which all N repeats gave the same value;
* ``mean_abs_diff`` -- mean over units and over all repeat pairs (r < s) of ``|x_r - x_s|``;
* ``kappa`` -- mean over repeat pairs of Cohen's kappa between the two repeats (unweighted;
  plus ``kappa_quadratic``, quadratic weights, for the 1-5 scales), with the scale's labels
  fixed (1..5 or 0/1).  A pair whose kappa is undefined (both repeats gave every unit the same
  value) is skipped and counted in ``kappa_undefined_pairs``; if every pair is undefined,
  ``kappa`` is ``None``.

Human labels (``ragexam judge-agreement``)
------------------------------------------
A question in the QA file may carry a ``human`` object with labels for its answer, e.g.
``"human": {"answer_correctness": 4, "faithfulness": true, "abstention": false,
"context_relevance": [5, 1, 1]}`` (it arrives in ``Question.metadata``); a ``human`` object on
an answers-file line overrides it for that answer.  Values: ``answer_correctness`` an integer
1-5 (the judge's bands); ``faithfulness`` ``true`` when every claim is supported;
``abstention`` ``true`` when the answer declines; ``context_relevance`` one integer 1-5 per
context, in order.  :func:`human_agreement` reports, over units that both rated: ``n``,
exact agreement, Cohen's kappa (unweighted and, with ``weights``, linear or quadratic),
Spearman's rho, mean |judge - human|, and the largest disagreements to read.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.storage.score_summary import Agreement
from ragexam import fmt
from ragexam.errors import InputError
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.metrics.judge.registry import label_example, registered

__all__ = ["human_label_notes", "RepeatAgreement", "repeat_agreement", "HumanAgreement", "human_agreement",
           "unit_values", "check_human_value", "collect_human_labels", "scales"]


def scales() -> Dict[str, Tuple[int, ...]]:
    """metric -> the labels of its scale (fixed, so kappa's weights use the right positions), for every
    registered per-answer metric."""
    return {m.name: m.unit_scale for m in registered().values() if m.per_answer}


def _definition(metric: Union[str, JudgeMetric]) -> JudgeMetric:
    if isinstance(metric, JudgeMetric):
        return metric
    m = registered().get(metric)
    if m is None or not m.per_answer:
        raise InputError(f"unknown judge metric {metric!r}", field="metric")
    return m


def unit_values(metric: Union[str, JudgeMetric], label: Optional[str], score: Optional[float],
                details: Mapping[str, Any]) -> List[int]:
    """The values of one judged item on ``metric``'s units (see the module docstring)."""
    return _definition(metric).units(score, label, details)


def _kappas(columns: Sequence[Sequence[int]], scale: Sequence[int], weights: Optional[str]) -> Tuple[List[float], int]:
    from ragexam.stats import cohen_kappa

    vals, undefined = [], 0
    for a, b in itertools.combinations(columns, 2):
        try:
            vals.append(cohen_kappa(list(a), list(b), weights=weights, labels=list(scale)))
        except InputError:
            undefined += 1
    return vals, undefined


#: Agreement of the judge with itself over ``repeats`` repeats (see the module docstring): the record a score
#: stores (:class:`ragexam.storage.score_summary.Agreement`).
RepeatAgreement = Agreement


def repeat_agreement(judgments: Sequence[Any], metric: Union[str, JudgeMetric]) -> RepeatAgreement:
    """:class:`RepeatAgreement` of ``metric`` (a built-in name or a metric object) from a run's
    judgments (``JudgeRun.judgments``)."""
    defn = _definition(metric)
    metric = defn.name
    by_item: Dict[str, Dict[int, Any]] = {}
    repeats = 0
    for j in judgments:
        if j.metric == metric:
            by_item.setdefault(j.item_id, {})[j.repeat] = j
            repeats = max(repeats, j.repeat + 1)
    rows: List[List[int]] = []  # one row per unit: value per repeat
    complete = 0
    for item, reps in by_item.items():
        if len(reps) < repeats or not all(reps[r].judged for r in range(repeats)):
            continue
        cols = [defn.units(reps[r].score, reps[r].label, reps[r].details) for r in range(repeats)]
        if len({len(c) for c in cols}) != 1:
            continue
        complete += 1
        rows.extend([list(u) for u in zip(*cols)])
    n_pairs = repeats * (repeats - 1) // 2
    if repeats < 2 or not rows:
        return RepeatAgreement(metric, repeats, len(by_item), complete, len(rows), None, None, None, None, n_pairs, 0)
    exact = sum(1 for r in rows if len(set(r)) == 1) / len(rows)
    diffs = [abs(a - b) for r in rows for a, b in itertools.combinations(r, 2)]
    mad = sum(diffs) / len(diffs)
    columns = [[r[i] for r in rows] for i in range(repeats)]
    scale = defn.unit_scale
    ks, undefined = _kappas(columns, scale, None)
    kq = None
    if defn.ordinal:
        kqs, _ = _kappas(columns, scale, "quadratic")
        kq = sum(kqs) / len(kqs) if kqs else None
    return RepeatAgreement(metric, repeats, len(by_item), complete, len(rows), exact, mad,
                           sum(ks) / len(ks) if ks else None, kq, n_pairs, undefined)


# --- human labels ---------------------------------------------------------------------------
def check_human_value(metric: Union[str, JudgeMetric], value: Any, *, source: Optional[str] = None,
                      line: Optional[int] = None) -> List[int]:
    """A human label as unit values (:meth:`JudgeMetric.human_units`: per-context metrics take a list, one
    value per context; two-valued metrics true/false; the others an integer of their scale);
    :class:`InputError` naming the file, line and field if malformed."""
    try:
        defn = _definition(metric)
    except InputError:
        raise InputError(f"unknown metric {metric!r}; expected one of {', '.join(scales())}", source=source,
                         line=line, field="human") from None
    try:
        return defn.human_units(value)
    except ValueError as err:
        raise InputError(f"received {value!r}; {err}", source=source, line=line, field=f"human.{defn.name}") from None


@dataclass(frozen=True)
class Disagreement:
    item_id: str
    unit: int
    judge: int
    human: int
    judge_label: Optional[str]
    reasoning: Optional[str]

    @property
    def gap(self) -> int:
        return abs(self.judge - self.human)

    def to_dict(self) -> Dict[str, Any]:
        return {"item_id": self.item_id, "unit": self.unit, "judge": self.judge, "human": self.human,
                "gap": self.gap, "judge_label": self.judge_label, "reasoning": self.reasoning}


@dataclass
class HumanAgreement:
    """Judge vs human labels on one metric (see the module docstring).  ``n_labelled``: items with
    a human label; ``n_compared``: of them, judged by the judge; ``n_units``: units compared;
    ``unjudged``: reason -> count of labelled items the judge left unjudged; ``notes``: why a
    statistic is missing."""

    metric: str
    n_labelled: int
    n_compared: int
    n_units: int
    exact: Optional[float]
    kappa: Optional[float]
    kappa_weighted: Optional[float]
    weights: Optional[str]
    spearman: Optional[float]
    mean_abs_diff: Optional[float]
    unjudged: Dict[str, int]
    disagreements: List[Disagreement]
    notes: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "disagreements"}
        out["disagreements"] = [d.to_dict() for d in self.disagreements]
        return out


def human_agreement(scores: Mapping[str, Any], human: Mapping[str, Any], metric: Union[str, JudgeMetric], *,
                    weights: Optional[str] = "quadratic", top: int = 10) -> HumanAgreement:
    """Compare the judge's item scores (``{item_id: ItemScore}``) with human values
    (``{item_id: value}``, see :func:`check_human_value`) on ``metric``.

    ``weights`` (``None``, ``"linear"``, ``"quadratic"``) is used for ``kappa_weighted`` on the
    1-5 scales; ``top`` limits the listed disagreements (largest gap first, then item id).
    """
    from collections import Counter

    from ragexam.stats import cohen_kappa, spearman

    defn = _definition(metric)
    metric = defn.name
    if weights not in (None, "linear", "quadratic"):
        raise InputError(f"received {weights!r}; expected none, linear or quadratic", field="weights")
    a: List[int] = []
    b: List[int] = []
    dis: List[Disagreement] = []
    unjudged: Counter = Counter()
    notes: List[str] = []
    compared = 0
    for item_id, hv in human.items():
        hvals = check_human_value(defn, hv, source=item_id)
        s = scores.get(item_id)
        if s is None:
            unjudged["not_in_run"] += 1
            continue
        if not s.judged:
            unjudged[s.reason] += 1
            continue
        jvals = defn.units(s.score, s.label, s.details)
        if len(jvals) != len(hvals):
            raise InputError(f"the human label has {fmt.plural(len(hvals), 'value')} but the judge rated "
                             f"{fmt.plural(len(jvals), 'context')}; expected one value per context", source=item_id,
                             field=f"human.{metric}")
        compared += 1
        for u, (jv, hv1) in enumerate(zip(jvals, hvals)):
            a.append(jv)
            b.append(hv1)
            if jv != hv1:
                dis.append(Disagreement(item_id, u, jv, hv1, s.label, s.details.get("reasoning")))
    scale = list(defn.unit_scale)
    exact = kappa = kw = rho = mad = None
    if a:
        exact = sum(x == y for x, y in zip(a, b)) / len(a)
        mad = sum(abs(x - y) for x, y in zip(a, b)) / len(a)
        try:
            kappa = cohen_kappa(a, b, labels=scale)
        except InputError as err:
            notes.append(f"kappa undefined: {err.message}")
        if defn.ordinal and weights is not None:
            try:
                kw = cohen_kappa(a, b, weights=weights, labels=scale)
            except InputError as err:
                notes.append(f"weighted kappa undefined: {err.message}")
        if len(a) >= 2:
            try:
                rho = spearman(a, b)
            except InputError as err:
                notes.append(f"spearman undefined: {err.message}")
        else:
            notes.append("spearman needs at least 2 units")
    else:
        notes.append("no unit was rated by both the judge and a human")
    dis.sort(key=lambda d: (-d.gap, d.item_id, d.unit))
    return HumanAgreement(metric, len(human), compared, len(a), exact, kappa, kw,
                          weights if defn.ordinal else None, rho, mad, dict(unjudged), dis[:top], notes)


def collect_human_labels(rows: Sequence[Any], *, questions_source: str, answers_source: str
                         ) -> Dict[str, Dict[str, Any]]:
    """``{metric: {item_id: label}}`` from the ``human`` objects of the questions and answers of ``rows``
    (scoring rows: ``question``, ``record``, ``item_id``); an answer's label overrides its question's.  A
    malformed label raises :class:`InputError` naming the file it is in (the QA file or the answers file) and
    its line."""
    human: Dict[str, Dict[str, Any]] = {}
    for r in rows:
        if r.record is None:
            continue
        qh = r.question.metadata.get("human")
        if qh is not None and not isinstance(qh, dict):
            raise InputError(f"expected an object such as {label_example()}", source=questions_source,
                             line=r.question.line, field="human")
        for m, v in (qh or {}).items():
            check_human_value(m, v, source=questions_source, line=r.question.line)
            human.setdefault(m, {})[r.item_id] = v
        for m, v in (r.record.human or {}).items():
            check_human_value(m, v, source=answers_source, line=r.record.line)
            human.setdefault(m, {})[r.item_id] = v
    return human


def read_human_labels(path: Any) -> Dict[Tuple[Optional[str], str], Dict[str, Any]]:
    """Human labels from a JSONL file (``score --human``), the format ``judge-agreement`` reads on answers:
    one object per line, ``{"query_id": ..., "pipeline": ... (optional), "human": {"answer_correctness": 4,
    ...}}`` (other keys such as ``answer`` are ignored).  Returns ``{(pipeline or None, query_id): {metric:
    value}}``; each value is checked (:func:`check_human_value`) and a malformed line, a repeated
    (pipeline, query_id) or a file without labels is an :class:`InputError` naming the file and line."""
    import json
    from pathlib import Path

    source = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", source=source, field="human") from None
    out: Dict[Tuple[Optional[str], str], Dict[str, Any]] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as err:
            raise InputError(f"invalid JSON ({err}); expected one object per line", source=source,
                             line=lineno) from None
        qid, human, pipeline = (obj.get("query_id"), obj.get("human"), obj.get("pipeline")) if isinstance(
            obj, dict) else (None, None, None)
        if not isinstance(qid, str) or not qid.strip():
            raise InputError(f"received {qid!r}; expected the question's query_id", source=source, line=lineno,
                             field="query_id")
        if not isinstance(human, dict) or not human:
            raise InputError(f"expected an object such as {label_example()}", source=source, line=lineno,
                             field="human")
        if pipeline is not None and not isinstance(pipeline, str):
            raise InputError("expected a pipeline name (or leave the field out)", source=source, line=lineno,
                             field="pipeline")
        for m, v in human.items():
            check_human_value(m, v, source=source, line=lineno)
        key = (pipeline, qid)
        if key in out:
            raise InputError(f"query_id {qid!r}" + (f" of pipeline {pipeline!r}" if pipeline else "")
                             + " is labelled twice; expected one line per answer", source=source, line=lineno,
                             field="query_id")
        out[key] = dict(human)
    if not out:
        raise InputError(f"the file has no labels; expected lines such as {{\"query_id\": \"q1\", \"human\": "
                         f"{label_example()}}}", source=source, field="human")
    return out


def human_label_notes(human: Mapping[Tuple[Optional[str], str], Mapping[str, Any]], used: Any,
                      on_judged: Mapping[Tuple[str, str], Sequence[str]], metrics: Sequence[str], *,
                      ids: int = 8) -> List[str]:
    """What ``score --human`` says about its labels: the labels not used -- their metric was not judged, or no
    answer has their query id (and pipeline) -- named by id; and each judged metric and pipeline with fewer than 2
    labels on judged answers (``on_judged``: ``(metric, pipeline)`` -> their query ids), which gets no corrected
    mean: it needs 2."""
    out = []
    unused = [(key, m) for key, labels in human.items() for m in labels if (key, m) not in used]
    if unused:
        named = ", ".join((f"{k[0]}/" if k[0] else "") + f"{k[1]} ({m})" for k, m in unused[:ids])
        more = f" and {len(unused) - ids} more" if len(unused) > ids else ""
        out.append(f"{fmt.plural(len(unused), 'human label')} not used -- their metric was not judged or no answer has "
                   f"their query_id (and pipeline): {named}{more}")
    for (m, pipeline), labelled in on_judged.items():
        if m in metrics and len(labelled) < 2:
            out.append(f"{m} of {pipeline!r}: {fmt.plural(len(labelled), 'human label')} on a judged answer "
                       f"({', '.join(labelled)}); the corrected mean needs at least 2 -- label more answers")
    return out
