"""The score summary, typed: what ``score.json`` holds (docs/run-format.md), as dataclasses.

:class:`ScoreSummary` is what ``ragexam score`` writes (its folder's ``score.json``, the history's record, ``--json``)
and what every reader reads -- the console (``score``, ``show``), the HTML report, ``ragexam serve``'s score pages,
``check`` and ``compare`` -- by attribute::

    s = read_score_folder("S").summary
    s.results["bm25 | paragraphs:400"].metrics["answer_correctness"]
    s.judge.summary["bm25 | paragraphs:400"]["faithfulness"].pass_ci95
    s.attribution.by_type["bm25 | paragraphs:400"]["lexical"]["ok"]
    s.text["bm25 | paragraphs:400"].signatures["bleu"]

The parts the judge and the stage attribution produce (:class:`JudgeStat`, :class:`AttributionSection`,
:class:`StageVerdict`, ...) are declared here once: their producers build these records, and ``ragexam score
--report`` puts the same :class:`JudgeSection` and attribution matrices into the run's summary
(:class:`~ragexam.storage.summary.RunSummary`).  Every format since ``ragexam-score/1`` reads (a field an older
file lacks takes its default and is not written back; a key this version does not know is kept).  A summary is also
a read-only mapping of its top-level keys to their JSON values, as :class:`~ragexam.storage.summary.RunSummary` is.

This module imports nothing of ragexam but :mod:`ragexam.errors` and :mod:`ragexam.storage.records`.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

from ragexam.storage.records import JsonView, Record, opt

__all__ = ["SCORE_FORMAT", "ScoreSummary", "ScoreSettings", "JudgeSettings", "ScoreDataset", "TextScores",
           "ScoreResult", "Coverage", "JudgeSection", "JudgeStat", "QuotedUnits", "Agreement", "MetricDefinition",
           "VsEvidence", "Disagreement", "HumanCorrected", "AttributionSection", "StageVerdict", "PipelineName",
           "TrustCheck", "JudgeTrust", "TRUST_VERDICTS", "GATED", "SegmentsSection", "Segment", "SegmentComparison",
           "Spread", "MeanStat", "Feedback", "WorstTrace", "ExamMatch", "ExamMatching"]

#: The format ``ragexam score --out`` writes.
SCORE_FORMAT = "ragexam-score/2"
#: a 95% interval ``(low, high)``
Interval = Tuple[float, float]
#: the keys only a history record has (not written to a folder's ``score.json``)
_RECORD_ONLY = frozenset({"run_id", "scored_run", "config", "pipelines"})


# -- settings ---------------------------------------------------------------------------------------------------


@dataclass
class JudgeSettings(Record):
    """``settings.judge``: the judge's model and every setting of its calls."""

    model: Optional[str] = None
    endpoint: Optional[str] = None
    metrics: List[str] = field(default_factory=list)
    repeat: int = 1
    temperature: Optional[float] = None
    max_tokens: Optional[int] = None
    seed: Optional[int] = None
    max_attempts: Optional[int] = None
    #: metric -> how its scores were read (``sample``, ``probability``)
    scoring: Optional[Dict[str, str]] = None
    #: the custom rubric files judged
    rubrics: List[str] = field(default_factory=list)


@dataclass
class ScoreSettings(Record):
    """``settings``: every setting of the score -- what was scored, how text was tokenized, where each verdict of
    the stage attribution came from, the judge."""

    qa: Optional[str] = None
    answers: Optional[str] = None
    run: Optional[str] = None
    pipeline: Optional[str] = None
    k: Optional[int] = None
    language: Optional[str] = None
    bleu_tokenize: Optional[str] = None
    rouge_tokenize: Optional[str] = None
    correct_if: Optional[str] = None
    #: where correctness, abstention and faithfulness came from (``judge``, ``text``, ``phrases``, ``none``)
    correctness_source: Optional[str] = None
    abstention_source: Optional[str] = None
    faithfulness_source: Optional[str] = None
    abstain_phrases: List[str] = field(default_factory=list)
    min_coverage: Optional[float] = None
    judge: Optional[JudgeSettings] = None
    seed: Optional[int] = None
    #: ``score --by``: the trace field the answers were segmented by, and the baseline segment
    by: Optional[str] = opt()
    baseline: Optional[str] = opt()


