"""Scoring generated answers: text metrics, judge metrics and stage attribution in one pass.

:func:`score_answers` joins the answers to the questions (and, with a run, to each pipeline's
retrieval), then computes

* **text metrics** against ``ground_truth``: sentence-level BLEU (``effective_order``), chrF and
  ROUGE-L F per answer, and corpus BLEU / corpus chrF / mean ROUGE-L per pipeline and question
  type over the *answerable* questions (out-of-corpus questions are graded by abstention, not by
  overlap with a "not in the documents" reference).  For Korean data BLEU and ROUGE-L use the
  ``ko-kiwi`` morpheme tokenizer (whitespace tokens make CJK overlap meaningless), otherwise
  ``13a`` / whitespace; the signatures say which.
* **judge metrics** (when a :class:`~ragexam.metrics.judge.Judge` is given; default the four of
  :data:`~ragexam.metrics.judge.prompts.DEFAULT_METRICS`): each metric grades the answers of the
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
  its signature.

Pipelines: an answer's ``pipeline`` field, else ``--pipeline``, else (with a run) the run's
first (baseline) pipeline, else ``(answers)``.  Every question of the QA set gets a row per
pipeline; a question without an answer is listed as ``unjudged`` (``no_answer``), never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.analysis.answers.files import NO_PIPELINE, AnswerRecord, corpus_of_run, run_contexts
from ragexam.analysis.answers.diagnosis import Attribution, StageInputs, StageResult, attribute_all, evidence_in_contexts
from ragexam.analysis.judging.agreement import human_label_notes
from ragexam.analysis.judging.trust import dataset_of
from ragexam.metrics.verdicts import ABSTAIN_PHRASES, ABSTAIN_PHRASES_VERSION, CorrectIf, is_abstention
from ragexam import fmt
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.errors import InputError
from ragexam.storage.runfolder import SCORE_FORMAT, RunData, RunRow

__all__ = ["AnswerRow", "ScoreReport", "prepare_rows", "score_answers", "plan_judging", "judge_jobs",
           "item_id", "save_score", "check_min_coverage", "evidence_per_context", "SCORE_FORMAT", "TEXT_METRICS",
           "OK_LABELS", "EVIDENCE_TWINS", "PASS_SUFFIX"]

TEXT_METRICS = ("bleu", "chrf", "rouge_l")
#: a judge metric's pass rate is the metric ``<metric>_pass`` (1 / 0 per judged answer)
PASS_SUFFIX = "_pass"
#: judge metric -> (its evidence-based twin, how the judge's per-answer value is read)
EVIDENCE_TWINS = {"context_precision": ("evidence_precision", "score"),
                  "context_recall": ("evidence_recall", "score"),
                  "context_relevance": ("evidence_hit", "passed")}
#: the stage labels counted as ok in ``ok_share``
OK_LABELS = ("ok", "abstained_ok")


def item_id(pipeline: str, query_id: str) -> str:
    """The judge item id of one answer: ``"<query_id> @ <pipeline>"``."""
    return f"{query_id} @ {pipeline}"


@dataclass
class AnswerRow:
    """One (pipeline, question): the answer, its retrieval and every verdict about it."""

    pipeline: str
    question: Any  # ragexam.data.schema.Question
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
    judge: Dict[str, Any] = field(default_factory=dict)  # metric -> ItemScore
    stage: Optional[StageResult] = None
    evidence: Dict[str, Any] = field(default_factory=dict)  # evidence_precision/recall/hit, flags

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
        """True when the stage label is ok (or abstained_ok), None before attribution."""
        return None if self.stage is None else self.stage.label in OK_LABELS

    def csv_row(self, judge_metrics: Sequence[str]) -> Dict[str, Any]:
        q, s = self.question, self.stage
        row: Dict[str, Any] = {
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
        row["note"] = self.record.metadata.get("note") if self.record is not None else None
        row["answer"] = self.answer
        row["stats"] = self.text_stats or None
        return row

    def typed_row(self, judge_metrics: Sequence[str], pass_metrics: Sequence[str] = ()) -> RunRow:
        """The row as recorded (history) and read back (score folder): the text metrics, ``ok_share``
        (1 or 0), each judge metric's score under its name (None when not judged), for the metrics
        in ``pass_metrics`` (those with a pass rule) ``<metric>_pass`` (1 or 0; None when not judged)
        and the summable statistics of the corpus metrics."""
        metrics: Dict[str, Optional[float]] = {m: _finite(self.text.get(m)) for m in ("chrf", "bleu", "rouge_l")}
        metrics["ok_share"] = None if self.ok is None else float(self.ok)
        for m in judge_metrics:
            sc = self.judge.get(m)
            metrics[m] = _finite(sc.score) if sc is not None and sc.judged else None
            if m in pass_metrics:
                metrics[m + PASS_SUFFIX] = float(sc.passed) if sc is not None and sc.passed is not None else None
        q = self.question
        return RunRow(pipeline=self.pipeline, query_id=q.query_id, type=q.type, answerable=bool(q.answerable),
                      first_rank=self.first_rank, metrics=metrics,
                      stats={k: [float(x) for x in v] for k, v in self.text_stats.items()})


def _flag(x: Optional[bool]) -> Optional[int]:
    return None if x is None else int(x)


def _finite(x: Any) -> Optional[float]:
    import math

    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(float(x)) else None


def as_run_data(run: Any) -> Optional[RunData]:
    """``run`` as a :class:`~ragexam.storage.runfolder.RunData`: a RunData as is, a
    :class:`~ragexam.analysis.exam.run.RunResult` (``ragexam.run(...)``) with the chunk texts it saw, or
    ``None``."""
    if run is None or isinstance(run, RunData):
        return run
    if hasattr(run, "chunk_records") and hasattr(run, "per_question") and hasattr(run, "summary"):
        chunks: Dict[str, Dict[str, Any]] = {}
        for c in run.chunk_records():
            chunks.setdefault(c.chunker, {})[c.chunk_id] = c
        return RunData(summary=run.summary, per_question=list(run.per_question), source=str(run.summary.get(
            "run_id") or "run"), chunks=chunks)
    raise InputError(f"received {type(run).__name__}; expected a run folder's RunData or a RunResult",
                     source="score", field="run")


def prepare_rows(qa, answers: Sequence[AnswerRecord], *, answers_source: str = "answers",
                 run: Optional[RunData] = None, pipeline: Optional[str] = None, k: Optional[int] = None,
                 corpus: Any = None, notes: Optional[List[str]] = None) -> List[AnswerRow]:
    """Join answers, questions and the run (see the module docstring).

    Answers without ``contexts`` whose pipeline is named (by the answer, or by ``pipeline``) and
    present in the run get the run's stored chunk texts as contexts.  ``corpus`` (a Corpus, path or
    bundled name; default the run's corpus) is loaded only for a ``ragexam-run/1`` folder, which
    did not store them (:func:`ragexam.analysis.answers.files.run_contexts`).
    """
    notes = notes if notes is not None else []
    run = as_run_data(run)
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise InputError(f"received {k!r}; expected an integer >= 1", source="score", field="k")
    for r in answers:
        if r.query_id not in qa:
            raise InputError(f"query_id {r.query_id!r} is not a question of the QA set ({qa.source}); "
                             "expected the ids of the QA file", source=answers_source, line=r.line, field="query_id")
    if run is not None and pipeline is not None and not run.has_pipeline(pipeline):
        raise InputError(f"no pipeline {pipeline!r} in the run; it has: {', '.join(run.pipelines)}",
                         source=run.source, field="pipeline")
    only = run is not None and len(run.pipelines) == 1  # the run's one pipeline needs no naming
    if pipeline is not None:
        default = pipeline
    elif run is not None and run.pipelines:
        default = run.pipelines[0]
        unnamed = [r for r in answers if r.pipeline is None and r.contexts is None]
        if unnamed and not only:
            notes.append(f"{fmt.plural(len(unnamed), 'answer')} without a 'pipeline' field or contexts were joined "
                         f"with the run's first pipeline {default!r} for retrieval ranks, but the run has "
                         f"{len(run.pipelines)} pipelines, so their contexts are unknown and context_relevance and "
                         "faithfulness will be unjudged (no_contexts); pass --pipeline NAME to grade them on that "
                         "pipeline's retrieved chunks")
    else:
        default = NO_PIPELINE
    by_key: Dict[Tuple[str, str], Tuple[AnswerRecord, bool]] = {}
    for r in answers:
        name = r.pipeline or default
        explicit = r.pipeline is not None or pipeline is not None or only
        if (name, r.query_id) in by_key:
            raise InputError(f"two answers for question {r.query_id!r} in pipeline {name!r} (one names the "
                             "pipeline, one is joined to it by default); give every answer a pipeline",
                             source=answers_source, line=r.line, field="pipeline")
        by_key[(name, r.query_id)] = (r, explicit)
    pipelines = list(dict.fromkeys(name for name, _ in by_key))
    if run is not None:
        for p in pipelines:
            if not run.has_pipeline(p):
                notes.append(f"pipeline {p!r} is not in the run {run.source}: its retrieval is unknown")
    default_k = k or (run.miss_k if run is not None and run.miss_k else None) or 5
    ctx_cache: Dict[Tuple[str, int], Dict[str, List[Tuple[str, str]]]] = {}
    corpus_obj = None
    rows: List[AnswerRow] = []
    for p in pipelines:
        for q in qa:
            rec, explicit = by_key.get((p, q.query_id), (None, False))
            rk = k or (rec.k if rec is not None and rec.k else None) or default_k
            row = AnswerRow(p, q, rec, rk)
            rr = run.row(p, q.query_id) if run is not None else None
            if rec is not None and rec.contexts is not None:
                row.contexts, row.context_ids, row.contexts_source = rec.contexts, rec.context_ids, "answer"
            elif rec is not None and rr is not None and explicit:
                key = (p, rk)
                if key not in ctx_cache:
                    if corpus_obj is None and not run.has_chunk_texts:
                        corpus_obj = corpus_of_run(run, corpus)
                    ctx_cache[key] = run_contexts(run, p, rk, corpus=corpus_obj, notes=notes)
                pairs = ctx_cache[key].get(q.query_id, [])
                row.contexts = tuple(t for _, t in pairs)
                row.context_ids = tuple(c for c, _ in pairs)
                row.contexts_source = "run"
            if not q.answerable:
                row.retrieval_source = "n/a"
                if rr is not None:
                    row.first_rank = rr.first_rank
            elif rr is not None:
                row.first_rank = rr.first_rank
                row.retrieved = rr.first_rank is not None and rr.first_rank <= rk
                split = rr.evidence_split
                row.evidence_split = split is not None and split.rank <= rk <= split.k
                row.retrieval_source = "run"
            elif row.contexts_source == "answer":
                row.retrieved = evidence_in_contexts(q.evidence, row.contexts or ())
                row.retrieval_source = "contexts" if row.retrieved is not None else "unknown"
            rows.append(row)
    return rows


# --- text metrics -----------------------------------------------------------------------------
def _tokenizers(language: str, bleu_tokenize: str) -> Tuple[str, str]:
    if bleu_tokenize == "auto":
        return ("ko-kiwi", "ko-kiwi") if language == "ko" else ("13a", "whitespace")
    rouge = {"none": "whitespace", "13a": "whitespace", "intl": "whitespace"}.get(bleu_tokenize, bleu_tokenize)
    return bleu_tokenize, rouge


def _text_stats(hyps: List[str], refs: List[str], bleu_tok: str, rouge_tok: str) -> Tuple[Any, Any, Any]:
    """The per-pair summable statistics ``(bleu, chrf, rouge)`` of ``hyps`` against ``refs`` (numpy arrays
    with a row per pair); every text is tokenized once.  Runs in a worker process beside the judge."""
    from ragexam.metrics.text import bleu_stats, chrf_stats, rouge_l_stats

    return (bleu_stats(hyps, refs, tokenize=bleu_tok), chrf_stats(hyps, refs),
            rouge_l_stats(hyps, refs, tokenize=rouge_tok))


def _text_stats_child() -> None:  # pragma: no cover - runs in the worker process of _TextScores
    """Worker process: ``argv[1]`` holds ``[hyps, refs, bleu_tok, rouge_tok]`` as JSON; the statistics go to
    ``argv[2]`` (an ``.npz`` file)."""
    import json
    import sys

    import numpy as np

    with open(sys.argv[1], encoding="utf-8") as fh:
        bs, cs, rs = _text_stats(*json.load(fh))
    with open(sys.argv[2], "wb") as fh:
        np.savez(fh, bleu=bs, chrf=cs, rouge=rs)


def _stop_child(proc: Any, folder: Optional[str]) -> None:
    """Stop the text-statistics child (when still running) and remove its folder."""
    import shutil

    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


class _TextScores:
    """Sentence scores on each row with an answer and a ground truth, and the per-row summable statistics
    (``result()`` gives ``{"rows", "bleu", "chrf", "rouge"}``, the aggregates are computed from them).

    With ``beside=True`` (a judge will make HTTP calls) the statistics are computed in a child Python
    process while the calls run: Kiwi's model load holds the GIL for more than a second, so on a thread of
    this process it would stall the calls instead of overlapping them.  The child is a plain
    ``python -c`` (not multiprocessing), so a user's script is never imported again; if it cannot run,
    the statistics are computed here, after the calls.  An optional tokenizer that is not installed
    (ko-mecab) is reported here, before any call is paid for."""

    def __init__(self, rows: List[AnswerRow], bleu_tok: str, rouge_tok: str, *, beside: bool) -> None:
        if "ko-mecab" in (bleu_tok, rouge_tok):
            from ragexam.metrics.text.tokenizers import tokenize_lines

            tokenize_lines([""], "ko-mecab")
        self.todo = [r for r in rows if r.answer is not None and r.question.ground_truth]
        self._args = ([r.answer for r in self.todo], [r.question.ground_truth for r in self.todo], bleu_tok,
                      rouge_tok)
        self._proc: Any = None
        self._dir: Optional[str] = None
        if self.todo and beside:
            self._start()

    def _start(self) -> None:
        import json
        import os
        import subprocess
        import sys
        import tempfile
        import weakref

        try:
            self._dir = tempfile.mkdtemp(prefix="ragexam-text-")
            inp = os.path.join(self._dir, "in.json")
            with open(inp, "w", encoding="utf-8") as fh:
                json.dump(list(self._args), fh, ensure_ascii=False)
            env = dict(os.environ)
            root = str(Path(__file__).resolve().parents[2])  # the folder holding the ragexam package
            env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            self._proc = subprocess.Popen(
                [sys.executable, "-c", "from ragexam.analysis.answers.scoring import _text_stats_child; _text_stats_child()",
                 inp, os.path.join(self._dir, "out.npz")],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (OSError, ValueError):  # no temp folder, no interpreter, text JSON cannot hold (lone surrogates)
            self._proc = None
        # if the scoring fails before result() (a judge error, Ctrl-C), the child is stopped and its folder removed
        self._cleanup = weakref.finalize(self, _stop_child, self._proc, self._dir)

    def _collect(self) -> Any:
        """The child's statistics, or ``None`` when it failed (then they are computed here)."""
        import os

        import numpy as np

        try:
            if self._proc is None:
                return None
            if self._proc.wait() != 0:
                return None
            with np.load(os.path.join(self._dir, "out.npz")) as z:
                return z["bleu"], z["chrf"], z["rouge"]
        except (OSError, ValueError):
            return None
        finally:
            self._cleanup()

    def result(self) -> Dict[str, Any]:
        import numpy as np

        from ragexam.metrics.text import bleu_scores, chrf_scores

        if not self.todo:
            return {"rows": [], "bleu": np.zeros((0, 10)), "chrf": np.zeros((0, 18)), "rouge": np.zeros((0, 3))}
        stats = self._collect() if self._dir is not None else None
        bs, cs, rs = stats if stats is not None else _text_stats(*self._args)
        for i, (r, b, c, g) in enumerate(zip(self.todo, bleu_scores(bs, effective_order=True), chrf_scores(cs),
                                             rs[:, 2])):
            r.text = {"bleu": float(b), "chrf": float(c), "rouge_l": float(g)}
            r.text_stats = {"bleu": [int(x) for x in bs[i]], "chrf": [int(x) for x in cs[i]]}
        return {"rows": self.todo, "bleu": bs, "chrf": cs, "rouge": rs}


