"""What a judge metric is: its rubric, the inputs it needs, its reply contract, and its verdict rules.

A :class:`JudgeMetric` bundles everything the judge machinery needs to know about one metric, so the
built-in metrics and custom rubrics (:mod:`ragexam.metrics.judge.custom`) run through the same code
(cache, resume, retries with feedback, unjudged-with-reason, coverage, repeats):

* ``rubric(language)``: the versioned prompt (:class:`~ragexam.metrics.judge.prompts.Rubric`) whose
  hash goes into every score's signature and into the cache key;
* ``needs``: the inputs without which an item is ``unjudged`` with reason ``no_answer`` /
  ``no_contexts`` / ``no_ground_truth`` / ``no_second_answer`` (no call is made);
* ``applies_to``: which questions it grades in ``ragexam score`` (``all``, ``answerable``,
  ``unanswerable``);
* ``validate(obj, n_contexts)``: the reply contract (:mod:`ragexam.metrics.judge.replies`);
* ``labels``: the verdict labels from worst to best (empty when the metric has only a score); the
  canonical verdict over repeats is the majority label, and a tie goes to the *worse* label;
* ``passed(score, label, details)``: the metric's pass rule (``None`` when it has none), which gives
  the pass rate;
* ``units(score, label, details)`` and ``unit_scale``: the values compared for agreement (with
  itself over repeats, with human labels).

Pass rules of the built-in metrics
----------------------------------
==================  =================================================================
context_relevance   some retrieved context scores 4 or 5 (the judge's "hit")
context_precision   none (the score is rank-aware; read the mean)
context_recall      every statement of the reference answer is supported ("complete")
faithfulness        every claim is supported ("faithful")
answer_relevancy    verdict "relevant" (score 4-5)
answer_correctness  verdict "correct" (score 4-5)
abstention          verdict "abstained" (graded on out-of-corpus questions only)
==================  =================================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam.metrics.judge.prompts import LANGUAGES, METRICS, RUBRICS, Rubric
from ragexam.metrics.judge.replies import Verdict, validate_reply

__all__ = ["JudgeMetric", "BUILTIN", "builtin_metric", "INPUTS", "APPLIES_TO"]

#: The inputs a metric may need (``question`` is always there).
INPUTS = ("answer", "contexts", "ground_truth", "second_answer")
#: Which questions a metric grades in ``ragexam score``.
APPLIES_TO = ("all", "answerable", "unanswerable")


@dataclass(frozen=True)
class JudgeMetric:
    """One judge metric (see the module docstring).

    :ivar name: the metric's name (a column in tables, ``<name>`` in ``check --min``).
    :ivar question: one line: what the judge is asked.
    :ivar score_range: ``(lowest, highest)`` score.
    :ivar custom: ``True`` for a metric from a rubric file.
    :ivar source: where a custom metric came from (its file), else ``"ragexam"``.
    """

    name: str
    question: str
    needs: Tuple[str, ...]
    applies_to: str
    labels: Tuple[str, ...]
    score_range: Tuple[float, float]
    unit_scale: Tuple[int, ...]
    ordinal: bool
    rubrics: Mapping[str, Rubric] = field(hash=False, compare=False)
    validator: Callable[[Dict[str, Any], int], Verdict] = field(hash=False, compare=False)
    pass_rule: Optional[Callable[[float, Optional[str], Mapping[str, Any]], bool]] = field(
        default=None, hash=False, compare=False)
    pass_text: Optional[str] = None
    unit_rule: Optional[Callable[[Optional[float], Optional[str], Mapping[str, Any]], List[int]]] = field(
        default=None, hash=False, compare=False)
    custom: bool = False
    source: str = "ragexam"

    def rubric(self, language: str) -> Rubric:
        """The rubric in ``language`` (``ko``/``en``); a custom rubric written in one language uses it
        whatever the judge's language."""
        if language in self.rubrics:
            return self.rubrics[language]
        return next(iter(self.rubrics.values()))

    def validate(self, obj: Dict[str, Any], n_contexts: int) -> Verdict:
        """The reply contract: a :class:`Verdict`, or ``ReplyError`` / ``NotApplicable``."""
        return self.validator(obj, n_contexts)

    def passed(self, score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> Optional[bool]:
        """Whether a judged result passes (``None`` when the metric has no pass rule or it was not judged)."""
        if self.pass_rule is None or score is None:
            return None
        return bool(self.pass_rule(score, label, details))

    def units(self, score: Optional[float], label: Optional[str], details: Mapping[str, Any]) -> List[int]:
        """The values of one judged result on the metric's agreement units."""
        if self.unit_rule is not None:
            return self.unit_rule(score, label, details)
        return [int(score)] if score is not None else []

    def label_rank(self, label: Optional[str]) -> int:
        """Position of ``label`` from worst (0) to best; -1 for an unknown label."""
        return self.labels.index(label) if label in self.labels else -1


def _cr_units(score, label, details) -> List[int]:
    return [int(s) for s in details.get("scores", [])]


def _cp_units(score, label, details) -> List[int]:
    return [int(bool(u)) for u in details.get("useful", [])]


def _binary(positive: str):
    def rule(score, label, details) -> List[int]:
        return [1 if label == positive else 0] if label is not None else []
    return rule


def _rubrics(name: str) -> Dict[str, Rubric]:
    return {lang: RUBRICS[(name, lang)] for lang in LANGUAGES}


def _builtin(name: str, question: str, needs: Tuple[str, ...], applies_to: str, labels: Tuple[str, ...],
             score_range: Tuple[float, float], unit_scale: Tuple[int, ...], ordinal: bool, pass_rule, pass_text,
             unit_rule) -> JudgeMetric:
    return JudgeMetric(name, question, needs, applies_to, labels, score_range, unit_scale, ordinal, _rubrics(name),
                       lambda obj, n, _m=name: validate_reply(_m, obj, n_contexts=n), pass_rule, pass_text, unit_rule)


#: The built-in metrics by name (:data:`ragexam.metrics.judge.prompts.METRICS`, plus ``pairwise``).
BUILTIN: Dict[str, JudgeMetric] = {m.name: m for m in (
    _builtin("context_relevance", "how relevant is each retrieved context to the question (1-5)", ("contexts",),
             "all", (), (1.0, 5.0), (1, 2, 3, 4, 5), True,
             lambda s, lab, d: max(d.get("scores") or [0]) >= 4, "some context scores 4 or 5", _cr_units),
    _builtin("context_precision", "is each retrieved context useful for reaching the reference answer; "
             "rank-aware share", ("contexts", "ground_truth"), "answerable", (), (0.0, 1.0), (0, 1), False,
             None, None, _cp_units),
    _builtin("context_recall", "which share of the reference answer's statements do the contexts support",
             ("contexts", "ground_truth"), "answerable", ("incomplete", "complete"), (0.0, 1.0), (0, 1), False,
             lambda s, lab, d: lab == "complete", "every statement supported", _binary("complete")),
    _builtin("faithfulness", "is every claim of the answer supported by the contexts", ("answer", "contexts"),
             "all", ("unfaithful", "faithful"), (0.0, 1.0), (0, 1), False,
             lambda s, lab, d: lab == "faithful", "every claim supported", _binary("faithful")),
    _builtin("answer_relevancy", "does the answer address the question asked (not: is it correct)", ("answer",),
             "all", ("irrelevant", "partially_relevant", "relevant"), (1.0, 5.0), (1, 2, 3, 4, 5), True,
             lambda s, lab, d: lab == "relevant", "verdict relevant (4-5)", None),
    _builtin("answer_correctness", "does the answer agree with the ground truth (1-5)", ("answer", "ground_truth"),
             "answerable", ("incorrect", "partially_correct", "correct"), (1.0, 5.0), (1, 2, 3, 4, 5), True,
             lambda s, lab, d: lab == "correct", "verdict correct (4-5)", None),
    _builtin("abstention", "(out-of-corpus questions) did the answer decline", ("answer",), "unanswerable",
             ("answered", "abstained"), (0.0, 1.0), (0, 1), False,
             lambda s, lab, d: lab == "abstained", "verdict abstained", _binary("abstained")),
    _builtin("pairwise", "which of two answers is better (asked in both orders)", ("answer", "second_answer",
             "ground_truth"), "all", ("2", "tie", "1"), (0.0, 1.0), (0, 1), False, None, None,
             lambda s, lab, d: [{"1": 1, "2": 0}[lab]] if lab in ("1", "2") else []),
)}


def builtin_metric(name: str) -> JudgeMetric:
    """The built-in metric ``name``; ``InputError`` listing the names otherwise."""
    m = BUILTIN.get(name)
    if m is None:
        from ragexam.errors import InputError

        raise InputError(f"unknown judge metric {name!r}; expected one of {', '.join(METRICS)} or a custom "
                         "rubric file (--rubric FILE)", source="judge", field="metric")
    return m


def resolve_metrics(metrics: Sequence[Any], custom: Mapping[str, JudgeMetric] = {}) -> List[JudgeMetric]:
    """Names or :class:`JudgeMetric` objects as metric objects (names looked up in ``custom``, then the
    built-ins); a name given twice is kept once."""
    out: Dict[str, JudgeMetric] = {}
    for m in metrics:
        if isinstance(m, JudgeMetric):
            obj = m
        elif m in custom:
            obj = custom[m]
        else:
            obj = builtin_metric(m)
        if obj.name in out and out[obj.name] is not obj and out[obj.name].rubrics != obj.rubrics:
            from ragexam.errors import InputError

            raise InputError(f"two different metrics are named {obj.name!r} ({out[obj.name].source} and "
                             f"{obj.source}); give one of them another name", source="judge", field="metric")
        out.setdefault(obj.name, obj)
    return list(out.values())
