"""Traced answers in a score: production traffic graded without a question set, and traced questions that are exam
questions graded against the exam's evidence as well.

An answers file written by ``ragexam traces import`` names each answer by its trace id and carries the question as
the user asked it (``question``).  :func:`split` sorts the answers of a score:

* an answer whose ``query_id`` is a question of the QA set is joined to that question by id, as always;
* an answer with a ``question`` whose id is not one is a **traced** answer: it is its own question (the trace id,
  the traced text) and, when a QA set is given, it is matched to the exam's questions
  (:func:`ragexam.questions.traces_sample.match_exam`: the same text after normalisation -- ``exact`` -- or a
  near duplicate: e5 cosine at least the threshold ``traces sample`` measured, 0.92, and the same numbers --
  ``near``).  A matched one takes the exam question's evidence, relevant documents, reference answer, type and
  answerability, so its retrieved contexts are graded against the exam's evidence (evidence hit, precision and
  recall, as for a run's questions) and the judge's reference metrics apply to it; the match is recorded
  (:class:`~ragexam.storage.score_summary.ExamMatching` in the summary, ``exam_id``, ``exam_match`` and
  ``exam_cosine`` in ``per_answer.csv``);
* any other answer is an error naming its line: without ``--qa`` every answer needs its ``question``.

Without a reference the judge grades the reference-free metrics by default (:func:`reference_free_metrics`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from ragexam.analysis.answers.files import AnswerRecord
from ragexam.data.schema import QASet, Question
from ragexam.errors import InputError
from ragexam.storage.score_summary import ExamMatch, ExamMatching

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.retrieval.embedders import Embedder

__all__ = ["Split", "split", "reference_free_metrics", "is_traced", "exam_id", "exam_match", "TRACED"]

#: ``Question.metadata`` key of a traced question (its value: the exam match, or ``None``)
TRACED = "traced"


@dataclass
class Split:
    """The answers of a score sorted (module docstring): those joined to the QA set by id, the traced ones with
    their questions, and how the traced questions were matched to the exam (``None`` without a QA set)."""

    by_id: List[AnswerRecord]
    traced: List[Tuple[AnswerRecord, Question]]
    matching: Optional[ExamMatching] = None


def is_traced(q: Question) -> bool:
    """Whether ``q`` is a traced answer's own question (:func:`split`)."""
    return TRACED in q.metadata


def exam_match(q: Question) -> Optional[ExamMatch]:
    """How a traced question matched the exam (``None``: it did not, or it is not traced)."""
    match = q.metadata.get(TRACED)
    return match if isinstance(match, ExamMatch) else None


def exam_id(q: Question) -> Optional[str]:
    """The exam question a question is: its own id (a question of the QA set), the matched one (a traced question
    that is an exam question), or ``None`` (a traced question that is not)."""
    if not is_traced(q):
        return q.query_id
    match = exam_match(q)
    return match.exam_id if match is not None else None


def reference_free_metrics() -> List[str]:
    """The built-in judge metrics that need no reference answer (context relevance, faithfulness, answer
    relevancy, abstention ...: every per-answer metric whose inputs leave out ``ground_truth``), in the registry's
    order: what ``ragexam score`` judges by default on traced answers without an exam."""
    from ragexam.metrics.judge.registry import builtin_metrics

    return [n for n, m in builtin_metrics().items() if m.per_answer and "ground_truth" not in m.needs]


def _unknown(rec: AnswerRecord, qa: Optional[QASet], source: str) -> InputError:
    if qa is None:
        return InputError("has no 'question' field, and no question set was given to look its query_id up in; "
                          "expected an answers file whose lines carry the question (`ragexam traces import` writes "
                          "one), or pass --qa QA", source=source, line=rec.line, field="question")
    return InputError(f"query_id {rec.query_id!r} is not a question of the QA set ({qa.source}); expected the ids of "
                      "the QA file (or a 'question' field with the question's text, as `ragexam traces import` "
                      "writes)", source=source, line=rec.line, field="query_id")


def split(qa: Optional[QASet], answers: Sequence[AnswerRecord], *, source: str = "answers",
          threshold: Optional[float] = None, embedder: Optional["Embedder"] = None) -> Split:
    """Sort ``answers`` (module docstring); ``threshold``: the cosine of a near match (default
    :data:`ragexam.questions.traces_sample.DEFAULT_THRESHOLD`); ``embedder``: default the offline e5."""
    from ragexam.questions.traces_sample import DEFAULT_THRESHOLD, match_exam

    by_id: List[AnswerRecord] = []
    traced: List[AnswerRecord] = []
    for r in answers:
        if qa is not None and r.query_id in qa:
            by_id.append(r)
        elif r.question is not None:
            traced.append(r)
        else:
            raise _unknown(r, qa, source)
    if qa is None or not traced:
        return Split(by_id, [(r, _traced_question(r, None, None)) for r in traced])
    threshold = DEFAULT_THRESHOLD if threshold is None else threshold
    if embedder is None:
        from ragexam.retrieval.e5 import E5Embedder

        embedder = E5Embedder()
    exam = list(qa.questions)
    distinct = list(dict.fromkeys(r.question or "" for r in traced))  # a question asked often is matched once
    found_of = dict(zip(distinct, match_exam(distinct, [q.question for q in exam], threshold=threshold,
                                             embedder=embedder)))
    matches = {text: ExamMatch(text, exam[m.index].query_id, m.how, m.cosine) for text, m in found_of.items()
               if m is not None}
    out = []
    for r in traced:
        match = matches.get(r.question or "")
        if match is not None:
            match.answers += 1
        out.append((r, _traced_question(r, match, exam[found_of[r.question or ""].index] if match else None)))
    return Split(by_id, out, _matching(qa, threshold, list(matches.values()), len(traced), embedder))


def _traced_question(rec: AnswerRecord, match: Optional[ExamMatch], exam: Optional[Question]) -> Question:
    text = rec.question or ""
    if exam is None:
        return Question(rec.query_id, text, metadata={TRACED: None})
    return dataclasses.replace(exam, query_id=rec.query_id, question=text, metadata={TRACED: match}, line=rec.line)


def _matching(qa: QASet, threshold: float, matches: List[ExamMatch], n: int, embedder: "Embedder") -> ExamMatching:
    from ragexam.signature import Signature

    near = sum(m.answers for m in matches if m.match == "near")
    name = str(getattr(embedder, "identity", type(embedder).__name__))
    sig = Signature([("match", "normalized-text+near-dup"), ("near_dup", f"cos>={threshold:g}+same-digits"),
                     ("embedder", name)])
    return ExamMatching(qa=str(qa.source) if qa.source is not None else None, threshold=threshold, embedder=name,
                        n_traced=n, n_exact=sum(m.answers for m in matches) - near, n_near=near, matches=matches,
                        signature=str(sig))