def _text_aggregate(stats: Dict[str, Any], keep: Callable[[AnswerRow], bool], bleu_tok: str,
                    rouge_tok: str) -> Dict[str, Any]:
    """Corpus BLEU, corpus chrF and mean ROUGE-L F over the answerable rows that ``keep`` selects
    (sums of the per-row statistics)."""
    from ragexam import __version__
    from ragexam.metrics.text import bleu_from_stats, chrf_from_stats
    from ragexam.metrics.text.tokenizers import tokenizer_signature

    idx = [i for i, r in enumerate(stats["rows"]) if r.question.answerable and keep(r)]
    if not idx:
        return {"n": 0, "bleu": None, "chrf": None, "rouge_l": None}
    b = bleu_from_stats(stats["bleu"][idx].sum(axis=0), tokenize=bleu_tok)
    c = chrf_from_stats(stats["chrf"][idx].sum(axis=0))
    g = float(stats["rouge"][idx, 2].mean())
    rsig = f"nrefs:1|case:mixed|tok:{tokenizer_signature(rouge_tok)}|beta:1|version:ragexam-{__version__}"
    return {"n": len(idx), "bleu": b.score, "chrf": c.score, "rouge_l": g,
            "signatures": {"bleu": b.signature, "chrf": c.signature, "rouge_l": rsig}}


