"""The trust stage of ``ragexam score``: how far each judged metric's numbers were shown to be worth reading.

A judge's mean has an interval that looks exact whatever the judge is worth.  Between the judge stage and the
stage attribution (:mod:`ragexam.analysis.answers.stages`), :func:`trust` gives every judged metric a
:class:`~ragexam.storage.score_summary.JudgeTrust` -- a verdict and its sentence -- from two measurements:

* **the judge-check** (:mod:`ragexam.analysis.judging.check`) of this judge (model, endpoint), rubric, scoring and
  question set, read from the LLM cache (:func:`ragexam.analysis.judging.trust.recorded_check`).  When none is
  recorded for this question set, ``score`` runs one (``ScoreOptions.judge_check``, the default) on a seeded
  sample of ``judge_check_sample`` questions (:data:`~ragexam.analysis.judging.check.SCORE_SAMPLE`) over the
  corpus of the run (or ``--corpus``; a bundled question set's own corpus), and records it, so the next score
  with the same judge pays nothing.  It is not run -- and the metric reads ``unchecked`` with the reason -- with
  ``--no-judge-check``, without a corpus, or when the set has fewer than
  :data:`~ragexam.analysis.judging.check.MIN_QUESTIONS` questions with evidence and a reference (a verdict needs
  them: the calls would buy "too few").  A metric no contrast can measure (one that judges the answer alone:
  abstention, answer relevancy, most custom rubrics) reads ``no_contrast``.  A check recorded only on another
  question set reads ``other_set`` and says so.
* **the judge beside the evidence** of these answers, no extra call: for a metric that scores each context
  (context relevance, context precision), the judge's value of every context beside whether that context holds
  the question's evidence, read as a judge-check's ``contexts`` contrast
  (:func:`~ragexam.analysis.judging.check.evidence_contrast`; questions are the clusters, pipelines pooled).  When
  it does not separate -- the judge passes contexts without evidence as often as those with it -- or is
  inverted, that is the metric's verdict, whatever a check elsewhere said.

``ragexam check`` gates only on a metric whose verdict is ``separates`` or ``weakly``
(:data:`~ragexam.storage.score_summary.GATED`); the stage attribution marks the labels that rest on the others
(:mod:`ragexam.analysis.answers.diagnosis`, ``judge_unchecked``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.analysis.answers.rows import AnswerRow
from ragexam.analysis.judging.check import (MIN_QUESTIONS, JudgeCheck, build_contrast, check_judge, contrast_kind,
                                            contrast_questions, evidence_contrast, judge_alone)
from ragexam.analysis.judging.trust import DataSet, RecordedCheck, dataset_of, recorded_check
from ragexam.data.schema import Corpus, QASet
from ragexam.metrics.judge import Judge, JudgeItem, JudgePlan, JudgeRun
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.storage.score_summary import JudgeSection, JudgeTrust, TrustCheck

__all__ = ["Trusted", "trust", "plan_check", "CheckSource", "check_source", "compared_trust"]

Progress = Optional[Callable[[int, int], None]]
#: the verdicts of the judge beside the evidence that overrule a check: it does not tell them apart here
_OVERRULE = ("does_not", "inverted")


@dataclass
class Trusted:
    """The trust stage's product: ``{metric: JudgeTrust}``, the check this score ran (``None`` when none ran), and
    its notes (what the check cost, and the ``warnings``: a line per metric not shown to separate)."""

    trust: Dict[str, JudgeTrust] = field(default_factory=dict)
    check: Optional[JudgeCheck] = None
    notes: List[str] = field(default_factory=list)
    #: the notes about metrics not shown to separate (without what the check cost)
    warnings: List[str] = field(default_factory=list)

    def unverified(self) -> Dict[str, str]:
        """``{metric: why}`` of the metrics whose judge was not shown to separate on this question set."""
        return {m: f"{m}: {_SHORT.get(t.verdict, t.verdict)}" for m, t in self.trust.items() if not t.gated}


#: a verdict in a few words (the attribution's caveats, the notes)
_SHORT = {"separates": "separates", "weakly": "separates only weakly", "does_not": "does not separate",
          "inverted": "inverted scale", "too_few": "too few questions for a verdict", "unknown": "no verdict",
          "other_set": "checked on another question set only", "unchecked": "not checked",
          "no_contrast": "no judge-check can measure it"}


# -- where the check's questions and corpus come from ----------------------------------------------------------


@dataclass
class CheckSource:
    """What the check would be built from: the question set and its :class:`DataSet`, the corpus (a
    :class:`~ragexam.data.schema.Corpus`, a path or a bundled name, loaded when first asked for; ``None`` with
    ``why`` when there is none or too few questions)."""

    qa: QASet
    dataset: DataSet
    ref: object = None
    why: Optional[str] = None
    _loaded: Optional[Corpus] = field(default=None, repr=False)

    @property
    def corpus(self) -> Optional[Corpus]:
        if self._loaded is None and self.ref is not None:
            from ragexam.data.loaders import load_corpus

            self._loaded = self.ref if isinstance(self.ref, Corpus) else load_corpus(self.ref)  # type: ignore
        return self._loaded


def _bundled_corpus(qa: QASet) -> Optional[Path]:
    """A bundled question set's own corpus (:mod:`ragexam.data.datasets`)."""
    from ragexam.data.datasets import BUNDLED, bundled_path

    path = Path(str(qa.source or ""))
    for name, kinds in BUNDLED.items():
        if "corpus" in kinds and path == bundled_path(name, "qa"):
            return bundled_path(name, "corpus")
    return None


