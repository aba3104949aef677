"""``ragexam pairwise``: two pipelines' answers to the same questions, judged side by side.

:func:`pairwise_answers` pairs the answers of pipeline ``a`` and pipeline ``b`` question by question
(answers are joined to pipelines as in :func:`ragexam.analysis.answers.scoring.prepare_rows`: the answer's
``pipeline`` field), and judges each pair in both orders (:mod:`ragexam.metrics.judge.pairwise`: a
verdict counts only when both orders agree).  A question that only one of the two answered is a
pair with a missing answer: ``unjudged`` (``no_answer`` / ``no_second_answer``), listed, never dropped.
"""

from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from ragexam.analysis.answers.files import NO_PIPELINE, AnswerRecord
from ragexam.data.schema import QASet
from ragexam.errors import InputError
from ragexam.metrics.judge import Judge

__all__ = ["pairwise_answers", "pairwise_pairs"]


def pairwise_pairs(qa, answers: Sequence[AnswerRecord], a: str, b: str, *, answers_source: str = "answers"):
    """The :class:`~ragexam.metrics.judge.PairItem` s of pipelines ``a`` and ``b``, one per question of ``qa``."""
    from ragexam.metrics.judge import PairItem
    from ragexam.metrics.judge.builtin.pairwise import METRIC as PAIRWISE

    if a == b:
        raise InputError(f"received the same pipeline {a!r} twice; expected two different pipelines",
                         source=PAIRWISE.name, field="b")
    by = {}
    for r in answers:
        if r.query_id not in qa:
            raise InputError(f"query_id {r.query_id!r} is not a question of the QA set ({qa.source})",
                             source=answers_source, line=r.line, field="query_id")
        key = (r.pipeline or NO_PIPELINE, r.query_id)
        if key in by:
            raise InputError(f"two answers for question {r.query_id!r} in pipeline {key[0]!r}", source=answers_source,
                             line=r.line, field="pipeline")
        by[key] = r
    names = sorted({p for p, _ in by})
    for p in (a, b):
        if p not in names:
            raise InputError(f"no answers of pipeline {p!r}; the answers have: {', '.join(names) or 'none'}",
                             source=answers_source, field="pipeline")
    pairs = []
    for q in qa:
        ra, rb = by.get((a, q.query_id)), by.get((b, q.query_id))
        pairs.append(PairItem(q.query_id, q.question, ra.answer if ra is not None else None,
                              rb.answer if rb is not None else None, q.ground_truth))
    return pairs


def pairwise_answers(qa: QASet, answers: Sequence[AnswerRecord], judge: Judge, *, a: str, b: str, repeat: int = 1,
                     answers_source: str = "answers", progress: Optional[Callable[[int, int], None]] = None,
                     seed: Optional[int] = None):
    """Judge pipeline ``b``'s answers against pipeline ``a``'s (see the module docstring); returns a
    :class:`~ragexam.metrics.judge.PairwiseRun` (``to_dict()`` is its JSON)."""
    from ragexam.metrics.judge import judge_pairs

    pairs = pairwise_pairs(qa, answers, a, b, answers_source=answers_source)
    run = judge_pairs(judge, pairs, repeat=repeat, name_a=a, name_b=b, progress=progress, seed=seed)
    missing: List[str] = [p.item_id for p in pairs if p.answer_a is None or p.answer_b is None]
    if missing:
        run.notes.append(f"{len(missing)} question(s) lack an answer of {a!r} or {b!r} and are unjudged: "
                         + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    return run