# --- judge ---------------------------------------------------------------------------------------
def _definitions(metrics: Sequence[Any], judge=None) -> List[JudgeMetric]:
    from ragexam.metrics.judge.metric import resolve_metrics

    defs = resolve_metrics(list(metrics), getattr(judge, "custom", {}) or {})
    for d in defs:
        if d.name == "pairwise":
            raise InputError("pairwise compares two pipelines' answers; use ragexam.analysis.answers.pairwise "
                             "(`ragexam pairwise`), not a per-answer judge metric", source="score", field="metric")
    return defs


def judge_jobs(rows: Sequence[AnswerRow], metrics: Sequence[Any], judge=None) -> Dict[str, list]:
    """``{metric name: [JudgeItem]}`` for the rows: each metric (a name, or a
    :class:`~ragexam.metrics.judge.metric.JudgeMetric`; names are looked up among ``judge``'s custom
    metrics, then the built-ins) gets the answered rows of the questions it applies to
    (``applies_to``: all, answerable, unanswerable)."""
    from ragexam.metrics.judge import JudgeItem

    def item(r: AnswerRow) -> JudgeItem:
        return JudgeItem(r.item_id, r.question.question, r.answer, tuple(r.contexts or ()), r.question.ground_truth)

    answered = [r for r in rows if r.answer is not None]
    jobs: Dict[str, list] = {}
    for d in _definitions(metrics, judge):
        keep = {"all": lambda r: True, "answerable": lambda r: bool(r.question.answerable),
                "unanswerable": lambda r: not r.question.answerable}[d.applies_to]
        jobs[d.name] = [item(r) for r in answered if keep(r)]
    return jobs


