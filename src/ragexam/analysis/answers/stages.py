"""The data's journey of ``ragexam score`` (docs/architecture.md), one function per stage with a typed product.

::

    from ragexam.analysis.answers import stages as S

    opts = ScoreOptions(correct_if=parse_correct_if("chrf>=0.5"))    # every setting, checked once
    joined = S.join(qa, answers, run=run, options=opts)              # -> Joined: a row per (pipeline, question)
    text = S.text(joined, beside=judge is not None)                  # -> TextJob, running beside the judge's calls
    judged = S.judge(joined, judge, metrics)                         # -> Judged (Judged() without a judge)
    trusted = S.trust(joined, judged)                                # -> Trusted: each judged metric's verdict
    texts = text.result()                                            # -> Texts: sentence and corpus text metrics
    attributed = S.attribute(joined, judged, trusted)                # -> Attributed: the stage that lost each answer
    report = S.summarize(joined, texts, judged, attributed, trusted=trusted)  # -> ScoreReport (.summary)

:func:`ragexam.analysis.answers.scoring.score_answers` and ``ragexam score`` (:func:`ragexam.api.score`) compose
them.  Each stage fills in its part of the rows (:class:`~ragexam.analysis.answers.rows.AnswerRow`) and returns what
it computed over them; the summary is made of *segments* of the rows (a pipeline, a pipeline's question type:
:mod:`ragexam.analysis.answers.scored`).  Notes are each stage's own, in stage order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam import fmt
from ragexam.analysis.answers.diagnosis import Attribution, StageInputs, attribute_all, evidence_in_contexts
from ragexam.analysis.answers.files import NO_PIPELINE, AnswerRecord, corpus_of_run, run_contexts
from ragexam.analysis.answers.options import MetricLike, ScoreOptions
from ragexam.analysis.answers.rows import EVIDENCE_TWINS, AnswerRow, evidence_per_context
from ragexam.analysis.answers.scored import (ScoreReport, _type, human_corrected, judge_settings, judge_stat,
                                             pass_metrics, segment_result, segments, vs_evidence)
from ragexam.analysis.answers.traffic import is_traced, split
from ragexam.analysis.answers.trusted import Trusted, check_source
from ragexam.analysis.answers import trusted as trust_stage
from ragexam.analysis.judging.agreement import RepeatAgreement, human_label_notes
from ragexam.data.schema import QASet
from ragexam.errors import InputError
from ragexam.exec.beside import Beside
from ragexam.metrics.judge import Judge, JudgeItem, JudgePlan, JudgeRun
from ragexam.metrics.judge.builtin.abstention import METRIC as ABSTENTION
from ragexam.metrics.judge.builtin.answer_correctness import METRIC as CORRECTNESS
from ragexam.metrics.judge.builtin.faithfulness import METRIC as FAITHFULNESS
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.metrics.judge.registry import builtin_metrics, default_metrics
from ragexam.metrics.text.answers import AnswerStatistics, answer_statistics, corpus_scores
from ragexam.metrics.verdicts import ABSTAIN_PHRASES, ABSTAIN_PHRASES_VERSION, is_abstention
from ragexam.signature import Signature
from ragexam.storage.runfolder import RunData
from ragexam.storage.score_summary import (ExamMatching, JudgeSection, MetricDefinition, ScoreDataset,
                                           ScoreSettings, ScoreSummary, SegmentsSection, TextScores)

if TYPE_CHECKING:  # pragma: no cover
    from ragexam.retrieval.embedders import Embedder

__all__ = ["Joined", "TextJob", "Texts", "Judged", "Trusted", "Attributed", "join", "text", "judge", "trust",
           "attribute", "summarize", "prepare_rows", "as_run_data", "judge_jobs", "plan_judging", "plan_check",
           "HumanInput"]

#: human labels as read (:func:`ragexam.analysis.judging.agreement.read_human_labels`):
#: ``{(pipeline or None, query_id): {metric: label}}``
HumanInput = Mapping[Tuple[Optional[str], str], Mapping[str, object]]
Progress = Optional[Callable[[int, int], None]]


# -- 1. join ----------------------------------------------------------------------------------------------------


@dataclass
class Joined:
    """The answers joined to the questions and the run: a row per (pipeline, question) -- a question without an
    answer is a row too (``unjudged``: ``no_answer``), never dropped -- and a row per traced answer
    (:mod:`ragexam.analysis.answers.traffic`), the question set (``None``: traced answers alone), the language,
    how traced questions were matched to the exam, and what the join noticed."""

    qa: Optional[QASet]
    rows: List[AnswerRow]
    options: ScoreOptions
    run: Optional[RunData] = None
    language: str = "en"
    notes: List[str] = field(default_factory=list)
    matching: Optional[ExamMatching] = None

    @property
    def traced(self) -> bool:
        """Whether some row is a traced answer (production traffic)."""
        return any(is_traced(r.question) for r in self.rows)


def as_run_data(run: object) -> Optional[RunData]:
    """``run`` as a :class:`~ragexam.storage.runfolder.RunData`: a RunData as is, a
    :class:`~ragexam.analysis.exam.run.RunResult` (``ragexam.run(...)``) with the chunk texts it saw, or
    ``None``."""
    if run is None or isinstance(run, RunData):
        return run
    if hasattr(run, "chunk_records") and hasattr(run, "per_question") and hasattr(run, "summary"):
        chunks: Dict[str, Dict[str, object]] = {}
        for c in run.chunk_records():
            chunks.setdefault(c.chunker, {})[c.chunk_id] = c
        return RunData(summary=run.summary, per_question=list(run.per_question), source=str(run.summary.run_id or
                                                                                            "run"), chunks=chunks)
    raise InputError(f"received {type(run).__name__}; expected a run folder's RunData or a RunResult",
                     source="score", field="run")


def _check_join(run: Optional[RunData], options: ScoreOptions) -> None:
    if run is not None and options.pipeline is not None and not run.has_pipeline(options.pipeline):
        raise InputError(f"no pipeline {options.pipeline!r} in the run; it has: {', '.join(run.pipelines)}",
                         source=run.source, field="pipeline")



def _shared_questions(qa: QASet, answered: Sequence[AnswerRecord], run: RunData, notes: List[str]) -> None:
    """The run must be of the answers' questions: none of them in the run is an error naming ``--run`` (retrieval
    would be unknown for every answer, silently); only some, a note saying how many were matched.  A run without
    per-question rows is not checked."""
    in_run = {r.query_id for r in run.per_question}
    asked = list(dict.fromkeys(r.query_id for r in answered))
    if not in_run or not asked:
        return
    shared = sum(1 for q in asked if q in in_run)
    of_set = run.dataset.get("qa")
    what = (f"the run has {fmt.plural(len(in_run), 'question')}" + (f" (question set {of_set!r})" if of_set else "")
            + f", the answers answer {len(asked)} of the {len(qa)} questions of {qa.source or 'the question set'}")
    if not shared:
        raise InputError(f"the run shares no questions with the answers: {what}; 0 in common, so retrieval would be "
                         "unknown for every answer. Fix: pass --run a run of this question set (`ragexam run --qa "
                         "QA ... --out DIR` with the --qa of this score), or leave --run out",
                         source=run.source, field="--run")
    if shared < len(asked):
        notes.append(f"--run {run.source}: only {shared} of the answers' {len(asked)} questions are in the run "
                     f"({what}); retrieval is unknown for the other {len(asked) - shared} -- is the run of this "
                     "question set?")


def _context_metrics() -> str:
    """The metrics ``score`` judges by default that read the contexts: ``a and b``."""
    built_in = builtin_metrics()
    return " and ".join(n for n in default_metrics("score") if "contexts" in built_in[n].needs)

def _default_pipeline(answers: Sequence[AnswerRecord], run: Optional[RunData], pipeline: Optional[str],
                      notes: List[str]) -> str:
    """The pipeline of answers that name none: ``pipeline``, else the run's first (a note when the run has
    several), else ``(answers)``."""
    if pipeline is not None:
        return pipeline
    if run is None or not run.pipelines:
        return NO_PIPELINE
    default = run.pipelines[0]
    unnamed = [r for r in answers if r.pipeline is None and r.contexts is None]
    if unnamed and len(run.pipelines) != 1:
        notes.append(f"{fmt.plural(len(unnamed), 'answer')} without a 'pipeline' field or contexts were joined "
                     f"with the run's first pipeline {default!r} for retrieval ranks, but the run has "
                     f"{len(run.pipelines)} pipelines, so their contexts are unknown and {_context_metrics()} "
                     "will be unjudged (no_contexts); pass --pipeline NAME to grade them on that "
                     "pipeline's retrieved chunks")
    return default


def _by_key(answers: Sequence[AnswerRecord], run: Optional[RunData], options: ScoreOptions, default: str
            ) -> Dict[Tuple[str, str], Tuple[AnswerRecord, bool]]:
    """``{(pipeline, query_id): (answer, whether its pipeline was named)}`` (the run's one pipeline needs no
    naming); two answers to one question of one pipeline are an error."""
    only = run is not None and len(run.pipelines) == 1
    by_key: Dict[Tuple[str, str], Tuple[AnswerRecord, bool]] = {}
    for r in answers:
        name = r.pipeline or default
        explicit = r.pipeline is not None or options.pipeline is not None or only
        if (name, r.query_id) in by_key:
            raise InputError(f"two answers for question {r.query_id!r} in pipeline {name!r} (one names the "
                             "pipeline, one is joined to it by default); give every answer a pipeline",
                             source=options.answers_source, line=r.line, field="pipeline")
        by_key[(name, r.query_id)] = (r, explicit)
    return by_key


class _RunContexts:
    """The texts of each question's top ``k`` chunks of a pipeline, from the run (read once per pipeline and k;
    the corpus is loaded only for a ``ragexam-run/1`` folder, which did not store them)."""

    def __init__(self, run: RunData, corpus: object, notes: List[str]) -> None:
        self.run, self.corpus, self.notes = run, corpus, notes
        self.loaded: Optional[object] = None
        self.kept: Dict[Tuple[str, int], Dict[str, List[Tuple[str, str]]]] = {}

    def of(self, pipeline: str, k: int, query_id: str) -> List[Tuple[str, str]]:
        key = (pipeline, k)
        if key not in self.kept:
            if self.loaded is None and not self.run.has_chunk_texts:
                self.loaded = corpus_of_run(self.run, self.corpus)
            self.kept[key] = run_contexts(self.run, pipeline, k, corpus=self.loaded, notes=self.notes)
        return self.kept[key].get(query_id, [])


def _retrieval(row: AnswerRow, run: Optional[RunData]) -> None:
    """The row's retrieval: from the run's row (``first_rank <= k``, the chunking's cut), else from the answer's
    own contexts (an evidence string in them), else unknown; out-of-corpus questions need none."""
    q = row.question
    rr = run.row(row.pipeline, q.query_id) if run is not None else None
    if not q.answerable:
        row.retrieval_source = "n/a"
        if rr is not None:
            row.first_rank = rr.first_rank
    elif rr is not None:
        row.first_rank = rr.first_rank
        row.retrieved = rr.first_rank is not None and rr.first_rank <= row.k
        split = rr.evidence_split
        row.evidence_split = split is not None and split.rank <= row.k <= split.k
        row.retrieval_source = "run"
    elif row.contexts_source == "answer":
        row.retrieved = evidence_in_contexts(q.evidence, row.contexts or ())
        row.retrieval_source = "contexts" if row.retrieved is not None else "unknown"


def prepare_rows(qa: QASet, answers: Sequence[AnswerRecord], *, answers_source: str = "answers",
                 run: Optional[RunData] = None, pipeline: Optional[str] = None, k: Optional[int] = None,
                 corpus: object = None, notes: Optional[List[str]] = None) -> List[AnswerRow]:
    """The rows of :func:`join` (its notes added to ``notes``)."""
    joined = join(qa, answers, run=run, options=ScoreOptions(answers_source=answers_source, pipeline=pipeline, k=k,
                                                             corpus=corpus))
    if notes is not None:
        notes.extend(joined.notes)
    return joined.rows


def join(qa: Optional[QASet], answers: Sequence[AnswerRecord], *, run: object = None,
         options: ScoreOptions = ScoreOptions(), embedder: Optional["Embedder"] = None) -> Joined:
    """Join answers, questions and the run.

    Pipelines: an answer's ``pipeline`` field, else ``options.pipeline``, else (with a run) the run's first
    (baseline) pipeline, else ``(answers)``.  Answers without ``contexts`` whose pipeline is named (by the answer,
    or by ``options.pipeline``) and present in the run get the run's stored chunk texts as contexts; ``k``: the
    option, else the answer's, else the run's ``miss_k``, else 5.  Answers that carry their ``question`` and are
    not questions of ``qa`` (or all of them, without ``qa``) are traced answers: a row each, matched to the exam
    (:mod:`ragexam.analysis.answers.traffic`; ``embedder``: default the offline e5).
    """
    from ragexam.metrics.judge.prompts import detect_language

    run = as_run_data(run)
    _check_join(run, options)
    parts = split(qa, answers, source=options.answers_source, threshold=options.match_threshold, embedder=embedder)
    notes: List[str] = []
    if run is not None and qa is not None:
        _shared_questions(qa, parts.by_id, run, notes)
    by_key = _by_key(parts.by_id, run, options, _default_pipeline(parts.by_id, run, options.pipeline, notes))
    pipelines = list(dict.fromkeys(name for name, _ in by_key))
    if run is not None:
        notes += [f"pipeline {p!r} is not in the run {run.source}: its retrieval is unknown" for p in pipelines
                  if not run.has_pipeline(p)]
    k = options.k
    default_k = k or (run.miss_k if run is not None and run.miss_k else None) or 5
    contexts = _RunContexts(run, options.corpus, notes) if run is not None else None
    rows: List[AnswerRow] = []
    for p in pipelines:
        for q in qa or ():
            rec, explicit = by_key.get((p, q.query_id), (None, False))
            row = AnswerRow(p, q, rec, k or (rec.k if rec is not None and rec.k else None) or default_k)
            if rec is not None and rec.contexts is not None:
                row.contexts, row.context_ids, row.contexts_source = rec.contexts, rec.context_ids, "answer"
            elif rec is not None and contexts is not None and explicit and run.row(p, q.query_id) is not None:
                pairs = contexts.of(p, row.k, q.query_id)
                row.contexts = tuple(t for _, t in pairs)
                row.context_ids = tuple(c for c, _ in pairs)
                row.contexts_source = "run"
            _retrieval(row, run)
            rows.append(row)
    for rec, q in parts.traced:
        row = AnswerRow(rec.pipeline or options.pipeline or NO_PIPELINE, q, rec, k or rec.k or default_k)
        if rec.contexts is not None:
            row.contexts, row.context_ids, row.contexts_source = rec.contexts, rec.context_ids, "answer"
        _retrieval(row, None)
        rows.append(row)
    asked = [r.question for r in rows]
    language = detect_language([q.question for q in asked] + [q.ground_truth for q in asked if q.ground_truth])
    return Joined(qa, rows, options, run, language, notes, parts.matching)


# -- 2. text metrics ----------------------------------------------------------------------------------------------


@dataclass
class Texts:
    """The text metrics: each row's sentence BLEU, chrF and ROUGE-L F and its summable statistics (on the rows),
    and the corpus BLEU / corpus chrF / mean ROUGE-L per pipeline and per pipeline and question type over the
    answerable questions, with the tokenizers used."""

    by_pipeline: Dict[str, TextScores]
    by_type: Dict[str, Dict[str, TextScores]]
    bleu_tokenize: str
    rouge_tokenize: str


def _tokenizers(language: str, bleu_tokenize: str) -> Tuple[str, str]:
    if bleu_tokenize == "auto":
        return ("ko-kiwi", "ko-kiwi") if language == "ko" else ("13a", "whitespace")
    rouge = {"none": "whitespace", "13a": "whitespace", "intl": "whitespace"}.get(bleu_tokenize, bleu_tokenize)
    return bleu_tokenize, rouge


class TextJob:
    """The text stage while it runs: the statistics of every row with an answer and a reference, computed -- with
    ``beside=True`` (a judge will make HTTP calls) -- in a process beside this one (:class:`ragexam.exec.beside.
    Beside`: Kiwi's model load holds the GIL for more than a second, so on a thread here it would stall the calls
    instead of overlapping them), else here by :meth:`result`.  An optional tokenizer that is not installed
    (ko-mecab) is reported when the job is made, before any call is paid for."""

    def __init__(self, joined: Joined, *, beside: bool) -> None:
        self.bleu_tok, self.rouge_tok = _tokenizers(joined.language, joined.options.bleu_tokenize)
        if "ko-mecab" in (self.bleu_tok, self.rouge_tok):
            from ragexam.metrics.text.tokenizers import tokenize_lines

            tokenize_lines([""], "ko-mecab")
        self.rows = joined.rows
        self.todo = [r for r in joined.rows if r.answer is not None and r.question.ground_truth]
        pairs = [(r.answer, r.question.ground_truth) for r in self.todo]
        distinct = list(dict.fromkeys(pairs))  # the same answer to the same reference (traffic) is scored once
        where = {p: i for i, p in enumerate(distinct)}
        self.where = [where[p] for p in pairs]
        self.job = Beside(answer_statistics, [a for a, _ in distinct], [g for _, g in distinct], self.bleu_tok,
                          self.rouge_tok, start=bool(self.todo) and beside)

    def _scores(self, stats: AnswerStatistics, keep: Callable[[AnswerRow], bool], signed: bool) -> TextScores:
        idx = [i for i, r in enumerate(self.todo) if r.question.answerable and keep(r)]
        c = corpus_scores(stats, idx, self.bleu_tok, self.rouge_tok)
        if c is None:
            return TextScores(n=0)
        return TextScores(n=len(idx), bleu=c.bleu.score, chrf=c.chrf.score, rouge_l=c.rouge_l, signatures={
            "bleu": c.bleu.signature, "chrf": c.chrf.signature, "rouge_l": c.rouge_l_signature} if signed else {})

    def result(self) -> Texts:
        """The statistics (the child's, or computed here), each row's sentence scores, the corpus scores."""
        from ragexam.metrics.text import bleu_scores, chrf_scores

        if self.todo:
            stats = tuple(x[self.where] for x in self.job.result())  # a row per answer again
            bs, cs, rs = stats
            for i, (r, b, c, g) in enumerate(zip(self.todo, bleu_scores(bs, effective_order=True), chrf_scores(cs),
                                                 rs[:, 2])):
                r.text = {"bleu": float(b), "chrf": float(c), "rouge_l": float(g)}
                r.text_stats = {"bleu": [int(x) for x in bs[i]], "chrf": [int(x) for x in cs[i]]}
        else:
            stats = None
        segs = segments(self.rows)
        types = sorted({_type(r) for r in self.rows})
        by_pipeline = {p: self._scores(stats, lambda r, p=p: r.pipeline == p, True) for p in segs}
        by_type = {p: {t: self._scores(stats, lambda r, p=p, t=t: r.pipeline == p and _type(r) == t, False)
                       for t in types} for p in segs}
        return Texts(by_pipeline, by_type, self.bleu_tok, self.rouge_tok)


def text(joined: Joined, *, beside: bool = False) -> TextJob:
    """Start the text stage (:class:`TextJob`; ``beside``: in another process, while the judge's calls run)."""
    return TextJob(joined, beside=beside)


# -- 3. judge ----------------------------------------------------------------------------------------------------


@dataclass
class Judged:
    """What the judge gave a score: the judge, its metrics and their definitions, the run, the repeats and the
    judge's agreement with itself over them, and its notes (a recorded judge-check that did not separate)."""

    judge: Optional[Judge] = None
    metrics: Tuple[str, ...] = ()
    defs: List[JudgeMetric] = field(default_factory=list)
    run: Optional[JudgeRun] = None
    repeat: int = 1
    agreement: Dict[str, RepeatAgreement] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)


def _definitions(metrics: Sequence[MetricLike], judge: Optional[Judge] = None) -> List[JudgeMetric]:
    from ragexam.metrics.judge.registry import resolve_metrics

    defs = resolve_metrics(list(metrics), getattr(judge, "custom", {}) or {})
    for d in defs:
        if not d.per_answer:
            raise InputError(f"{d.name} compares two pipelines' answers; use ragexam.analysis.answers.pairwise "
                             "(`ragexam pairwise`), not a per-answer judge metric", source="score", field="metric")
    return defs


def judge_jobs(rows: Sequence[AnswerRow], metrics: Sequence[MetricLike], judge: Optional[Judge] = None
               ) -> Dict[str, List[JudgeItem]]:
    """``{metric name: [JudgeItem]}`` for the rows: each metric (a name, or a
    :class:`~ragexam.metrics.judge.metric.JudgeMetric`; names are looked up among ``judge``'s custom
    metrics, then the built-ins) gets the answered rows of the questions it applies to
    (``applies_to``: all, answerable, unanswerable)."""
    def item(r: AnswerRow) -> JudgeItem:
        return JudgeItem(r.item_id, r.question.question, r.answer, tuple(r.contexts or ()), r.question.ground_truth)

    answered = [r for r in rows if r.answer is not None]
    jobs: Dict[str, List[JudgeItem]] = {}
    for d in _definitions(metrics, judge):
        keep = {"all": lambda r: True, "answerable": lambda r: bool(r.question.answerable),
                "unanswerable": lambda r: not r.question.answerable}[d.applies_to]
        jobs[d.name] = [item(r) for r in answered if keep(r)]
    return jobs


def plan_judging(rows: Sequence[AnswerRow], judge: Judge, metrics: Sequence[MetricLike], *,
                 repeat: int = 1) -> JudgePlan:
    """The judge's :class:`~ragexam.metrics.judge.JudgePlan` for these rows (nothing is sent)."""
    defs = _definitions(metrics, judge)
    return judge.plan(None, {d: items for d, items in zip(defs, judge_jobs(rows, defs, judge).values())},
                      repeat=repeat)


def judge(joined: Joined, judge: Optional[Judge], metrics: Optional[Sequence[MetricLike]] = None, *,
          progress: Progress = None) -> Judged:
    """Judge the rows on ``metrics`` (names or metric objects; default
    :data:`~ragexam.metrics.judge.registry.DEFAULT_METRICS`): each row gets its
    :class:`~ragexam.metrics.judge.ItemScore` per metric and, for metrics with an evidence twin, the evidence
    values; with ``repeat >= 2`` the judge's agreement with itself.  ``None`` judges nothing (``Judged()``)."""
    if judge is None:
        return Judged()
    from ragexam.metrics.judge.registry import DEFAULT_METRICS

    repeat, rows = joined.options.repeat, joined.rows
    defs = _definitions(list(metrics or DEFAULT_METRICS), judge)
    metrics = tuple(d.name for d in defs)
    jobs = judge_jobs(rows, defs, judge)
    run = judge.run(None, {d: jobs[d.name] for d in defs}, repeat=repeat, progress=progress)
    for m in metrics:
        scores = run.items(m)
        for r in rows:
            if r.item_id in scores:
                r.judge[m] = scores[r.item_id]
    agreement: Dict[str, RepeatAgreement] = {}
    if repeat >= 2:
        from ragexam.analysis.judging.agreement import repeat_agreement

        agreement = {m: repeat_agreement(run.judgments, run.definition(m)) for m in metrics}
    for r in rows:
        if any(m in EVIDENCE_TWINS and m in r.judge for m in metrics) and r.question.answerable:
            ev = evidence_per_context(r.question.evidence, r.contexts or ())
            if ev is not None:
                r.evidence = ev
    return Judged(judge, metrics, defs, run, repeat, agreement, list(run.notes))


@dataclass
class Attributed:
    """The stage that lost each answer (:class:`~ragexam.analysis.answers.diagnosis.Attribution`), where each
    verdict came from (``judge``, ``text``, ``phrases``, ``none``), and the stage's notes."""

    attribution: Attribution
    correctness_source: str
    abstention_source: str
    faithfulness_source: str
    notes: List[str] = field(default_factory=list)


def _stage_inputs(r: AnswerRow, sources: Tuple[str, str, str], options: ScoreOptions) -> StageInputs:
    correct_src, abstain_src, faithful_src = sources
    q = r.question
    base = dict(pipeline=r.pipeline, query_id=q.query_id, type=q.type, answerable=q.answerable,
                retrieved=r.retrieved, first_rank=r.first_rank, evidence_split=r.evidence_split, answer=r.answer,
                key=q.ground_truth)
    if r.answer is None:
        why = "no_answer" if r.record is None or not r.record.error else f"no_answer ({r.record.error[:80]})"
        return StageInputs(**base, missing=why)
    faithful = None
    if faithful_src == "judge":
        s = r.judge.get(FAITHFULNESS.name)
        if s is not None and s.judged:
            faithful = s.label == "faithful"
    if q.answerable:
        if correct_src == "judge":
            s = r.judge[CORRECTNESS.name]
            if s.judged:
                return StageInputs(**base, correct=s.label == "correct", correct_detail=s.label, faithful=faithful)
            return StageInputs(**base, faithful=faithful, missing=f"judge:{s.reason}")
        if correct_src == "text":
            if not r.text:
                return StageInputs(**base, faithful=faithful, missing="no_ground_truth")
            ok = options.correct_if.holds(r.text)
            detail = ",".join(f"{m}={r.text[m]:.3f}" for m in options.correct_if.metrics)
            return StageInputs(**base, correct=ok, correct_detail=detail, faithful=faithful)
        return StageInputs(**base, faithful=faithful, missing="no_correctness_source")
    if abstain_src == "judge":
        s = r.judge[ABSTENTION.name]
        if s.judged:
            return StageInputs(**base, abstained=s.label == "abstained", faithful=faithful)
        return StageInputs(**base, faithful=faithful, missing=f"judge:{s.reason}")
    return StageInputs(**base, abstained=r.phrase is not None, faithful=faithful)


def _attribution_signature(rows: Sequence[AnswerRow], judged: Judged, sources: Tuple[str, str, str],
                           options: ScoreOptions) -> Signature:
    """Where every verdict of the attribution came from: retrieval, k, correctness, faithfulness, abstention."""
    correct_src, abstain_src, faithful_src = sources

    def rub(m: str) -> str:
        rubric = judged.run.rubrics[m]
        return f"judge({rubric['name']}@{rubric['sha']})"

    ks = sorted({r.k for r in rows if r.question.answerable})
    rsrc = sorted({r.retrieval_source for r in rows if r.question.answerable}) or ["n/a"]
    correct_if = options.correct_if
    phrases = "phrases-" + (ABSTAIN_PHRASES_VERSION if options.abstain_phrases is None else "custom")
    return Signature([
        ("retrieval", "+".join(rsrc)), ("evidence", "first_rank<=k"), ("k", ",".join(map(str, ks)) or "-"),
        ("correct", rub(CORRECTNESS.name) if correct_src == "judge" else (str(correct_if) if correct_if else
                                                                              "none")),
        ("partial", "not_correct"), ("faithful", rub(FAITHFULNESS.name) if faithful_src == "judge" else "none"),
        ("abstain", rub(ABSTENTION.name) if abstain_src == "judge" else phrases)])


# -- 4. trust ------------------------------------------------------------------------------------------------------


def trust(joined: Joined, judged: Judged, *, progress: Progress = None) -> Trusted:
    """How far each judged metric was shown to separate good from bad (:mod:`ragexam.analysis.answers.trusted`):
    the recorded judge-check of this judge on this question set, else one run now (``options.judge_check``), and
    the judge beside the evidence of these answers."""
    if judged.run is None:
        return Trusted()
    o = joined.options
    source = _check_source(joined)
    from ragexam.stats import DEFAULT_SEED

    return trust_stage.trust(joined.rows, judged.judge, judged.run, source, check=o.judge_check,
                             sample=o.judge_check_sample, seed=DEFAULT_SEED if o.seed is None else o.seed,
                             progress=progress)


def plan_check(joined: Joined, judge: Judge, metrics: Sequence[MetricLike]) -> Tuple[Optional[JudgePlan], str]:
    """What :func:`trust` would send for a dry run: ``(plan, why)`` (:func:`ragexam.analysis.answers.trusted.
    plan_check`); ``(None, why)`` when it would send nothing."""
    o = joined.options
    if not o.judge_check:
        return None, "skipped (--no-judge-check)"
    from ragexam.stats import DEFAULT_SEED

    return trust_stage.plan_check(joined.rows, judge, _definitions(metrics, judge), _check_source(joined),
                                  sample=o.judge_check_sample, seed=DEFAULT_SEED if o.seed is None else o.seed)


def _check_source(joined: Joined) -> Optional[trust_stage.CheckSource]:
    """Where the judge-check would be built from: the question set and the corpus (``None`` without a set)."""
    if joined.qa is None:
        return None
    return check_source(joined.qa, joined.options.corpus, joined.run.corpus if joined.run is not None else None)


# -- 5. stage attribution ----------------------------------------------------------------------------------------


def attribute(joined: Joined, judged: Judged, trusted: Optional[Trusted] = None) -> Attributed:
    """The stage that lost each answer (:mod:`ragexam.analysis.answers.diagnosis`): correctness from the judge's
    ``answer_correctness``, else ``options.correct_if`` on the text metrics (run after :meth:`TextJob.result`);
    abstention from the judge's ``abstention``, else the phrase list; faithfulness from the judge."""
    options, rows, metrics = joined.options, joined.rows, judged.metrics
    phrases = options.abstain_phrases if options.abstain_phrases is not None else ABSTAIN_PHRASES
    for r in rows:
        r.phrase = is_abstention(r.answer, phrases)
    notes: List[str] = []
    if joined.run is None and any(r.question.answerable and r.retrieval_source == "unknown" and
                                  (r.contexts is None or not is_traced(r.question)) for r in rows):
        notes.append("retrieval is unknown for answers without contexts: pass --run DIR (from `ragexam run ... "
                     "--out DIR`) to attribute answerable questions to a stage")
    correct_src = "judge" if CORRECTNESS.name in metrics else ("text" if options.correct_if is not None else
                                                                   "none")
    if options.correct_if is not None and correct_src == "judge":
        notes.append(f"--correct-if {options.correct_if} is not used for correctness: the judge grades "
                     f"{CORRECTNESS.name}")
    sources = (correct_src, "judge" if ABSTENTION.name in metrics else "phrases",
               "judge" if FAITHFULNESS.name in metrics else "none")
    unverified = trusted.unverified() if trusted is not None else {}
    judged_inputs = {"correct": CORRECTNESS.name, "faithful": FAITHFULNESS.name, "abstained": ABSTENTION.name}
    attribution = attribute_all([_stage_inputs(r, sources, options) for r in rows],
                                signature=_attribution_signature(rows, judged, sources, options),
                                notes=joined.notes + judged.notes + (trusted.notes if trusted else []) + notes,
                                unverified={i: unverified[m] for i, m in judged_inputs.items() if m in unverified})
    notes.extend(attribution.caveat_notes())
    for r, st in zip(rows, attribution.results):
        r.stage = st
    return Attributed(attribution, *sources, notes=notes)


# -- 6. summarize ------------------------------------------------------------------------------------------------


def _human_by_item(rows: Sequence[AnswerRow], human: HumanInput, metrics: Sequence[str], notes: List[str]
                   ) -> Dict[str, Dict[str, object]]:
    """``{metric: {item_id: label}}`` of the labels of judged metrics: a label names its answer by query id and,
    when the answers hold several pipelines, pipeline (a label without one applies to every pipeline's answer).
    Labels of metrics that were not judged, and of questions without an answer, are counted in a note."""
    out: Dict[str, Dict[str, object]] = {}
    used = set()
    for r in rows:
        if r.record is None:
            continue
        for key in ((r.pipeline, r.query_id), (None, r.query_id)):
            for m, v in (human.get(key) or {}).items():
                if m in metrics:
                    out.setdefault(m, {}).setdefault(r.item_id, v)
                    used.add((key, m))
    on_judged: Dict[Tuple[str, str], List[str]] = {}
    for m, labels in out.items():
        for r in rows:
            if r.item_id in labels and m in r.judge and r.judge[m].judged:
                on_judged.setdefault((m, r.pipeline), []).append(r.query_id)
    notes.extend(human_label_notes(human, used, on_judged, metrics))
    return out


def _judge_section(rows: Sequence[AnswerRow], judged: Judged, seed: int, labels: Dict[str, Dict[str, object]],
                   trusted: Trusted) -> JudgeSection:
    """The ``judge`` section: per pipeline (and question type) and metric its statistics, the judge's agreement
    with itself, the metrics' definitions, the judge beside the evidence, the means corrected by human labels, and
    how far each metric's judge was shown to separate good from bad."""
    jr, metrics = judged.run, judged.metrics
    segs = segments(rows)
    types = sorted({_type(r) for r in rows})
    definitions = {}
    for m in metrics:
        d = jr.definition(m)
        definitions[m] = None if d is None else MetricDefinition(
            question=d.question, needs=list(d.needs), applies_to=d.applies_to, score_range=list(d.score_range),
            labels=list(d.labels), pass_rule=d.pass_text, custom=d.custom, source=d.source)
    return JudgeSection(
        model=jr.model, endpoint=jr.endpoint, language=jr.language, repeat=jr.repeat, rubrics=jr.rubrics,
        signatures=jr.signatures, usage=jr.usage,
        summary={p: {m: judge_stat(rs, m, seed, definition=jr.definition(m)).to_record() for m in metrics}
                 for p, rs in segs.items()},
        by_type={p: {t: {m: judge_stat(rs, m, seed, t, definition=jr.definition(m)).to_record() for m in metrics}
                     for t in types}
                 for p, rs in segs.items()},
        agreement=dict(judged.agreement),
        definitions=definitions,
        vs_evidence={p: v for p, rs in segs.items() if (v := vs_evidence(rs, metrics))},
        scoring=dict(jr.scoring), probe=jr.probe,
        ppi={p: {m: v for m in metrics if (v := human_corrected(rs, m, jr.definition(m), labels.get(m) or {}))
                 is not None} for p, rs in segs.items()} if labels else {},
        trust=dict(trusted.trust))


def _segments(joined: Joined, judged: Judged, seed: int, trusted: Trusted) -> SegmentsSection:
    """The ``segments`` section (:mod:`ragexam.analysis.answers.segments`): ``--by``'s, or, for traced answers
    without ``--by``, all of them as one segment."""
    from ragexam.analysis.answers.segments import segments_section

    o = joined.options
    return segments_section(joined.rows, by=o.by, baseline=o.baseline, metrics=judged.metrics,
                            defs={d.name: d for d in judged.defs}, seed=seed, matching=joined.matching,
                            warnings=judged.notes + trusted.warnings)


def _settings(joined: Joined, texts: Texts, judged: Judged, attributed: Attributed, seed: int) -> ScoreSettings:
    o = joined.options
    return ScoreSettings(
        qa=str(joined.qa.source) if joined.qa is not None else None, answers=o.answers_source, run=joined.run.source if joined.run is not None else None,
        pipeline=o.pipeline, k=o.k, language=joined.language, bleu_tokenize=texts.bleu_tokenize,
        rouge_tokenize=texts.rouge_tokenize, correct_if=str(o.correct_if) if o.correct_if is not None else None,
        correctness_source=attributed.correctness_source, abstention_source=attributed.abstention_source,
        faithfulness_source=attributed.faithfulness_source,
        abstain_phrases=list(o.abstain_phrases if o.abstain_phrases is not None else ABSTAIN_PHRASES),
        min_coverage=o.min_coverage,
        judge=judge_settings(judged.run, judged.judge, judged.metrics, judged.defs, judged.repeat)
        if judged.judge is not None else None, seed=seed, by=o.by, baseline=o.baseline)


def _definitions_of(judged: Judged) -> Dict[str, JudgeMetric]:
    """``{metric: definition}`` of the judged metrics."""
    jr = judged.run
    return {m: d for m in judged.metrics if jr is not None and (d := jr.definition(m)) is not None}


def summarize(joined: Joined, texts: Texts, judged: Judged, attributed: Attributed, *,
              human: Optional[HumanInput] = None, trusted: Optional[Trusted] = None) -> ScoreReport:
    """The :class:`~ragexam.analysis.answers.scored.ScoreReport` of the stages' products: the typed
    :class:`~ragexam.storage.score_summary.ScoreSummary` of every segment of the rows, with the settings that
    produced it; ``human`` labels (:func:`ragexam.analysis.judging.agreement.read_human_labels`) add each judged
    metric's prediction-powered estimate; ``trusted`` (:func:`trust`) each judged metric's verdict."""
    from ragexam import __version__
    from ragexam.stats import DEFAULT_SEED

    rows, metrics = joined.rows, judged.metrics
    seed = DEFAULT_SEED if joined.options.seed is None else joined.options.seed
    trusted = trusted if trusted is not None else Trusted()
    notes = joined.notes + judged.notes + trusted.notes + attributed.notes
    labels = _human_by_item(rows, human, metrics, notes) if human else {}
    segs = segments(rows)
    passing = pass_metrics(judged.run, metrics)
    summary = ScoreSummary(
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), ragexam_version=__version__,
        settings=_settings(joined, texts, judged, attributed, seed),
        dataset=ScoreDataset(n_questions=len({r.query_id for r in rows}),
                             n_answers=sum(1 for r in rows if r.record is not None), pipelines=list(segs),
                             missing_answers={p: sum(1 for r in rs if r.record is None) for p, rs in segs.items()}),
        text=texts.by_pipeline, text_by_type=texts.by_type,
        results={p: segment_result(rs, texts.by_pipeline[p], metrics, passing, seed, _definitions_of(judged))
                 for p, rs in segs.items()},
        judge=_judge_section(rows, judged, seed, labels, trusted) if judged.run is not None else None,
        attribution=attributed.attribution.to_section(), notes=notes,
        segments=_segments(joined, judged, seed, trusted) if joined.options.by is not None or joined.traced else None)
    return ScoreReport(rows, summary, attributed.attribution, judged.run, metrics, judged.agreement, seed, labels)