# -- what was scored ----------------------------------------------------------------------------------------------


@dataclass
class ScoreDataset(Record):
    """``dataset``: how many questions and answers, the pipelines, the questions each pipeline did not answer; a
    history record adds the scored run's question set, corpus and their hashes."""

    n_questions: int = 0
    n_answers: Optional[int] = None
    pipelines: List[str] = field(default_factory=list)
    missing_answers: Dict[str, int] = field(default_factory=dict)
    qa: Optional[str] = opt()
    corpus: Optional[str] = opt()
    corpus_sha256: Optional[str] = opt()
    qa_sha256: Optional[str] = opt()


@dataclass
class TextScores(Record):
    """``text[pipeline]`` (and ``text_by_type[pipeline][type]``): corpus BLEU, corpus chrF and mean ROUGE-L F over
    the ``n`` answerable questions with an answer and a reference, and (per pipeline) their signatures."""

    n: int = 0
    bleu: Optional[float] = None
    chrf: Optional[float] = None
    rouge_l: Optional[float] = None
    signatures: Dict[str, str] = opt(factory=dict)


@dataclass
class Coverage(Record):
    """Judgeable (``n``) and judged answers of a judge metric (of ``ok_share``: all and decided answers), and the
    answers the metric does not apply to (``n_not_applicable``: faithfulness of an answer that declines), which are
    not judgeable and count in neither."""

    n: int = 0
    n_judged: int = 0
    n_not_applicable: int = 0


@dataclass
class ScoreResult(Record):
    """``results[pipeline]``: text metrics, ``ok_share``, judge means (and pass rates) with their intervals and
    coverage."""

    n: Optional[int] = None
    metrics: Dict[str, Optional[float]] = field(default_factory=dict)
    ci95: Dict[str, Optional[Interval]] = field(default_factory=dict)
    coverage: Dict[str, Coverage] = field(default_factory=dict)


# -- the judge ----------------------------------------------------------------------------------------------------


@dataclass
class QuotedUnits(Record):
    """Units (claims, evidence spans) a context quotes word for word, of all units judged."""

    units: int = 0
    of: int = 0


@dataclass
class JudgeStat(Record):
    """One judge metric over a set of answers (a pipeline, a pipeline's question type): mean and pass rate with
    their 95% intervals over the judged answers, coverage, why the others were not judged, the labels, and with
    repeats the share whose verdict flipped and the ties (:func:`ragexam.metrics.judge.summarize` computes it).

    ``n`` counts the judgeable answers, ``coverage`` is ``n_judged / n``; ``n_not_applicable`` the answers the metric
    does not apply to (an answer that declines makes no claim to check), counted apart -- their reasons are in
    ``unjudged`` too.  (A file written before ``n_not_applicable`` counted them in ``n``.)"""

    metric: str = ""
    n: int = 0
    n_judged: int = 0
    coverage: Optional[float] = None
    #: answers the metric does not apply to (unjudged reasons ``no_claims``, ``declined``): in neither ``n`` nor
    #: ``n_judged``
    n_not_applicable: int = 0
    mean: Optional[float] = None
    ci95: Optional[Interval] = None
    pass_rate: Optional[float] = None
    pass_ci95: Optional[Interval] = None
    n_passed: Optional[int] = None
    unjudged: Dict[str, int] = field(default_factory=dict)
    labels: Dict[str, int] = field(default_factory=dict)
    n_repeated: int = 0
    flip_share: Optional[float] = None
    ties: int = 0
    #: the interval's signature (the bootstrap's; Wilson's on the scale when every score is the same)
    interval: Optional[str] = None
    #: ``probability`` when the scores are probability-weighted, else ``sample`` (the written scores)
    scoring: str = "sample"
    #: what ``mean`` is: ``mean`` (of written scores), ``mean P(true)``, ``mean P(<label>)``, ``expected score``
    value_name: str = "mean"
    #: with probability scoring, the mean of the scores the judge wrote (shown beside the probability mean)
    written_mean: Optional[float] = None
    #: why ``ci95`` is ``None`` ("n = 4: too few for an interval") or how it was drawn when not by the bootstrap
    interval_note: Optional[str] = None
    #: how ``pass_ci95`` was drawn (``wilson``), when there is one
    pass_interval: Optional[str] = None
    #: context relevance: judged answers whose reported average differed from the recomputed one
    average_mismatch: Optional[int] = opt()
    quoted: Optional[QuotedUnits] = opt()