def plan_judging(rows: Sequence[AnswerRow], judge, metrics: Sequence[Any], *, repeat: int = 1):
    """The judge's :class:`~ragexam.metrics.judge.JudgePlan` for these rows (nothing is sent)."""
    defs = _definitions(metrics, judge)
    return judge.plan(None, {d: items for d, items in zip(defs, judge_jobs(rows, defs, judge).values())},
                      repeat=repeat)


def evidence_per_context(evidence: Sequence[str], contexts: Sequence[str]) -> Optional[Dict[str, Any]]:
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


# --- the report ------------------------------------------------------------------------------------
@dataclass
class ScoreReport:
    """Everything ``ragexam score`` computes (``to_dict`` is ``score.json``)."""

    rows: List[AnswerRow]
    settings: Dict[str, Any]
    text: Dict[str, Any]
    text_by_type: Dict[str, Dict[str, Any]]
    attribution: Attribution
    judge_run: Any = None
    judge_metrics: Tuple[str, ...] = ()
    agreement: Dict[str, Any] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    seed: Optional[int] = None
    human: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # metric -> {item_id: human label}

    @property
    def pipelines(self) -> List[str]:
        return list(dict.fromkeys(r.pipeline for r in self.rows))

    @property
    def pass_metrics(self) -> Tuple[str, ...]:
        """The judge metrics with a pass rule (their pass rate is ``<metric>_pass``)."""
        jr = self.judge_run
        if jr is None:
            return ()
        return tuple(m for m in self.judge_metrics
                     if (d := jr.definition(m)) is not None and d.pass_rule is not None)

    def judge_summary(self, pipeline: str, metric: str, qtype: Optional[str] = None):
        """The :class:`~ragexam.metrics.judge.MetricSummary` of ``metric`` for ``pipeline`` (and question
        type ``qtype``), with bootstrap intervals drawn with the score's seed."""
        from ragexam.metrics.judge import summarize

        scores = [r.judge[metric] for r in self.rows if r.pipeline == pipeline and metric in r.judge
                  and (qtype is None or (r.question.type or "(none)") == qtype)]
        defn = self.judge_run.definition(metric) if self.judge_run is not None else None
        return summarize(scores, metric, seed=self.seed, definition=defn)

    def ppi(self, pipeline: str, metric: str) -> Optional[Dict[str, Any]]:
        """The judge mean of ``metric`` for ``pipeline`` corrected by the human labels (prediction-powered
        inference, :func:`ragexam.stats.ppi.ppi_mean`): the judge's value of every judged answer, and the
        (human, judge) pairs of the labelled ones -- on the scale the labels are on
        (:meth:`~ragexam.metrics.judge.metric.JudgeMetric.human_value`: a true/false label of faithfulness is
        compared with the judge's pass).  ``None`` with fewer than 2 labelled judged answers.  ``quote`` says
        which number to report."""
        from ragexam.stats.ppi import ppi_mean

        labels = self.human.get(metric) or {}
        defn = self.judge_run.definition(metric) if self.judge_run is not None else None
        if not labels or defn is None:
            return None
        rows = [r for r in self.rows if r.pipeline == pipeline and metric in r.judge and r.judge[metric].judged]
        f_all = [defn.judge_value(r.judge[metric]) for r in rows]
        pairs = [(defn.judge_value(r.judge[metric]), defn.human_value(labels[r.item_id])) for r in rows
                 if r.item_id in labels]
        if len(pairs) < 2 or any(v is None for v in f_all):
            return None
        est = ppi_mean(f_all, [f for f, _ in pairs], [y for _, y in pairs],
                       scale=(0.0, 1.0) if defn.human_on_pass else tuple(defn.score_range))
        scale = "pass rate" if defn.human_on_pass else "mean"
        narrower = (est.high - est.low) < (est.labels_high - est.labels_low)
        quote = (f"quote the corrected {scale} {fmt.num(est.estimate)} [{fmt.ci((est.low, est.high), short=False)}]: "
                 f"the judge's {scale} corrected by {fmt.plural(est.n_labelled, 'human label')}" if narrower else
                 f"quote the labels' own {scale} {fmt.num(est.labels_mean)} "
                 f"[{fmt.ci((est.labels_low, est.labels_high), short=False)}]: the judge does not narrow it")
        unlabelled = sum(1 for r in self.rows if r.pipeline == pipeline and r.item_id in labels and not (
            metric in r.judge and r.judge[metric].judged))
        return {**est.to_dict(), "metric": metric, "on": scale, "quote": quote, "labelled_unjudged": unlabelled}

    def judge_vs_evidence(self) -> Dict[str, List[Dict[str, Any]]]:
        """``{pipeline: [comparison]}``: each judge metric that has an evidence-based twin
        (:data:`EVIDENCE_TWINS`) beside it, over the answers where both have a value: ``n``, the
        judge's mean and the evidence mean, ``agree`` (share of answers on which the judge's and the
        evidence's values are equal after rounding to the nearest of 0/1 -- i.e. both say the
        contexts are good or both say they are not), and ``disagreements``: the answers where the
        two differ most (query id, both values), largest gap first.  Read them: either the judge
        is wrong, or the evidence string is too narrow (another chunk answers too)."""
        out: Dict[str, List[Dict[str, Any]]] = {}
        for p in self.pipelines:
            comps = []
            for m in self.judge_metrics:
                if m not in EVIDENCE_TWINS:
                    continue
                twin, how = EVIDENCE_TWINS[m]
                pairs = []
                for r in self.rows:
                    sc = r.judge.get(m)
                    if r.pipeline != p or sc is None or not sc.judged or twin not in r.evidence:
                        continue
                    jv = float(sc.passed) if how == "passed" else float(sc.score)
                    pairs.append((r.query_id, jv, float(r.evidence[twin])))
                if not pairs:
                    continue
                n = len(pairs)
                agree = sum(1 for _, a, b in pairs if (a >= 0.5) == (b >= 0.5)) / n
                worst = sorted(pairs, key=lambda t: (-abs(t[1] - t[2]), t[0]))
                comps.append({"judge_metric": m, "judge_value": "pass rate" if how == "passed" else "mean",
                              "evidence_metric": twin, "n": n, "judge": sum(a for _, a, _ in pairs) / n,
                              "evidence": sum(b for _, _, b in pairs) / n, "agree": agree,
                              "disagreements": [{"query_id": q, "judge": a, "evidence": b}
                                                for q, a, b in worst if abs(a - b) > 1e-12][:10]})
            if comps:
                out[p] = comps
        return out

    def missing_answers(self) -> Dict[str, int]:
        return {p: sum(1 for r in self.rows if r.pipeline == p and r.record is None) for p in self.pipelines}

    def results(self) -> Dict[str, Any]:
        """``{pipeline: {"n", "metrics", "ci95", "coverage"}}``: ``n`` the answerable questions with a
        text score; ``metrics`` the corpus ``chrf`` and ``bleu`` and the mean ``rouge_l`` over them,
        ``ok_share`` (the share of the pipeline's questions whose stage is ok or abstained_ok;
        unjudged ones count as not ok), each judge metric's mean over its judged items and, for a
        metric with a pass rule, its pass rate ``<metric>_pass``; ``coverage[metric]`` =
        ``{"n": judgeable items, "n_judged": judged}``; ``ci95[metric]`` the bootstrap interval of
        each judge mean and pass rate (the one ``ragexam check`` computes from the rows with the
        same seed; text metrics get theirs in ``check``, :mod:`ragexam.analysis.gating.gate`)."""
        out: Dict[str, Any] = {}
        for p in self.pipelines:
            text = self.text.get(p) or {}
            metrics: Dict[str, Optional[float]] = {m: _finite(text.get(m)) for m in ("chrf", "bleu", "rouge_l")}
            oks = [r.ok for r in self.rows if r.pipeline == p and r.ok is not None]
            metrics["ok_share"] = (sum(oks) / len(oks)) if oks else None
            coverage = {}
            ci95: Dict[str, List[float]] = {}
            passing = self.pass_metrics
            for m in self.judge_metrics:
                s = self.judge_summary(p, m)
                metrics[m] = _finite(s.mean)
                coverage[m] = {"n": s.n, "n_judged": s.n_judged}
                if s.ci95 is not None:
                    ci95[m] = [s.ci95[0], s.ci95[1]]
                if m in passing:
                    metrics[m + PASS_SUFFIX] = _finite(s.pass_rate)
                    coverage[m + PASS_SUFFIX] = {"n": s.n, "n_judged": s.n_judged}
                    if s.pass_ci95 is not None:
                        ci95[m + PASS_SUFFIX] = [s.pass_ci95[0], s.pass_ci95[1]]
            out[p] = {"n": text.get("n"), "metrics": metrics, "ci95": ci95, "coverage": coverage}
        return out

    def typed_rows(self) -> List[RunRow]:
        """Every row as :meth:`AnswerRow.typed_row` (what the history stores)."""
        return [r.typed_row(self.judge_metrics, self.pass_metrics) for r in self.rows]

    def coverage_failures(self, min_coverage: Optional[float] = None) -> List[str]:
        """Why a CI should fail this score: a judge metric whose coverage (judged / judgeable items) is
        below ``min_coverage`` (default: the ``min_coverage`` setting) for some pipeline, and -- always --
        a judge metric that judged none of a pipeline's items although there were some (e.g. ``no_contexts``
        for every answer: answers joined to a run without their pipeline), and a judge that judged nothing at
        all.  Empty when fine."""
        if self.judge_run is None:
            return []
        floor = self.settings.get("min_coverage") if min_coverage is None else check_min_coverage(min_coverage)
        out = []
        total = judged = 0
        for p in self.pipelines:
            for m in self.judge_metrics:
                s = self.judge_summary(p, m)
                total += s.n
                judged += s.n_judged
                why = ", ".join(f"{k}: {v}" for k, v in s.unjudged.items())
                if s.n and not s.n_judged:
                    hint = ("; answers get contexts from their own 'contexts' field, or from --run DIR with "
                            "--pipeline NAME when they name no pipeline of a run of several") \
                        if "no_contexts" in s.unjudged else ""
                    out.append(f"{m} of {p!r}: judged 0 of {s.n} ({why}){hint}")
                elif floor is not None and s.n and s.n_judged / s.n < floor:
                    out.append(f"{m} of {p!r}: judged {s.n_judged} of {s.n} ({s.n_judged / s.n:.0%}), below "
                               f"--min-coverage {floor:g}")
        if total and not judged:
            out.insert(0, f"nothing was judged: 0 of {total} judgments succeeded (see the unjudged reasons)")
        return out

    def to_dict(self) -> Dict[str, Any]:
        from ragexam import __version__

        out: Dict[str, Any] = {
            "format": SCORE_FORMAT,
            "kind": "score",
            "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ragexam_version": __version__,
            "settings": self.settings,
            "dataset": {"n_questions": len({r.query_id for r in self.rows}),
                        "n_answers": sum(1 for r in self.rows if r.record is not None),
                        "pipelines": self.pipelines, "missing_answers": self.missing_answers()},
            "text": self.text, "text_by_type": self.text_by_type,
            "results": self.results(),
            "judge": None,
            "attribution": self.attribution.to_dict(),
            "notes": list(self.notes),
        }
        jr = self.judge_run
        if jr is not None:
            types = sorted({r.question.type or "(none)" for r in self.rows})
            out["judge"] = {
                "model": jr.model, "endpoint": jr.endpoint, "language": jr.language, "repeat": jr.repeat,
                "rubrics": jr.rubrics, "signatures": jr.signatures, "usage": jr.usage,
                "summary": {p: {m: self.judge_summary(p, m).to_dict() for m in self.judge_metrics}
                            for p in self.pipelines},
                "by_type": {p: {t: {m: self.judge_summary(p, m, t).to_dict() for m in self.judge_metrics}
                                for t in types} for p in self.pipelines},
                "agreement": {m: a.to_dict() for m, a in self.agreement.items()},
                "definitions": {m: _definition_dict(jr.definition(m)) for m in self.judge_metrics},
                "vs_evidence": self.judge_vs_evidence(),
                "scoring": dict(jr.scoring), "probe": jr.probe,
                "ppi": {p: {m: v for m in self.judge_metrics if (v := self.ppi(p, m)) is not None}
                        for p in self.pipelines} if self.human else {},
            }
        return out


