"""What happens after a run or a score: record it in the history, and prepare what its HTML report shows.

``ragexam run`` / ``ragexam demo`` call :func:`record_run`; ``ragexam score`` calls
:func:`record_score` and, with ``--report``, :func:`score_report_inputs` (whose result
:func:`ragexam.report.html.write_report` renders).  These are thin helpers over
:class:`ragexam.storage.history.History`, so the Python API can do the same::

    res = ragexam.run("it_helpdesk", "it_helpdesk")
    run_id = record_run(res.summary, res.per_question)       # res.summary["run_id"] == run_id
    write_report(res.summary, res.per_question, "report.html")

**A score in the history** (kind ``score``) is stored as the ``score.json`` object plus (its typed
:class:`~ragexam.storage.score_summary.ScoreSummary`'s :meth:`~ragexam.storage.score_summary.ScoreSummary.recorded`)

* ``run_id``: ``score-<UTC time>-<6 hex>``; ``kind``: ``"score"``; ``scored_run``: the
  ``run_id`` of the retrieval run given with ``--run`` (else ``None``);
* ``config``: the score's settings; ``dataset``: its counts plus ``qa``, ``corpus`` and the
  hashes of the scored run's dataset (so ``ragexam runs`` groups it with that run);
* ``results``: :func:`ragexam.analysis.answers.scored.segment_result` per pipeline — ``{pipeline: {"n", "metrics",
  "coverage"}}`` with the corpus ``chrf`` and ``bleu``, the mean ``rouge_l`` (``[0, 1]``, over
  answerable questions), ``ok_share`` (the share of the pipeline's decided answers whose stage label is
  ``ok`` or ``abstained_ok``; an answer labelled unjudged counts neither way) and, with a judge, each judge
  metric's mean over judged items and its coverage; ``ci95`` is empty (``ragexam check``
  bootstraps intervals from the rows);
* per-question rows (``questions`` table, :class:`ragexam.storage.runfolder.RunRow`): ``pipeline``,
  ``query_id``, ``type``, ``answerable``, ``first_rank``, the sentence-level ``chrf``, ``bleu``,
  ``rouge_l``, ``ok_share`` (1 or 0; empty when undecided), each judge metric's score under its name (empty when not
  judged) and ``stats``: the summable BLEU and chrF statistics, so a corpus score and its
  bootstrap interval can be recomputed.  The answers and labels themselves are in
  ``attribution.questions`` of the summary and in ``per_answer.csv``.

``ragexam show ID`` prints a score record with :func:`ragexam.report.console.print_score_summary`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.analysis.answers.scored import ScoreReport
from ragexam.storage.runfolder import RunData, RunRow
from ragexam.storage.score_summary import ScoreSummary
from ragexam.storage.summary import RunSummary, Summary
from ragexam.types import JsonObject

__all__ = ["record_run", "score_summary", "score_rows", "record_score", "score_answers_for_report",
           "score_report_summary", "score_report_inputs", "with_ground_truth"]

PathLike = Union[str, Path]


def _record(summary: Summary, rows: Sequence[Mapping[str, Any]], history_path: Optional[PathLike], kind: str) -> str:
    from ragexam.storage.history import History

    hist = History(history_path)
    rid = hist.record_run(summary, rows, kind=kind)
    if rid != summary.run_id:
        # The id was taken by a different record and this one was stored as <id>.N: store it again
        # with that id inside, so the history, the printed id and summary.json all agree.
        hist.delete(rid)
        summary.run_id = rid
        rid = hist.record_run(summary, rows, kind=kind)
    return rid


def record_run(summary: RunSummary, per_question: Sequence[Mapping[str, Any]],
               history_path: Optional[PathLike] = None) -> str:
    """Record a ``ragexam run`` result (its :class:`~ragexam.storage.summary.RunSummary`) in the history (default
    path: see :mod:`ragexam.storage.history`).

    Returns the record id, which is ``summary.run_id`` (``summary`` is updated in the rare case
    the id had to change because a different record already holds it).
    """
    return _record(summary, per_question, history_path, "run")


def score_summary(report: ScoreReport, run_summary: Optional[RunSummary] = None) -> ScoreSummary:
    """The history's record of a :class:`ragexam.analysis.answers.scored.ScoreReport` (module docstring;
    :meth:`ragexam.storage.score_summary.ScoreSummary.recorded`)."""
    return report.summary.recorded(run_summary)


def score_rows(report: ScoreReport) -> List[RunRow]:
    """The per-question rows of a score record (:meth:`ragexam.analysis.answers.scored.ScoreReport.typed_rows`)."""
    return report.typed_rows()


def record_score(report: ScoreReport, run_summary: Optional[RunSummary] = None,
                 history_path: Optional[PathLike] = None) -> str:
    """Record a score in the history (kind ``score``); returns its id."""
    return _record(score_summary(report, run_summary), score_rows(report), history_path, "score")


def score_answers_for_report(report: ScoreReport, pipelines: Optional[Sequence[str]] = None) -> Dict[str, Dict[str, Any]]:
    """``{pipeline: {query_id: entry}}`` for :func:`ragexam.report.html.write_report`: the answer
    text, the ground truth, the verdict (the correctness verdict for answerable questions, the
    abstention verdict otherwise), the judge score and reasoning when a judge ran, and the stage."""
    from ragexam.metrics.judge.builtin.abstention import METRIC as ABSTENTION
    from ragexam.metrics.judge.builtin.answer_correctness import METRIC as CORRECTNESS

    out: Dict[str, Dict[str, Any]] = {}
    keep = set(pipelines) if pipelines is not None else None
    for r in report.rows:
        if keep is not None and r.pipeline not in keep:
            continue
        entry: Dict[str, Any] = {"ground_truth": r.question.ground_truth}
        if r.answer is not None:
            entry["answer"] = r.answer
        s = r.stage
        if s is not None:
            entry["stage"] = s.label + (f" ({s.reason})" if s.reason else "")
            verdict = s.to_record().answer_verdict
            if verdict is not None:
                entry["verdict"] = verdict
        main = (CORRECTNESS if r.question.answerable else ABSTENTION).name
        sc = r.judge.get(main)
        if sc is not None:
            if sc.score is not None:
                entry["score"] = sc.score
            reasoning = (sc.details or {}).get("reasoning")
            if reasoning:
                entry["reasoning"] = reasoning
        out.setdefault(r.pipeline, {})[r.query_id] = entry
    return out


def score_report_summary(run_summary: RunSummary, report: ScoreReport) -> RunSummary:
    """A copy of the run's summary with the score's stage attribution (``attribution``: ``{pipeline: {type:
    {stage: count}}}``) and, with a judge, its judge section (``judge``), of the pipelines the run has."""
    summary = RunSummary.from_dict(run_summary.to_dict())
    names = summary.pipeline_names
    att = report.summary.attribution
    summary.attribution = {p: m for p, m in (att.by_type if att is not None else {}).items() if p in names}
    if report.summary.judge is not None:  # the judge table of the report (means, pass rates, intervals)
        summary.judge = report.summary.judge.for_pipelines(names)
    return summary


def score_report_inputs(run: RunData, report: ScoreReport) -> Tuple[RunSummary, List[RunRow], Dict[str, Dict[str, Any]]]:
    """``(summary, per_question, answers)`` for :func:`ragexam.report.html.write_report`: the report of
    ``run`` (a :class:`ragexam.storage.runfolder.RunData`) with the score's answers, verdicts, judge
    reasoning and stage per question, and its attribution matrix."""
    summary = with_ground_truth(score_report_summary(run.summary, report))
    answers = score_answers_for_report(report, list(summary.attribution))
    return summary, run.per_question, answers


def with_ground_truth(summary: Union[RunSummary, JsonObject]) -> Union[RunSummary, JsonObject]:
    """A copy of a run's summary (a :class:`~ragexam.storage.summary.RunSummary` or its JSON object, returned as
    the same) whose missed entries carry the question's ``ground_truth``.

    ``ragexam run`` stores it in every missed entry; a summary written before it did
    (``ragexam-run/1``) gets it from the question set named by ``config.qa`` when that is a bundled
    set or an existing file (else the entries are left as they are, and the report says the ground
    truth is not available).
    """
    from ragexam.storage.summary import RunSummary

    typed = isinstance(summary, RunSummary)
    out = RunSummary.from_dict(summary.to_dict()) if typed else dict(summary)
    if typed:
        entries = [e for es in out.missed.values() for e in es if e.ground_truth is None]
        name = out.config.qa or out.dataset.qa
    else:
        missed = out.get("missed")
        if not isinstance(missed, Mapping):
            return out
        entries = [e for es in missed.values() for e in es or [] if isinstance(e, Mapping) and "ground_truth" not in e]
        name = (out.get("config") or {}).get("qa") or (out.get("dataset") or {}).get("qa")
    if not entries or not isinstance(name, str) or not name:
        return out
    from ragexam.data.datasets import is_bundled
    from ragexam.data.loaders import load_qa

    if not (is_bundled(name) or Path(name).is_file()):
        return out
    qa = load_qa(name)
    if typed:
        for e in entries:
            if e.query_id in qa:
                e.ground_truth = qa[e.query_id].ground_truth
        return out
    out["missed"] = {p: [dict(e, ground_truth=qa[e["query_id"]].ground_truth)
                         if isinstance(e, Mapping) and "ground_truth" not in e and e.get("query_id") in qa else e
                         for e in entries or []] for p, entries in out["missed"].items()}
    return out
