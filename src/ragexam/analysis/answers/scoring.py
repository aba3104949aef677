"""Scoring generated answers: text metrics, judge metrics and stage attribution in one pass.

:func:`score_answers` runs the stages of :mod:`ragexam.analysis.answers.stages` -- join the answers to the
questions (and, with a run, to each pipeline's retrieval), then

* **text metrics** against ``ground_truth``: sentence-level BLEU (``effective_order``), chrF and
  ROUGE-L F per answer, and corpus BLEU / corpus chrF / mean ROUGE-L per pipeline and question
  type over the *answerable* questions (out-of-corpus questions are graded by abstention, not by
  overlap with a "not in the documents" reference).  For Korean data BLEU and ROUGE-L use the
  ``ko-kiwi`` morpheme tokenizer (whitespace tokens make CJK overlap meaningless), otherwise
  ``13a`` / whitespace; the signatures say which.
* **judge metrics** (when a :class:`~ragexam.metrics.judge.Judge` is given; default the four of
  :data:`~ragexam.metrics.judge.registry.DEFAULT_METRICS`): each metric grades the answers of the
  questions it applies to (:attr:`JudgeMetric.applies_to <ragexam.metrics.judge.metric.JudgeMetric>`:
  ``answer_correctness``, ``context_precision`` and ``context_recall`` the answerable questions,
  ``abstention`` the out-of-corpus ones, the others and custom rubrics all); summaries with
  coverage, a bootstrap interval of the mean, the pass rate and its interval per pipeline and per
  question type; with ``repeat >= 2`` the canonical verdicts, ties, flip share and the judge's
  agreement with itself.
* **judge vs evidence** (:meth:`ScoreReport.judge_vs_evidence`): where a judge metric has an
  evidence-based twin computed without an LLM from the same contexts -- ``context_precision`` vs
  ``evidence_precision`` (the same rank-aware formula over "this context contains an evidence
  span"), ``context_recall`` vs ``evidence_recall`` (share of the question's evidence spans found
  in the contexts), ``context_relevance`` passing vs ``evidence_hit`` (some context contains
  evidence) -- both side by side with the questions on which they disagree.
* **stage attribution** (:mod:`ragexam.analysis.answers.diagnosis`) with the verdict sources recorded in
  its signature

-- and summarizes them into :class:`ScoreReport`, whose ``summary`` is the typed
:class:`~ragexam.storage.score_summary.ScoreSummary` (``score.json``).

Pipelines: an answer's ``pipeline`` field, else ``--pipeline``, else (with a run) the run's
first (baseline) pipeline, else ``(answers)``.  Every question of the QA set gets a row per
pipeline; a question without an answer is listed as ``unjudged`` (``no_answer``), never dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

from ragexam.analysis.answers import stages
from ragexam.analysis.answers.files import AnswerRecord
from ragexam.analysis.answers.options import MetricLike, ScoreOptions, check_min_coverage
from ragexam.analysis.answers.rows import (EVIDENCE_TWINS, OK_LABELS, PASS_SUFFIX, TEXT_METRICS, AnswerRow,
                                           CsvValue, evidence_per_context, item_id)
from ragexam.analysis.answers.scored import ScoreReport
from ragexam.analysis.answers.stages import HumanInput, Progress, judge_jobs, plan_judging, prepare_rows
from ragexam.data.schema import QASet
from ragexam.metrics.judge import Judge
from ragexam.storage.score_summary import SCORE_FORMAT

__all__ = ["AnswerRow", "ScoreReport", "ScoreOptions", "prepare_rows", "score_answers", "score_joined",
           "plan_judging", "judge_jobs", "item_id", "save_score", "check_min_coverage", "evidence_per_context",
           "SCORE_FORMAT", "TEXT_METRICS", "OK_LABELS", "EVIDENCE_TWINS", "PASS_SUFFIX"]


def score_joined(joined: stages.Joined, judge: Optional[Judge] = None, metrics: Optional[Sequence[MetricLike]] = None,
                 *, human: Optional[HumanInput] = None, progress: Progress = None) -> ScoreReport:
    """The stages after the join: the text metrics (beside the judge's calls when there is a judge), the judge
    on ``metrics``, the stage attribution, the summary."""
    text = stages.text(joined, beside=judge is not None)
    judged = stages.judge(joined, judge, metrics, progress=progress)
    trusted = stages.trust(joined, judged, progress=progress)
    texts = text.result()
    return stages.summarize(joined, texts, judged, stages.attribute(joined, judged, trusted), human=human,
                            trusted=trusted)


def score_answers(qa: QASet, answers: Sequence[AnswerRecord], options: Optional[ScoreOptions] = None, *,
                  run: object = None, judge: Optional[Judge] = None,
                  judge_metrics: Optional[Sequence[MetricLike]] = None, human: Optional[HumanInput] = None,
                  progress: Progress = None, **settings: object) -> ScoreReport:
    """Score ``answers`` to the questions of ``qa`` (see the module docstring).

    :param options: every setting (:class:`~ragexam.analysis.answers.options.ScoreOptions`), or its fields as
        keywords (``correct_if=``, ``judge_metrics=``, ``k=``, ``seed=``, ...).
    :param run: the run folder's :class:`~ragexam.storage.runfolder.RunData` (or a ``ragexam.run(...)`` result)
        the answers were generated from: retrieval ranks and contexts.
    :param judge: a :class:`~ragexam.metrics.judge.Judge`, or ``None`` for text metrics only.
    :param judge_metrics: which judge metrics: names (built-ins, or the judge's custom metrics) or
        :class:`~ragexam.metrics.judge.metric.JudgeMetric` objects (default
        :data:`~ragexam.metrics.judge.registry.DEFAULT_METRICS`).
    :param human: human labels, ``{(pipeline or None, query_id): {metric: label}}``
        (:func:`ragexam.analysis.judging.agreement.read_human_labels`): each judged metric with labels gets a
        prediction-powered estimate beside its judge mean (:meth:`ScoreReport.ppi`).
    :param progress: ``progress(done, total)`` of the judge's calls.
    """
    options = options if options is not None else ScoreOptions(**settings)  # type: ignore[arg-type]
    options.check_judge(judge=judge is not None, human=bool(human))
    return score_joined(stages.join(qa, answers, run=run, options=options), judge, judge_metrics, human=human,
                        progress=progress)


def save_score(report: ScoreReport, directory: Union[str, Path]) -> Path:
    """Write ``score.json``, ``per_answer.csv`` and (with a judge) ``judgments.jsonl`` to ``directory``
    (:func:`ragexam.storage.runfolder.write_score_folder`)."""
    from ragexam.llm.redact import redact_written
    from ragexam.storage.runfolder import write_score_folder

    judgments = None
    if report.judge_run is not None:
        judgments = [j.to_dict() for j in report.judge_run.judgments]
    return write_score_folder(directory, report.summary, csv_rows(report), judgments, redact=redact_written())


#: the columns only some lines of ``per_answer.csv`` have: a traced answer's exam match, an answer's segments
_SOMETIMES = ("exam_id", "exam_match", "exam_cosine", "segment")


def csv_rows(report: ScoreReport) -> List[Dict[str, CsvValue]]:
    """The lines of ``per_answer.csv`` (:meth:`AnswerRow.csv_row`); with ``--by``, each answer's segments
    (``segment``: joined by ``|`` when it is in several).  The file has the first line's columns, and the
    traced answers' and segments' columns when any line has them."""
    by = report.settings.by
    rows = []
    for r in report.rows:
        row = r.csv_row(report.judge_metrics)
        if by is not None and r.record is not None:
            from ragexam.analysis.answers.segments import segment_names

            row["segment"] = "|".join(segment_names(r, by))
        rows.append(row)
    if not rows:
        return rows
    extra = [k for k in _SOMETIMES if k not in rows[0] and any(k in row for row in rows)]
    if not extra:
        return rows
    columns = [*rows[0], *extra]
    return [{k: row.get(k) for k in columns} for row in rows]