@dataclass
class Agreement(Record):
    """The judge's agreement with itself over its repeats of one metric."""

    metric: str = ""
    repeats: int = 0
    n_items: int = 0
    n_items_complete: int = 0
    n_units: int = 0
    exact: Optional[float] = None
    mean_abs_diff: Optional[float] = None
    kappa: Optional[float] = None
    kappa_quadratic: Optional[float] = None
    kappa_pairs: int = 0
    kappa_undefined_pairs: int = 0


@dataclass
class MetricDefinition(Record):
    """What a judge metric asks, what it needs, which answers it applies to, its scale, labels and pass rule."""

    renamed = {"pass": "pass_rule"}

    question: str = ""
    needs: List[str] = field(default_factory=list)
    applies_to: str = "all"
    score_range: List[float] = field(default_factory=list)
    labels: List[str] = field(default_factory=list)
    pass_rule: Optional[str] = None
    custom: bool = False
    source: Optional[str] = None


@dataclass
class Disagreement(Record):
    """An answer on which the judge and the evidence differ."""

    query_id: str = ""
    judge: Optional[float] = None
    evidence: Optional[float] = None


@dataclass
class VsEvidence(Record):
    """A judge metric beside its evidence-based twin on the same answers: both means, the share on which they
    agree, and the answers on which they differ most."""

    judge_metric: str = ""
    judge_value: str = ""
    evidence_metric: str = ""
    n: int = 0
    judge: Optional[float] = None
    evidence: Optional[float] = None
    agree: Optional[float] = None
    disagreements: List[Disagreement] = field(default_factory=list)


@dataclass
class HumanCorrected(Record):
    """A judge mean corrected by human labels (prediction-powered inference), the labels' own mean, and which of
    the two to quote."""

    estimate: Optional[float] = None
    low: Optional[float] = None
    high: Optional[float] = None
    se: Optional[float] = None
    judge_mean: Optional[float] = None
    correction: Optional[float] = None
    n_all: int = 0
    n_labelled: int = 0
    labels_mean: Optional[float] = None
    labels_low: Optional[float] = None
    labels_high: Optional[float] = None
    confidence: Optional[float] = None
    #: an interval of zero width (no spread in the labels) was replaced by Wilson's on the scale
    floored: bool = False
    #: the estimate or an interval lay outside the scale and was clipped to it
    clipped: bool = False
    signature: str = ""
    metric: str = ""
    #: ``mean`` or ``pass rate``: the scale the labels are on
    on: str = ""
    quote: str = ""
    labelled_unjudged: int = 0

    @property
    def corrected_narrower(self) -> bool:
        """The corrected interval is narrower than the labels' own: the judge helps, quote the corrected value."""
        if None in (self.low, self.high, self.labels_low, self.labels_high):
            return False
        return (self.high - self.low) < (self.labels_high - self.labels_low)  # type: ignore[operator]

    @property
    def preferred(self) -> Tuple[str, Optional[float], Optional[Interval]]:
        """What a table shows in place of the judge's own number (``quote`` in words): ``("corrected", estimate,
        interval)`` when :attr:`corrected_narrower`, else ``("labels", the labels' mean, its interval)``."""
        if self.corrected_narrower:
            return "corrected", self.estimate, (self.low, self.high)  # type: ignore[return-value]
        return "labels", self.labels_mean, (self.labels_low, self.labels_high)  # type: ignore[return-value]

    def in_place_of(self, stat: JudgeStat) -> Tuple[Optional[float], Optional[Interval], Optional[float],
                                                    Optional[Interval]]:
        """``(mean, ci95, pass rate, pass ci95)`` a table shows for the judge's ``stat`` of this metric: the
        :attr:`preferred` estimate in place of its mean or of its pass rate, whichever scale the labels are on."""
        _, value, interval = self.preferred
        if self.on == "pass rate":
            return stat.mean, stat.ci95, value, interval
        return value, interval, stat.pass_rate, stat.pass_ci95


