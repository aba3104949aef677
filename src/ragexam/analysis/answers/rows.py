"""One row per (pipeline, question) of a score: the answer, its retrieval and every verdict about it.

:class:`AnswerRow` is the sheet the stages of ``ragexam score`` (:mod:`ragexam.analysis.answers.stages`) fill in:
the join puts the question, the answer, its contexts and its retrieval on it, the text stage its sentence scores,
the judge its :class:`~ragexam.metrics.judge.ItemScore` per metric, the attribution the stage that lost it.  It is
written as a line of ``per_answer.csv`` (:meth:`AnswerRow.csv_row`) and recorded as a
:class:`~ragexam.storage.runfolder.RunRow` (:meth:`AnswerRow.typed_row`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.analysis.answers.diagnosis import StageResult
from ragexam.analysis.answers.files import AnswerRecord
from ragexam.analysis.answers.traffic import exam_match, is_traced
from ragexam.data.schema import Question
from ragexam.metrics.judge import ItemScore
from ragexam.storage.runfolder import RunRow
from ragexam.metrics.judge.registry import builtin_metrics

__all__ = ["AnswerRow", "item_id", "evidence_per_context", "TEXT_METRICS", "OK_LABELS", "UNDECIDED", "EVIDENCE_TWINS",
           "PASS_SUFFIX", "CsvValue"]

TEXT_METRICS = ("bleu", "chrf", "rouge_l")
#: a judge metric's pass rate is the metric ``<metric>_pass`` (1 / 0 per judged answer)
PASS_SUFFIX = "_pass"
#: judge metric -> (its evidence-based twin, how the judge's per-answer value is read): the metrics' own
#: ``evidence_twin`` (:mod:`ragexam.metrics.judge.builtin`)
EVIDENCE_TWINS = {n: m.evidence_twin for n, m in builtin_metrics().items() if m.evidence_twin is not None}
#: the stage labels counted as ok in ``ok_share``
OK_LABELS = ("ok", "abstained_ok")
#: the stage label of an answer nothing decided: outside ``ok_share`` (neither ok nor not ok)
UNDECIDED = "unjudged"
#: a cell of ``per_answer.csv`` (lists and dicts are written as JSON)
CsvValue = Union[None, bool, int, float, str, Dict[str, List[int]]]
#: the evidence-based twins of one answer: flags per context, and the three values
Evidence = Dict[str, Union[List[bool], float]]


def item_id(pipeline: str, query_id: str) -> str:
    """The judge item id of one answer: ``"<query_id> @ <pipeline>"``."""
    return f"{query_id} @ {pipeline}"


@dataclass
class AnswerRow:
    """One (pipeline, question): the answer, its retrieval and every verdict about it."""

    pipeline: str
    question: Question
    record: Optional[AnswerRecord]
    k: int
    first_rank: Optional[int] = None
    retrieved: Optional[bool] = None
    retrieval_source: str = "unknown"
    evidence_split: bool = False  # the run's miss at k was caused by the chunking
    contexts: Optional[Tuple[str, ...]] = None
    context_ids: Optional[Tuple[str, ...]] = None
    contexts_source: Optional[str] = None
    text: Dict[str, Optional[float]] = field(default_factory=dict)
    text_stats: Dict[str, List[int]] = field(default_factory=dict)
    phrase: Optional[str] = None
    judge: Dict[str, ItemScore] = field(default_factory=dict)
    stage: Optional[StageResult] = None
    evidence: Evidence = field(default_factory=dict)  # evidence_precision/recall/hit, flags

    @property
    def query_id(self) -> str:
        return self.question.query_id

    @property
    def item_id(self) -> str:
        return item_id(self.pipeline, self.question.query_id)

    @property
    def answer(self) -> Optional[str]:
        return self.record.answer if self.record is not None else None

    @property
    def ok(self) -> Optional[bool]:
        """True when the stage label is ok (or abstained_ok), False when another label was decided, None when
        nothing decided it (label ``unjudged``: no answer, no correctness source, the judge failed...) and before
        attribution: an answer nobody could grade is not counted as not ok."""
        return None if self.stage is None or self.stage.label == UNDECIDED else self.stage.label in OK_LABELS

    def csv_row(self, judge_metrics: Sequence[str]) -> Dict[str, CsvValue]:
        """The line of ``per_answer.csv`` (docs/run-format.md)."""
        q, s = self.question, self.stage
        row: Dict[str, CsvValue] = {
            "pipeline": self.pipeline, "query_id": q.query_id, "type": q.type, "answerable": q.answerable,
            "first_rank": self.first_rank, "k": self.k, "retrieved": self.retrieved,
            "retrieval_source": self.retrieval_source, "contexts_source": self.contexts_source,
        }
        for m in TEXT_METRICS:
            row[m] = self.text.get(m)
        row["abstain_phrase"] = self.phrase
        for m in judge_metrics:
            sc = self.judge.get(m)
            row[f"{m}_status"] = sc.status if sc is not None else None
            row[f"{m}_score"] = sc.score if sc is not None else None
            row[f"{m}_label"] = sc.label if sc is not None else None
            row[f"{m}{PASS_SUFFIX}"] = _flag(sc.passed) if sc is not None else None
            row[f"{m}_reason"] = sc.reason if sc is not None else None
            if sc is not None and sc.n_repeats > 1:
                row[f"{m}_verdicts"] = "|".join(map(str, sc.verdicts)) or None
                row[f"{m}_tie"] = sc.tie
        for name in ("evidence_precision", "evidence_recall", "evidence_hit"):
            if name in self.evidence:
                row[name] = self.evidence[name]
        if s is not None:
            row.update({"correct": s.inputs.correct, "faithful": s.inputs.faithful, "abstained": s.inputs.abstained,
                        "label": s.label, "reason": s.reason})
        row["ok"] = self.ok
        if is_traced(q):  # a traced answer: the exam question it is (analysis/answers/traffic.py)
            m = exam_match(q)
            row.update({"exam_id": m.exam_id if m else None, "exam_match": m.match if m else None,
                        "exam_cosine": m.cosine if m else None})
        row["note"] = self.record.metadata.get("note") if self.record is not None else None
        row["answer"] = self.answer
        row["stats"] = self.text_stats or None
        return row

    def typed_row(self, judge_metrics: Sequence[str], pass_metrics: Sequence[str] = ()) -> RunRow:
        """The row as recorded (history) and read back (score folder): the text metrics, ``ok_share``
        (1 or 0; None when undecided: :attr:`ok`), each judge metric's score under its name (None when not judged), for the metrics
        in ``pass_metrics`` (those with a pass rule) ``<metric>_pass`` (1 or 0; None when not judged)
        and the summable statistics of the corpus metrics."""
        metrics: Dict[str, Optional[float]] = {m: fmt.finite(self.text.get(m)) for m in ("chrf", "bleu", "rouge_l")}
        metrics["ok_share"] = None if self.ok is None else float(self.ok)
        for m in judge_metrics:
            sc = self.judge.get(m)
            metrics[m] = fmt.finite(sc.score) if sc is not None and sc.judged else None
            if m in pass_metrics:
                metrics[m + PASS_SUFFIX] = float(sc.passed) if sc is not None and sc.passed is not None else None
        q = self.question
        return RunRow(pipeline=self.pipeline, query_id=q.query_id, type=q.type, answerable=bool(q.answerable),
                      first_rank=self.first_rank, metrics=metrics,
                      stats={k: [float(x) for x in v] for k, v in self.text_stats.items()})


def _flag(x: Optional[bool]) -> Optional[int]:
    return None if x is None else int(x)



def evidence_per_context(evidence: Sequence[str], contexts: Sequence[str]) -> Optional[Evidence]:
    """The evidence-based twins of the judge's context metrics for one answer, from its contexts in
    retrieved order (the text-level rule of :class:`ragexam.data.evidence.EvidenceMatcher`):

    * ``flags``: per context, whether it contains some evidence span of the question;
    * ``evidence_precision``: :func:`~ragexam.metrics.judge.replies.average_precision` of the flags
      (the formula of the judge's ``context_precision``);
    * ``evidence_recall``: share of the question's evidence spans found in some context;
    * ``evidence_hit``: 1.0 when some context contains evidence, else 0.0.

    ``None`` when the question has no evidence or there are no contexts.
    """
    if not evidence or not contexts:
        return None
    from ragexam.data.evidence import EvidenceMatcher
    from ragexam.metrics.judge.replies import average_precision

    matcher = EvidenceMatcher()
    units = [(str(i), e) for i, e in enumerate(evidence)]
    covered = [set(matcher.covered(c, units)) for c in contexts]
    flags = [bool(c) for c in covered]
    found = set().union(*covered)
    return {"flags": flags, "evidence_precision": average_precision(flags),
            "evidence_recall": len(found) / len(units), "evidence_hit": float(any(flags))}