def _definition_dict(d: Optional[JudgeMetric]) -> Optional[Dict[str, Any]]:
    if d is None:
        return None
    return {"question": d.question, "needs": list(d.needs), "applies_to": d.applies_to,
            "score_range": list(d.score_range), "labels": list(d.labels), "pass": d.pass_text,
            "custom": d.custom, "source": d.source}


def score_answers(qa, answers: Sequence[AnswerRecord], *, answers_source: str = "answers",
                  run: Optional[RunData] = None, pipeline: Optional[str] = None, k: Optional[int] = None,
                  corpus: Any = None, judge=None, judge_metrics: Optional[Sequence[str]] = None, repeat: int = 1,
                  correct_if: Optional[CorrectIf] = None, abstain_phrases: Optional[Sequence[str]] = None,
                  bleu_tokenize: str = "auto", progress: Optional[Callable[[int, int], None]] = None,
                  rows: Optional[List[AnswerRow]] = None, notes: Optional[List[str]] = None,
                  min_coverage: Optional[float] = None, seed: Optional[int] = None,
                  human: Optional[Mapping[Tuple[Optional[str], str], Mapping[str, Any]]] = None) -> ScoreReport:
    """Score ``answers`` to the questions of ``qa`` (see the module docstring).

    :param judge: a :class:`~ragexam.metrics.judge.Judge`, or ``None`` for text metrics only.
    :param judge_metrics: which judge metrics: names (built-ins, or the judge's custom metrics) or
        :class:`~ragexam.metrics.judge.metric.JudgeMetric` objects (default
        :data:`~ragexam.metrics.judge.prompts.DEFAULT_METRICS`).
    :param correct_if: the text threshold for correctness when the judge does not grade
        ``answer_correctness``.
    :param abstain_phrases: the phrase list (default :data:`ragexam.metrics.verdicts.ABSTAIN_PHRASES`)
        when the judge does not grade ``abstention``.
    :param rows: rows from :func:`prepare_rows` (to avoid preparing twice).
    :param min_coverage: the judge coverage (0-1) below which :meth:`ScoreReport.coverage_failures`
        reports a metric (recorded in the settings); checked before any work.
    :param seed: the seed of the judge intervals' bootstrap (default
        :data:`ragexam.stats.DEFAULT_SEED`, as ``ragexam check`` uses).
    :param human: human labels, ``{(pipeline or None, query_id): {metric: label}}``
        (:func:`ragexam.analysis.judging.agreement.read_human_labels`): each judged metric with labels gets a
        prediction-powered estimate beside its judge mean (:meth:`ScoreReport.ppi`).
    """
    from ragexam.metrics.judge.prompts import detect_language

    notes = notes if notes is not None else []
    run = as_run_data(run)
    if min_coverage is not None:
        min_coverage = check_min_coverage(min_coverage)
        if judge is None:
            raise InputError("--min-coverage applies to an LLM judge; pass --judge-model too", source="score",
                             field="min_coverage")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InputError(f"received {seed!r}; expected an integer", source="score", field="seed")
    if human and judge is None:
        raise InputError("--human labels correct an LLM judge's scores; pass --judge-model too", source="score",
                         field="human")
    if rows is None:
        rows = prepare_rows(qa, answers, answers_source=answers_source, run=run, pipeline=pipeline, k=k,
                            corpus=corpus, notes=notes)
    language = detect_language([q.question for q in qa] + [q.ground_truth for q in qa if q.ground_truth])
    if bleu_tokenize not in ("auto", "none", "13a", "intl", "char", "ko-mecab", "ko-kiwi"):
        raise InputError(f"received {bleu_tokenize!r}; expected auto, none, 13a, intl, char, ko-mecab or ko-kiwi",
                         source="score", field="bleu_tokenize")
    bleu_tok, rouge_tok = _tokenizers(language, bleu_tokenize)
    text_job = _TextScores(rows, bleu_tok, rouge_tok, beside=judge is not None)  # beside the judge's calls
    phrases = tuple(abstain_phrases) if abstain_phrases is not None else ABSTAIN_PHRASES
    for r in rows:
        r.phrase = is_abstention(r.answer, phrases)
    judged = _Judged() if judge is None else _judge_rows(rows, judge, judge_metrics, repeat, progress, notes, qa)
    text, text_by_type = _text_tables(text_job.result(), rows, bleu_tok, rouge_tok)
    if run is None and any(r.question.answerable and r.retrieval_source == "unknown" for r in rows):
        notes.append("retrieval is unknown for answers without contexts: pass --run DIR (from `ragexam run ... "
                     "--out DIR`) to attribute answerable questions to a stage")
    sources = _attribute(rows, judged, correct_if, abstain_phrases, notes)
    attribution = sources.pop("_attribution")
    settings = {
        "qa": str(qa.source), "answers": answers_source, "run": run.source if run is not None else None,
        "pipeline": pipeline, "k": k, "language": language,
        "bleu_tokenize": bleu_tok, "rouge_tokenize": rouge_tok,
        "correct_if": str(correct_if) if correct_if is not None else None, **sources,
        "abstain_phrases": list(phrases), "min_coverage": min_coverage,
        "judge": ({"model": judge.model, "endpoint": judge.endpoint, "metrics": list(judged.metrics),
                   "repeat": repeat, "temperature": judge.temperature, "max_tokens": judge.max_tokens,
                   "seed": judge.seed, "max_attempts": judge.max_attempts,
                   "scoring": dict(judged.run.scoring) if judged.run is not None else None,
                   "rubrics": [d.source for d in judged.defs if d.custom]} if judge is not None else None),
    }
    from ragexam.stats import DEFAULT_SEED

    settings["seed"] = DEFAULT_SEED if seed is None else seed
    report = ScoreReport(rows, settings, text, text_by_type, attribution, judged.run, judged.metrics,
                         judged.agreement, notes, settings["seed"])
    if human:
        report.human = _human_by_item(rows, human, judged.metrics, notes)
    return report


