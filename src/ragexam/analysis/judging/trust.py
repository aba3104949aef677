"""How far a judge's numbers can be trusted, as recorded: judge-check results read back, keyed by the data set.

``ragexam judge-check`` (:mod:`ragexam.analysis.judging.check`) records each metric's verdict in the LLM cache
(kind ``judge-check``) under two keys: one for the judge (model, endpoint), the metric's rubric hash, the
scoring **and the data set it was measured on** (:func:`dataset_of`: the question set's name and a hash of its
questions), and one without the data set that always holds the latest check of that judge, rubric and scoring.
:func:`recorded_check` reads them back -- the check on *this* data set when there is one, else the latest on
another set, marked ``same_set=False`` so every message says where the verdict comes from.

What ``score`` (and later ``check``, the report and serve) asks:

* :func:`recorded_check` -- the recorded trust verdict of one model + rubric + scoring + data set, a
  :class:`RecordedCheck`;
* :func:`recorded_warnings` -- the lines ``score`` prints: a metric whose check did not separate, had too few
  questions for a verdict, or was measured on another data set;
* :func:`untrusted` -- ``{metric: why}`` of the metrics not shown to separate (stage attribution marks the
  verdicts that rest on them, :mod:`ragexam.analysis.answers.diagnosis`);
* :func:`ragexam.analysis.judging.check.evidence_contrast` -- the verdict of the contrast ``score`` already has
  in hand: the judge's value of each context beside whether it holds the question's evidence (no LLM call).

This module imports nothing of :mod:`~ragexam.analysis.judging.check` (which records through it).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

__all__ = ["DataSet", "dataset_of", "RecordedCheck", "record_check", "recorded_check", "recorded_warnings",
           "untrusted", "RECORD_FORMAT"]

#: the format of a recorded check (the key's format tag): /2 since checks leave the quotation rule out, take the
#: evidence as answer-correctness positives and floor their intervals (issue 41)
RECORD_FORMAT = "ragexam-judge-check/2"


@dataclass(frozen=True)
class DataSet:
    """A question set as a check names it: ``name`` (the file's name or the bundled name), ``sha`` (12 hex digits
    of the SHA-256 of its questions: ids, texts, ground truths, evidence, answerable) and ``n`` questions."""

    name: str
    sha: str
    n: int

    def __str__(self) -> str:
        return f"{self.name} ({self.n} questions, {self.sha})"


def dataset_of(qa: Any) -> DataSet:
    """The :class:`DataSet` of a loaded question set (:class:`~ragexam.data.schema.QASet`)."""
    rows = [[q.query_id, q.question, q.ground_truth, list(q.evidence or ()), bool(q.answerable)] for q in qa]
    blob = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return DataSet(_name(getattr(qa, "source", None)), hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12],
                   len(rows))


def _name(source: Optional[str]) -> str:
    """A question set's name: the bundled set's name (``it_helpdesk``), else its file's name."""
    if not source:
        return "questions"
    path = Path(str(source))
    if len(path.parts) >= 3 and path.parts[-3] == "samples" and path.parent.parent.parent.name == "data":
        return path.parent.name
    return path.name or str(source)


@dataclass(frozen=True)
class RecordedCheck:
    """One recorded judge-check of one metric under one scoring: its ``verdict`` (see
    :data:`~ragexam.analysis.judging.check.VERDICTS`) and sentence, the AUC with its interval (``None`` when none
    could be drawn), its sizes, when it ran, the data set it was measured on, and whether that is the data set
    asked about (``same_set``)."""

    metric: str
    scoring: str
    verdict: str
    text: str
    auc: Optional[float]
    low: Optional[float]
    high: Optional[float]
    n: int
    n_judged: int
    n_questions: int
    checked: str
    dataset: str
    dataset_sha: str
    same_set: bool = True

    @property
    def separates(self) -> bool:
        """The judge was shown to separate on this metric (on whatever set it was measured)."""
        return self.verdict == "separates"

    def where(self) -> str:
        """``"on it_helpdesk, 2026-12-01"`` or ``"on another data set (handbook.jsonl, 2026-12-01), not on this
        one"``."""
        when = self.checked[:10]
        if self.same_set:
            return f"on {self.dataset}, {when}"
        return f"on another data set ({self.dataset}, {when}), not on this one"

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _key(judge: Any, metric: str, rubric_sha: str, scoring: str, dataset_sha: Optional[str]) -> str:
    from ragexam.llm.cache import request_key

    identity = {"format": RECORD_FORMAT, "kind": "judge-check", "model": judge.model, "endpoint": judge.endpoint,
                "metric": metric, "rubric_sha": rubric_sha, "scoring": scoring}
    if dataset_sha is not None:
        identity["dataset_sha"] = dataset_sha
    return request_key(identity)