#: a judged metric's trust verdicts (:class:`JudgeTrust`), best first: a judge-check's verdicts
#: (:data:`ragexam.analysis.judging.check.VERDICTS`), then ``other_set`` (shown only on another question set),
#: ``unchecked`` (no check: skipped, no corpus, too few questions), ``no_contrast`` (no check can measure the metric)
TRUST_VERDICTS = ("separates", "weakly", "does_not", "inverted", "too_few", "unknown", "other_set", "unchecked",
                  "no_contrast")
#: the verdicts ``ragexam check`` gates on: the judge was shown to separate good from bad on this question set
GATED = ("separates", "weakly")


@dataclass
class TrustCheck(Record):
    """One measurement of whether the judge tells good from bad on a metric: a judge-check (``ragexam judge-check``
    or the one ``score`` runs; the contrast set of a question set, :mod:`ragexam.analysis.judging.check`) or the
    contrast a score holds with no extra call (the judge's value of each context beside whether it holds the
    question's evidence, :func:`ragexam.analysis.judging.check.evidence_contrast`): its verdict and sentence, the
    AUC with its 95 % interval over ``n_questions`` questions, the scoring, the question set it was measured on and
    whether that is the set scored (``same_set``), when, and whether this score ran it (``ran``)."""

    verdict: str = "unknown"
    text: str = ""
    scoring: Optional[str] = None
    auc: Optional[float] = None
    low: Optional[float] = None
    high: Optional[float] = None
    n_questions: int = 0
    dataset: Optional[str] = None
    same_set: bool = True
    checked: Optional[str] = None
    ran: bool = False


def why_unchecked(metric: str, text: str) -> str:
    """The sentence of a metric no judge-check measured, said once: the trust stage wrote it as ``"<metric>:
    judge-check <why>"`` and every reader put the metric before it again (``answer_correctness: not checked --
    answer_correctness: judge-check no corpus …``).  The metric's name and a ``judge-check`` that does not start a
    sentence of its own are dropped: ``no corpus to build the judge-check's contrast set from: …``; ``judge-check
    skipped (--no-judge-check)`` and ``judge-check not run: …`` stay as they are."""
    if metric and text.startswith(f"{metric}: "):
        text = text[len(metric) + 2:]
    if text.startswith("judge-check ") and not text.startswith(("judge-check skipped", "judge-check not run")):
        text = text[len("judge-check "):]
    return text