@dataclass
class _Judged:
    """What the judge gave a score: the metrics, their definitions, the run and its agreement with itself."""

    metrics: Tuple[str, ...] = ()
    defs: List[JudgeMetric] = field(default_factory=list)
    run: Any = None
    agreement: Dict[str, Any] = field(default_factory=dict)
    untrusted: Dict[str, str] = field(default_factory=dict)  # metric -> why it is not shown to separate


def _judge_rows(rows: List[AnswerRow], judge: Any, judge_metrics: Optional[Sequence[Any]], repeat: int,
                progress: Optional[Callable[[int, int], None]], notes: List[str], qa: Any = None) -> _Judged:
    """Judge the rows on the metrics (default :data:`~ragexam.metrics.judge.prompts.DEFAULT_METRICS`): each row
    gets its :class:`~ragexam.metrics.judge.ItemScore` per metric and, for metrics with an evidence twin, the
    evidence values; with ``repeat >= 2`` the judge's agreement with itself; a recorded judge-check that did not
    separate is a note."""
    from ragexam.analysis.judging.trust import recorded_warnings, untrusted
    from ragexam.metrics.judge.prompts import DEFAULT_METRICS

    defs = _definitions(list(judge_metrics or DEFAULT_METRICS), judge)
    metrics = tuple(d.name for d in defs)
    jobs = judge_jobs(rows, defs, judge)
    run = judge.run(None, {d: jobs[d.name] for d in defs}, repeat=repeat, progress=progress)
    for m in metrics:
        scores = run.items(m)
        for r in rows:
            if r.item_id in scores:
                r.judge[m] = scores[r.item_id]
    agreement: Dict[str, Any] = {}
    if repeat >= 2:
        from ragexam.analysis.judging.agreement import repeat_agreement

        agreement = {m: repeat_agreement(run.judgments, run.definition(m)) for m in metrics}
    for r in rows:
        if any(m in EVIDENCE_TWINS and m in r.judge for m in metrics) and r.question.answerable:
            ev = evidence_per_context(r.question.evidence, r.contexts or ())
            if ev is not None:
                r.evidence = ev
    dataset = dataset_of(qa) if qa is not None else None
    notes.extend(run.notes + recorded_warnings(judge, run, dataset))
    return _Judged(metrics, defs, run, agreement, untrusted(judge, run, dataset))