def record_check(judge: Any, check: Any, dataset: DataSet) -> None:
    """Record every separation of a :class:`~ragexam.analysis.judging.check.JudgeCheck` in the judge's cache (the
    module docstring's two keys)."""
    if judge.cache is None:
        return
    from ragexam.llm.cache import utc_now

    for m, mc in check.checks.items():
        sha = check.judge_run.rubrics[m]["sha"]
        for sc, sep in mc.separations.items():
            a = sep.auc
            value = RecordedCheck(m, sc, sep.verdict, sep.text, a.auc if a else None, a.low if a else None,
                                  a.high if a else None, len(mc.items), sep.n_scored, sep.n_questions, utc_now(),
                                  dataset.name, dataset.sha).to_dict()
            for key in (_key(judge, m, sha, sc, dataset.sha), _key(judge, m, sha, sc, None)):
                judge.cache.put(key, "judge-check", judge.model, judge.endpoint, value)


def recorded_check(judge: Any, metric: str, rubric_sha: str, scoring: str,
                   dataset: Optional[DataSet] = None) -> Optional[RecordedCheck]:
    """The recorded check of ``metric`` by this judge, rubric and scoring: on ``dataset`` when one was recorded,
    else the latest on any set (``same_set`` False when that is not ``dataset``); ``None`` when none was."""
    if judge.cache is None:
        return None
    got = judge.cache.get(_key(judge, metric, rubric_sha, scoring, dataset.sha)) if dataset is not None else None
    got = got or judge.cache.get(_key(judge, metric, rubric_sha, scoring, None))
    if not got:
        return None
    rec = RecordedCheck(**{**got, "same_set": True})
    return RecordedCheck(**{**rec.to_dict(), "same_set": dataset is None or rec.dataset_sha == dataset.sha})


def _checks(judge: Any, run: Any, dataset: Optional[DataSet]) -> Dict[str, RecordedCheck]:
    out = {}
    for m, r in run.rubrics.items():
        rec = recorded_check(judge, m, r["sha"], run.scoring.get(m, "sample"), dataset)
        if rec is not None:
            out[m] = rec
    return out


def recorded_warnings(judge: Any, run: Any, dataset: Optional[DataSet] = None) -> List[str]:
    """Lines for ``ragexam score``: each metric of the judge ``run`` whose recorded judge-check (same model,
    endpoint, rubric and scoring) did not separate, or separated on another data set than ``dataset``."""
    out = []
    for m, rec in _checks(judge, run, dataset).items():
        if not rec.separates:
            out.append(f"judge-check of {m} with this judge ({rec.where()}): {rec.text}; read its scores with care")
        elif not rec.same_set:
            out.append(f"judge-check of {m} with this judge separated {rec.where()}: run `ragexam judge-check` on "
                       "this question set to know whether it does here")
    return out


def untrusted(judge: Any, run: Any, dataset: Optional[DataSet] = None) -> Dict[str, str]:
    """``{metric: why}`` of the metrics of ``run`` not shown to separate: no recorded check, a check that did not
    separate, or one measured on another data set."""
    checks = _checks(judge, run, dataset)
    out = {}
    for m in run.rubrics:
        rec = checks.get(m)
        if rec is None:
            out[m] = f"{m}: no judge-check of this judge"
        elif not rec.separates:
            out[m] = f"{m}: judge-check {rec.verdict.replace('_', ' ')} ({rec.where()})"
        elif not rec.same_set:
            out[m] = f"{m}: judge-check separated {rec.where()}"
    return out