def check_source(qa: QASet, corpus: object, run_corpus: Optional[str]) -> CheckSource:
    """The :class:`CheckSource` of a score: ``corpus`` (``--corpus``), else the run's, else a bundled set's own;
    none (with the reason) without one, or when the set has fewer than :data:`MIN_QUESTIONS` questions with evidence
    and a reference."""
    dataset = dataset_of(qa)
    usable = len(contrast_questions(qa))
    if usable < MIN_QUESTIONS:
        return CheckSource(qa, dataset, None, f"{dataset.name} has {fmt.plural(usable, 'question')} with evidence "
                                              f"and a reference; a judge-check needs at least {MIN_QUESTIONS}")
    ref = corpus if corpus is not None else (run_corpus or _bundled_corpus(qa))
    if ref is None:
        return CheckSource(qa, dataset, None, "no corpus to build the judge-check's contrast set from: pass --run DIR "
                                              "(a run records its corpus) or --corpus")
    return CheckSource(qa, dataset, ref)


# -- the stage ---------------------------------------------------------------------------------------------------


def _checkable(run_defs: Dict[str, JudgeMetric]) -> Dict[str, JudgeMetric]:
    return {m: d for m, d in run_defs.items() if contrast_kind(d) is not None}


def _same_language(judge: Judge, language: str) -> Judge:
    """``judge`` with its prompt language fixed to the score's (the check then judges with the same rubric)."""
    fixed = copy.copy(judge)
    fixed.language = language
    return fixed


def _recorded(judge: Judge, run: JudgeRun, dataset: Optional[DataSet]) -> Dict[str, RecordedCheck]:
    """The recorded check of each metric of ``run``; without a ``dataset`` (answers with their own questions) the
    latest on any set, as from another set (``same_set=False``: it was not measured on these questions)."""
    out = {}
    for m, r in run.rubrics.items():
        rec = recorded_check(judge, m, r["sha"], run.scoring.get(m, "sample"), dataset)
        if rec is not None:
            out[m] = rec if dataset is not None else replace(rec, same_set=False)
    return out


def _run_check(judge: Judge, run: JudgeRun, source: CheckSource, metrics: Dict[str, JudgeMetric], sample: int,
               seed: int, progress: Progress, notes: List[str]) -> JudgeCheck:
    """Judge-check ``metrics`` on a seeded sample of the question set (recorded in the judge's cache)."""
    contrast = build_contrast(source.qa, source.corpus, list(metrics.values()), limit=sample, seed=seed,
                              notes=notes)
    check = check_judge(_same_language(judge, run.language), contrast, seed=seed, progress=progress,
                        dataset=source.dataset, settings={"sample": sample, "seed": seed, "by": "score"})
    made = sum(len(items) for items in contrast.values())
    n_q = len({c.query_id for items in contrast.values() for c in items})
    calls = check.judge_run.usage.get("calls", 0)
    notes.append(f"judge-check of {judge.model} on a seeded sample of {fmt.plural(n_q, 'question')} of "
                 f"{source.dataset.name} ({', '.join(metrics)}): {fmt.plural(made, 'judgment')}, "
                 f"{fmt.plural(calls, 'call')} made; recorded, so the next score with this judge pays nothing "
                 "(--no-judge-check skips it)")
    return check