def _text_tables(stats: Dict[str, Any], rows: List[AnswerRow], bleu_tok: str, rouge_tok: str
                 ) -> Tuple[Dict[str, Any], Dict[str, Dict[str, Any]]]:
    """The corpus text metrics per pipeline, and per pipeline and question type."""
    pipelines = list(dict.fromkeys(r.pipeline for r in rows))
    text = {p: _text_aggregate(stats, lambda r, p=p: r.pipeline == p, bleu_tok, rouge_tok) for p in pipelines}
    types = sorted({r.question.type or "(none)" for r in rows})
    text_by_type = {p: {t: {kk: v for kk, v in _text_aggregate(
        stats, lambda r, p=p, t=t: r.pipeline == p and (r.question.type or "(none)") == t, bleu_tok,
        rouge_tok).items() if kk != "signatures"} for t in types} for p in pipelines}
    return text, text_by_type


def _attribute(rows: List[AnswerRow], judged: _Judged, correct_if: Optional[CorrectIf],
               abstain_phrases: Optional[Sequence[str]], notes: List[str]) -> Dict[str, Any]:
    """Stage attribution of every row (its ``stage``); returns the verdict sources for the settings, and the
    :class:`~ragexam.analysis.answers.diagnosis.Attribution` under ``_attribution``."""
    from ragexam import __version__

    metrics, judge_run = judged.metrics, judged.run
    correct_src = "judge" if "answer_correctness" in metrics else ("text" if correct_if is not None else "none")
    abstain_src = "judge" if "abstention" in metrics else "phrases"
    if correct_if is not None and correct_src == "judge":
        notes.append(f"--correct-if {correct_if} is not used for correctness: the judge grades answer_correctness")
    faithful_src = "judge" if "faithfulness" in metrics else "none"
    inputs = [_stage_inputs(r, correct_src, abstain_src, faithful_src, correct_if) for r in rows]

    def rub(m: str) -> str:
        return f"judge({judge_run.rubrics[m]['name']}@{judge_run.rubrics[m]['sha']})"

    ks = sorted({r.k for r in rows if r.question.answerable})
    rsrc = sorted({r.retrieval_source for r in rows if r.question.answerable}) or ["n/a"]
    sig = "|".join([
        f"retrieval:{'+'.join(rsrc)}", "evidence:first_rank<=k", f"k:{','.join(map(str, ks)) or '-'}",
        f"correct:{rub('answer_correctness') if correct_src == 'judge' else (str(correct_if) if correct_if else 'none')}",
        "partial:not_correct",
        f"faithful:{rub('faithfulness') if faithful_src == 'judge' else 'none'}",
        f"abstain:{rub('abstention') if abstain_src == 'judge' else 'phrases-' + (ABSTAIN_PHRASES_VERSION if abstain_phrases is None else 'custom')}",
        f"version:ragexam-{__version__}"])
    judged_inputs = {"correct": "answer_correctness", "faithful": "faithfulness", "abstained": "abstention"}
    attribution = attribute_all(inputs, signature=sig, notes=notes, unverified={
        i: judged.untrusted[m] for i, m in judged_inputs.items() if m in judged.untrusted})
    notes.extend(attribution.caveat_notes())
    for r, st in zip(rows, attribution.results):
        r.stage = st
    return {"correctness_source": correct_src, "abstention_source": abstain_src, "faithfulness_source": faithful_src,
            "_attribution": attribution}