@dataclass
class JudgeTrust(Record):
    """How far one judged metric's numbers were shown to be worth reading (``judge.trust[metric]``): the
    ``verdict`` (:data:`TRUST_VERDICTS`) and its sentence, from the judge-check of this judge, rubric, scoring and
    question set (``check``) and the judge beside the evidence of these answers (``evidence``, context metrics):
    a judge that passes contexts without evidence as often as those with it does not separate, whatever a check
    elsewhere said."""

    metric: str = ""
    verdict: str = "unchecked"
    text: str = ""
    check: Optional[TrustCheck] = None
    evidence: Optional[TrustCheck] = None

    def __post_init__(self) -> None:
        self.text = why_unchecked(self.metric, self.text) if self.verdict in ("unchecked", "no_contrast") else self.text

    @property
    def gated(self) -> bool:
        """``ragexam check`` may gate on the metric: its judge was shown to separate on this question set."""
        return self.verdict in GATED


@dataclass
class JudgeSection(Record):
    """The ``judge`` section: who judged and how, and per pipeline (and question type) and metric its
    :class:`JudgeStat`; the judge's agreement with itself, the judge beside the evidence, the means corrected by
    human labels."""

    model: Optional[str] = None
    endpoint: Optional[str] = None
    language: Optional[str] = None
    repeat: int = 1
    #: metric -> the rubric's name, hash (and a custom rubric's file)
    rubrics: Dict[str, Dict[str, str]] = field(default_factory=dict)
    signatures: Dict[str, str] = field(default_factory=dict)
    #: the calls of this run: calls, requests, cached, tokens, cost (:class:`ragexam.llm.cost.Usage`)
    usage: Dict[str, Any] = field(default_factory=dict)
    summary: Dict[str, Dict[str, JudgeStat]] = field(default_factory=dict)
    by_type: Dict[str, Dict[str, Dict[str, JudgeStat]]] = field(default_factory=dict)
    agreement: Dict[str, Agreement] = field(default_factory=dict)
    definitions: Dict[str, Optional[MetricDefinition]] = field(default_factory=dict)
    vs_evidence: Dict[str, List[VsEvidence]] = field(default_factory=dict)
    scoring: Dict[str, str] = field(default_factory=dict)
    #: what the endpoint supports (:class:`ragexam.llm.probe.ProbeResult`), when it was asked
    probe: Optional[Dict[str, Any]] = None
    ppi: Dict[str, Dict[str, HumanCorrected]] = field(default_factory=dict)
    #: metric -> how far its judge was shown to separate good from bad (absent before trust was measured)
    trust: Dict[str, JudgeTrust] = field(default_factory=dict)

    @property
    def metrics(self) -> List[str]:
        """The judged metrics, in order."""
        return list(dict.fromkeys(m for ms in self.summary.values() for m in ms))

    def for_pipelines(self, names: List[str]) -> "JudgeSection":
        """A copy whose per-pipeline parts hold only the pipelines ``names`` (the pipelines of a run)."""
        return dataclasses.replace(self, summary={p: v for p, v in self.summary.items() if p in names},
                                   vs_evidence={p: v for p, v in self.vs_evidence.items() if p in names})


# -- stage attribution --------------------------------------------------------------------------------------------


@dataclass
class StageVerdict(Record):
    """One answer's stage label (``attribution.questions``): what lost it, and the verdicts behind the label."""

    pipeline: str = ""
    query_id: str = ""
    type: Optional[str] = None
    answerable: bool = True
    label: str = ""
    reason: Optional[str] = None
    retrieved: Optional[bool] = None
    first_rank: Optional[int] = None
    correct: Optional[bool] = None
    correct_detail: Optional[str] = None
    faithful: Optional[bool] = None
    abstained: Optional[bool] = None
    #: what the label's word is worth: ``judge_unchecked:<input> (why)``, ``short_answer (...)``
    #: (:mod:`ragexam.analysis.answers.diagnosis`)
    caveats: List[str] = opt(factory=list)

    @property
    def answer_verdict(self) -> Optional[str]:
        """Correctness (or, for an unanswerable question, abstention) in words; ``None`` when it is unknown."""
        if self.answerable:
            return self.correct_detail or (None if self.correct is None else
                                           ("correct" if self.correct else "not correct"))
        return None if self.abstained is None else ("abstained" if self.abstained else "answered")

    @property
    def verdict(self) -> str:
        """The verdict in words: :attr:`answer_verdict`, unfaithful, and the reason of an unjudged one."""
        words = [w for w in (self.answer_verdict, "unfaithful" if self.faithful is False else None, self.reason) if w]
        return "; ".join(words)