def _as_check(rec: RecordedCheck, ran: bool) -> TrustCheck:
    return TrustCheck(verdict=rec.verdict, text=rec.text, scoring=rec.scoring, auc=rec.auc, low=rec.low,
                      high=rec.high, n_questions=rec.n_questions, dataset=rec.dataset, same_set=rec.same_set,
                      checked=rec.checked, ran=ran)


def _beside_evidence(rows: Sequence[AnswerRow], metric: str, defn: JudgeMetric, seed: int) -> Optional[TrustCheck]:
    """The judge beside the evidence of these answers (module docstring), for a metric that scores each context;
    ``None`` for another metric or when no context has an evidence flag."""
    if contrast_kind(defn) != "contexts":
        return None
    from ragexam.analysis.answers.segments import pair_key
    from ragexam.analysis.answers.traffic import is_traced

    data: List[Tuple[str, str, float, bool]] = []  # (answer, question, value, holds): a question's answers together
    for r in rows:
        sc = r.judge.get(metric)
        flags = r.evidence.get("flags") if r.evidence else None
        if sc is None or not sc.judged or not isinstance(flags, list):
            continue
        values = defn.units(sc.score, sc.label, sc.details)
        question = pair_key(r) if is_traced(r.question) else r.query_id  # traced: its exam question, else its text
        data += [(r.item_id, question, float(v), bool(f)) for v, f in zip(values, flags)]
    if not data:
        return None
    sep = evidence_contrast(metric, "sample", data, seed=seed)
    a = sep.auc
    return TrustCheck(verdict=sep.verdict, text=sep.text, scoring="sample", auc=a.auc if a else None,
                      low=a.low if a else None, high=a.high if a else None, n_questions=sep.n_questions)


def _verdict(metric: str, check: Optional[TrustCheck], evidence: Optional[TrustCheck], why: str) -> JudgeTrust:
    """The metric's verdict (module docstring): the judge beside the evidence when it does not separate, else the
    check on this question set, else ``other_set``, else ``why`` it was not checked."""
    if evidence is not None and evidence.verdict in _OVERRULE:
        return JudgeTrust(metric, evidence.verdict, f"beside the evidence of these answers, {evidence.text} (no "
                                                    "extra call: the contexts holding the evidence against those that "
                                                    "do not)", check, evidence)
    if check is None:
        return JudgeTrust(metric, "no_contrast" if why.startswith("no judge-check") else "unchecked", why, None,
                          evidence)
    when = f"{check.dataset}, {'run by this score' if check.ran else (check.checked or '')[:10]}"
    if not check.same_set:
        return JudgeTrust(metric, "other_set", f"{check.text} (judge-check on another data set ({when}), not on this "
                                               "one)", check, evidence)
    return JudgeTrust(metric, check.verdict, f"{check.text} (judge-check on {when})", check, evidence)


#: why no check runs for answers without a question set (traced answers that carry their own questions)
NO_SET = ("not run: no question set to build it from (answers with their own questions; pass --qa, a set with "
          "evidence and references, to check the judge)")


def trust(rows: Sequence[AnswerRow], judge: Optional[Judge], run: Optional[JudgeRun], source: Optional[CheckSource],
          *, check: bool = True, sample: int = 20, seed: int = 12345, progress: Progress = None) -> Trusted:
    """The trust stage (module docstring) of a judge ``run`` over ``rows``: ``source`` is where a check would be
    built from (:func:`check_source`; ``None`` without a question set: no check, the metrics read ``unchecked``),
    ``check`` whether to run one when none is recorded for this question set."""
    if judge is None or run is None:
        return Trusted()
    defs = {m: d for m in run.rubrics if (d := run.definition(m)) is not None}
    notes: List[str] = []
    recorded = _recorded(judge, run, source.dataset if source is not None else None)
    todo = {m: d for m, d in _checkable(defs).items() if m not in recorded or not recorded[m].same_set}
    ran: Optional[JudgeCheck] = None
    if todo and check and source is not None and source.ref is not None:
        ran = _run_check(judge, run, source, todo, sample, seed, progress, notes)
        recorded.update(_recorded(judge, run, source.dataset))
    skipped = ("skipped (--no-judge-check)" if not check else source.why if source is not None else NO_SET) \
        or "not checked"
    out: Dict[str, JudgeTrust] = {}
    for m, d in defs.items():
        why = (f"no judge-check can measure {m} (it judges the answer alone)" if contrast_kind(d) is None
               else f"{m}: judge-check {skipped}")
        rec = recorded.get(m)
        out[m] = _verdict(m, _as_check(rec, ran is not None and m in todo) if rec else None,
                          _beside_evidence(rows, m, d, seed), why)
    warnings = [f"{m}: {t.text}; read its numbers as the judge's opinion, not a measurement (a stronger "
                "--judge-model may separate)" for m, t in out.items() if t.verdict in ("does_not", "inverted")]
    warnings += [f"{m}: {t.text}" for m, t in out.items() if t.verdict in ("too_few", "unknown", "other_set",
                                                                           "unchecked")]
    return Trusted(out, ran, notes + warnings, warnings)