def _human_by_item(rows: Sequence[AnswerRow], human: Mapping[Tuple[Optional[str], str], Mapping[str, Any]],
                   metrics: Sequence[str], notes: List[str]) -> Dict[str, Dict[str, Any]]:
    """``{metric: {item_id: label}}`` of the labels of judged metrics: a label names its answer by query id and,
    when the answers hold several pipelines, pipeline (a label without one applies to every pipeline's answer).
    Labels of metrics that were not judged, and of questions without an answer, are counted in a note."""
    out: Dict[str, Dict[str, Any]] = {}
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


def _stage_inputs(r: AnswerRow, correct_src: str, abstain_src: str, faithful_src: str,
                  correct_if: Optional[CorrectIf]) -> StageInputs:
    q = r.question
    base = dict(pipeline=r.pipeline, query_id=q.query_id, type=q.type, answerable=q.answerable,
                retrieved=r.retrieved, first_rank=r.first_rank, evidence_split=r.evidence_split, answer=r.answer,
                key=q.ground_truth)
    if r.answer is None:
        why = "no_answer" if r.record is None or not r.record.error else f"no_answer ({r.record.error[:80]})"
        return StageInputs(**base, missing=why)
    faithful = None
    if faithful_src == "judge":
        s = r.judge.get("faithfulness")
        if s is not None and s.judged:
            faithful = s.label == "faithful"
    if q.answerable:
        if correct_src == "judge":
            s = r.judge["answer_correctness"]
            if s.judged:
                return StageInputs(**base, correct=s.label == "correct", correct_detail=s.label, faithful=faithful)
            return StageInputs(**base, faithful=faithful, missing=f"judge:{s.reason}")
        if correct_src == "text":
            if not r.text:
                return StageInputs(**base, faithful=faithful, missing="no_ground_truth")
            ok = correct_if.holds(r.text)
            detail = ",".join(f"{m}={r.text[m]:.3f}" for m in correct_if.metrics)
            return StageInputs(**base, correct=ok, correct_detail=detail, faithful=faithful)
        return StageInputs(**base, faithful=faithful, missing="no_correctness_source")
    if abstain_src == "judge":
        s = r.judge["abstention"]
        if s.judged:
            return StageInputs(**base, abstained=s.label == "abstained", faithful=faithful)
        return StageInputs(**base, faithful=faithful, missing=f"judge:{s.reason}")
    return StageInputs(**base, abstained=r.phrase is not None, faithful=faithful)


def check_min_coverage(value: Any) -> float:
    """``value`` as a judge-coverage floor: a number from 0 to 1 (0.9 = 90 % of the items judged)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not 0.0 <= float(value) <= 1.0:
        raise InputError(f"received {value!r}; expected a fraction from 0 to 1, e.g. 0.9 for 90 % of the items "
                         "judged", source="score", field="min_coverage")
    return float(value)


def save_score(report: ScoreReport, directory: Union[str, Path]) -> Path:
    """Write ``score.json``, ``per_answer.csv`` and (with a judge) ``judgments.jsonl`` to ``directory``
    (:func:`ragexam.storage.runfolder.write_score_folder`)."""
    from ragexam.llm.redact import redact_written
    from ragexam.storage.runfolder import write_score_folder

    judgments = None
    if report.judge_run is not None:
        judgments = [j.to_dict() for j in report.judge_run.judgments]
    return write_score_folder(directory, report.to_dict(), [r.csv_row(report.judge_metrics) for r in report.rows],
                              judgments, redact=redact_written())