@dataclass
class AttributionSection(Record):
    """The ``attribution`` section: the settings behind the labels (``signature``), per pipeline the label counts,
    the matrix question type x label, the reasons of the unjudged, and every answer's :class:`StageVerdict`."""

    signature: str = ""
    labels: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    counts: Dict[str, Dict[str, int]] = field(default_factory=dict)
    by_type: Dict[str, Dict[str, Dict[str, int]]] = field(default_factory=dict)
    unjudged_reasons: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: per pipeline, how many labels carry each kind of caveat (``judge_unchecked:correct``, ``short_answer``)
    caveats: Dict[str, Dict[str, int]] = field(default_factory=dict)
    questions: List[StageVerdict] = field(default_factory=list)

    def matrix(self, pipeline: str) -> Tuple[List[str], List[str], List[List[int]]]:
        """``(types, labels, counts)`` of one pipeline (labels: the section's order, then any other seen)."""
        by_type = self.by_type.get(pipeline) or {}
        labels = list(self.labels)
        for counts in by_type.values():
            labels += [s for s in counts if s not in labels]
        types = list(by_type)
        return types, labels, [[int(by_type[t].get(s, 0)) for s in labels] for t in types]

    def verdicts(self) -> Dict[Tuple[str, str], StageVerdict]:
        """``{(pipeline, query_id): stage verdict}`` of every answer."""
        return {(v.pipeline, v.query_id): v for v in self.questions}


# -- segments (``score --by``) ------------------------------------------------------------------------------------


@dataclass
class Spread(Record):
    """Percentiles of a spread (latency in milliseconds, tokens) over ``n`` answers that recorded it
    (:func:`ragexam.stats.quantiles.percentiles`): ``None`` with ``too_few[name]`` = the values it needs."""

    n: int = 0
    p50: Optional[float] = None
    p90: Optional[float] = None
    p99: Optional[float] = None
    too_few: Dict[str, int] = opt(factory=dict)


@dataclass
class MeanStat(Record):
    """A mean over ``n`` answers with its 95% interval (``None`` with ``note`` saying why: too few)."""

    n: int = 0
    mean: Optional[float] = None
    ci95: Optional[Interval] = None
    note: Optional[str] = opt()


@dataclass
class Feedback(Record):
    """The feedback recorded on a segment's traces: answers with any, and with negative feedback."""

    n: int = 0
    negative: int = 0


@dataclass
class Segment(Record):
    """One segment of the answers (``score --by``): how many answers, failed requests, the judge's metrics
    (:class:`JudgeStat` each), the exam's evidence on the answers whose question is an exam question
    (``evidence_hit``, ``evidence_precision``, ``evidence_recall``: :class:`MeanStat`), feedback, and the latency
    and token percentiles."""

    name: str = ""
    n_answers: int = 0
    n_failed: int = 0
    n_questions: int = 0
    judge: Dict[str, JudgeStat] = field(default_factory=dict)
    n_exam: int = 0
    evidence: Dict[str, MeanStat] = field(default_factory=dict)
    feedback: Feedback = field(default_factory=Feedback)
    latency_ms: Spread = field(default_factory=Spread)
    tokens: Dict[str, Spread] = field(default_factory=dict)
    too_few: bool = False
    #: metric -> why it has no interval (too few judged answers; every one the same)
    interval_notes: Dict[str, str] = opt(factory=dict)