def plan_check(rows: Sequence[AnswerRow], judge: Judge, metrics: Sequence[JudgeMetric],
               source: Optional[CheckSource], *, sample: int = 20, seed: int = 12345
               ) -> Tuple[Optional[JudgePlan], str]:
    """What :func:`trust` would send for ``metrics`` (the score's, as definitions): ``(plan, why)`` -- the plan of
    the judge-check's calls (nothing is sent), or ``None`` and why no check would run."""
    checkable = {d.name: d for d in metrics if contrast_kind(d) is not None}
    if not checkable:
        return None, "no judged metric can be judge-checked (each judges the answer alone)"
    if source is None:
        return None, NO_SET
    if source.ref is None:
        return None, source.why or "no corpus"
    language = judge.resolve_language([JudgeItem(r.item_id, r.question.question, r.answer, (),
                                                 r.question.ground_truth) for r in rows])
    mode = judge.resolve_scoring(send=False)
    todo = {}
    for m, d in checkable.items():
        rec = recorded_check(judge, m, d.rubric(language).sha, judge.metric_scoring(d, mode), source.dataset)
        if rec is None or not rec.same_set:
            todo[m] = d
    if not todo:
        return None, f"recorded on {source.dataset.name} for {', '.join(checkable)}: nothing to send"
    contrast = build_contrast(source.qa, source.corpus, list(todo.values()), limit=sample, seed=seed)
    plan = judge_alone(_same_language(judge, language)).plan(None, {m: [c.item for c in items] for m, items in contrast.items()})
    return plan, (f"judge-check of {', '.join(todo)} on a seeded sample of {sample} questions of "
                  f"{source.dataset.name} (--no-judge-check skips it)")


# -- two scores compared ---------------------------------------------------------------------------------------


def _side(jd: Optional[JudgeSection], metric: str) -> Optional[JudgeTrust]:
    return jd.trust.get(metric) if jd is not None else None


def compared_trust(a: Optional[JudgeSection], b: Optional[JudgeSection], columns: Sequence[str]
                   ) -> Tuple[Dict[str, Dict[str, str]], List[str]]:
    """For ``ragexam compare`` of two scores (judge sections ``a`` and ``b``, the compared metric ``columns``):
    ``({judged metric: {"A": verdict, "B": verdict}}, notes)`` -- a note per judged metric whose judge was not shown
    to separate good from bad on a side (its difference is then the judge's opinion), or whose verdict comes from
    another question set, saying which side and why."""
    from ragexam.analysis.answers.rows import PASS_SUFFIX

    judged = [m for m in dict.fromkeys(c[:-len(PASS_SUFFIX)] if c.endswith(PASS_SUFFIX) else c for c in columns)
              if _side(a, m) is not None or _side(b, m) is not None]
    verdicts: Dict[str, Dict[str, str]] = {}
    notes: List[str] = []
    for m in judged:
        sides = {"A": _side(a, m), "B": _side(b, m)}
        verdicts[m] = {k: t.verdict if t is not None else "unrecorded" for k, t in sides.items()}
        weak = {k: t for k, t in sides.items() if t is None or not t.gated}
        if not weak:
            continue
        why = "; ".join(f"{k}: {_SHORT.get(t.verdict, t.verdict)} -- {t.text}" if t is not None else
                        f"{k}: no verdict recorded (scored by an older ragexam)" for k, t in weak.items())
        notes.append(f"{m}: the judge was not shown to separate good from bad in {' and '.join(weak)} ({why}); read "
                     "its difference as the judge's opinion, not a measurement")
    return verdicts, notes