@dataclass
class SegmentComparison(Record):
    """A segment against the baseline on one metric: ``design`` ``paired`` (the questions both segments asked,
    each question's mean in each), ``unpaired`` (every answer of each, two samples) or ``too_few``; the means,
    the difference B - A with its 95% interval, the p-value and its Holm-adjusted one over every comparison of
    the section, the minimum detectable difference, the verdict in words and the signature."""

    metric: str = ""
    a: str = ""
    b: str = ""
    design: str = ""
    n: int = 0
    n_a: int = 0
    n_b: int = 0
    left_out: int = 0
    #: answers in both segments (overlapping segments), left out of the comparison
    in_both: int = 0
    mean_a: Optional[float] = None
    mean_b: Optional[float] = None
    diff: Optional[float] = None
    ci95: Optional[Interval] = None
    p_value: Optional[float] = None
    p_holm: Optional[float] = None
    mdd: Optional[float] = None
    verdict: str = ""
    reading: str = ""
    signature: Optional[str] = None


@dataclass
class WorstTrace(Record):
    """An answer to read first: negative feedback, failed judge verdicts, the lowest judged scores."""

    query_id: str = ""
    segments: List[str] = field(default_factory=list)
    question: str = ""
    answer: Optional[str] = None
    negative: bool = False
    failed: List[str] = field(default_factory=list)
    score: Optional[float] = None
    why: str = ""
    #: why a failed request has no answer
    error: Optional[str] = opt()


@dataclass
class ExamMatch(Record):
    """A traced question (as asked) that is an exam question: ``exact`` (the same after normalisation) or ``near``
    (e5 cosine at or above the threshold, the same numbers), and how many answers asked it (``per_answer.csv``
    names each answer's)."""

    question: str = ""
    exam_id: str = ""
    match: str = ""
    cosine: Optional[float] = None
    answers: int = 0


@dataclass
class ExamMatching(Record):
    """How traced questions were matched to the exam's: the threshold, the embedder, the counts of answers
    (``n_traced``, ``n_exact``, ``n_near``) and every distinct traced question that matched."""

    qa: Optional[str] = None
    threshold: Optional[float] = None
    embedder: Optional[str] = None
    n_traced: int = 0
    n_exact: int = 0
    n_near: int = 0
    matches: List[ExamMatch] = field(default_factory=list)
    signature: Optional[str] = None


@dataclass
class SegmentsSection(Record):
    """``segments`` (``score --by FIELD``, and every score of traced answers): each :class:`Segment` in order,
    the baseline and every comparison with it, the answers to read first, the exam matching and the judge-check
    warnings."""

    by: Optional[str] = None
    #: an answer may be in several segments (``--by tag``: in every tag it has)
    overlapping: bool = False
    baseline: Optional[str] = None
    min_n: int = 0
    segments: Dict[str, Segment] = field(default_factory=dict)
    comparisons: List[SegmentComparison] = field(default_factory=list)
    worst: List[WorstTrace] = field(default_factory=list)
    exam: Optional[ExamMatching] = None
    warnings: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    #: how many answers there are to read first; ``worst`` keeps the first 20 of them (absent before it was counted)
    n_worst: Optional[int] = opt()


# -- the summary --------------------------------------------------------------------------------------------------


@dataclass
class PipelineName(Record):
    """A pipeline of a history record (``pipelines`` lists them as runs do)."""

    name: str = ""


@dataclass(eq=False)
class ScoreSummary(JsonView, Record):
    """``score.json`` (module docstring); a history record adds ``run_id``, ``scored_run`` (the run given with
    ``--run``), ``config`` (the settings again, under the key runs use) and ``pipelines``."""

    is_score = True

    format: str = SCORE_FORMAT
    kind: str = "score"
    created: str = ""
    ragexam_version: Optional[str] = None
    settings: ScoreSettings = field(default_factory=ScoreSettings)
    dataset: ScoreDataset = field(default_factory=ScoreDataset)
    text: Dict[str, TextScores] = field(default_factory=dict)
    text_by_type: Dict[str, Dict[str, TextScores]] = field(default_factory=dict)
    results: Dict[str, ScoreResult] = field(default_factory=dict)
    judge: Optional[JudgeSection] = None
    attribution: Optional[AttributionSection] = None
    notes: List[str] = field(default_factory=list)
    segments: Optional[SegmentsSection] = opt()
    run_id: Optional[str] = None
    scored_run: Optional[str] = None
    config: Optional[Dict[str, Any]] = None
    pipelines: List[PipelineName] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.run_id is None:  # a folder's score.json: no record keys (from_dict sets what the JSON had)
            self._absent = _RECORD_ONLY

    # -- what every reader asks -------------------------------------------------------------------------------

    @property
    def used_settings(self) -> Dict[str, Any]:
        """The settings as a JSON object (a record without ``settings``: its ``config``, the same settings)."""
        if "settings" in self._absent and self.config is not None:
            return self.config
        return self.settings.to_dict()

    @property
    def pipeline_names(self) -> List[str]:
        """The pipelines scored, in order (the first is the baseline), then any only the results name."""
        names = [p.name for p in self.pipelines] or list(self.dataset.pipelines)
        return names + [p for p in list(self.results) + list(self.text) if p not in names]

    @property
    def miss_k(self) -> Optional[int]:
        """A score has no missed-question cutoff of its own: the ``miss_k`` its settings record, else ``None``."""
        v = (self.config or {}).get("miss_k")
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def headline_metric(self) -> Optional[str]:
        """The metric a listing shows: the first of the first pipeline's results."""
        first = next(iter(self.results.values()), None)
        names = list(first.metrics) if first is not None else []
        return names[0] if names else None

    @property
    def dataset_label(self) -> str:
        """The question set scored (``corpus / qa`` of the scored run, else the score's ``qa`` setting); answers
        scored without a question set (traced answers) are named by their file (``answers traffic.jsonl``)."""
        corpus = self.dataset.corpus
        qa = self.dataset.qa or self.used_settings.get("qa")
        if corpus and qa and corpus != qa:
            return f"{corpus} / {qa}"
        answers = self.used_settings.get("answers")
        return str(qa or corpus or (f"answers {answers}" if answers else "?"))

    def verdicts(self) -> Dict[Tuple[str, str], StageVerdict]:
        """``{(pipeline, query_id): stage verdict}`` of every answer."""
        return self.attribution.verdicts() if self.attribution is not None else {}

    def judged_metrics(self) -> List[str]:
        """The judge's metrics (none without a judge)."""
        return self.judge.metrics if self.judge is not None else []

    def recorded(self, run: Optional[Any] = None) -> "ScoreSummary":
        """The history's record of this score: a new ``score-<UTC time>-<6 hex>`` id, the run given with
        ``--run`` (a :class:`~ragexam.storage.summary.RunSummary`) as ``scored_run``, whose question set, corpus and
        hashes the dataset takes (so ``ragexam runs`` groups the score with its run), the settings again as
        ``config``, and the pipelines."""
        now = datetime.now(timezone.utc)
        ds = dataclasses.replace(self.dataset)
        run_ds = run.dataset if run is not None else None
        ds.qa = (run_ds.qa if run_ds else None) or (run.config.qa if run is not None else None) or self.settings.qa
        ds.corpus = (run_ds.corpus if run_ds else None) or (run.config.corpus if run is not None else None) or ds.qa
        if run_ds is not None:
            ds.corpus_sha256 = run_ds.corpus_sha256 or ds.corpus_sha256
            ds.qa_sha256 = run_ds.qa_sha256 or ds.qa_sha256
        return dataclasses.replace(self, run_id="score-" + now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3),
                                   scored_run=run.run_id if run is not None else None, dataset=ds,
                                   config=self.settings.to_dict(),
                                   pipelines=[PipelineName(p) for p in self.dataset.pipelines])

