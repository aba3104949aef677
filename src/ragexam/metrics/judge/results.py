"""What the judge produces: items in, judgments, item scores over repeats, summaries, plans and runs.

A :class:`JudgeVerdict` is one judgment (metric x item x repeat): ``judged`` with a validated score, or
``unjudged`` with a reason of :data:`REASONS`; :func:`combine_repeats` makes an item's canonical
:class:`ItemScore` over its repeats; :func:`summarize` a :class:`MetricSummary` with coverage and bootstrap
intervals; a :class:`JudgeRun` holds a run's judgments with its signatures and usage, a :class:`JudgePlan`
what a dry run would do.  The rules are in :mod:`ragexam.metrics.judge.core` (the judge's docstring).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ragexam.signature import Signature
from ragexam.storage.score_summary import JudgeStat, QuotedUnits
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.metrics.judge.registry import builtin_metrics, registered

__all__ = ["JudgeItem", "JudgeVerdict", "ItemScore", "MetricSummary", "JudgeRun", "JudgePlan", "REASONS",
           "summarize", "combine_repeats", "INTERVAL_RESAMPLES", "INTERVAL_CONFIDENCE", "value_name",
           "mean_interval", "not_applicable", "not_applicable_words"]

#: reason -> (category, meaning).  Categories: ``judge`` (the reply was unusable), ``transport``
#: (no reply), ``not_applicable`` (valid reply, no score defined), ``input`` (nothing to judge).
REASONS: Dict[str, Tuple[str, str]] = {
    "invalid_json": ("judge", "no JSON object could be read from the reply"),
    "invalid_reply": ("judge", "the JSON broke the metric's contract (count, range, fields, types)"),
    "truncated": ("judge", "the reply was cut off by max_tokens (finish_reason length)"),
    "refused": ("judge", "the model refused to grade"),
    "rate_limited": ("transport", "HTTP 429 after all retries"),
    "server_error": ("transport", "HTTP 5xx after all retries"),
    "timeout": ("transport", "the request timed out after all retries"),
    "connection_error": ("transport", "the endpoint could not be reached after all retries"),
    "bad_response": ("transport", "the response was not a chat completion (not JSON, no choices) after all retries"),
    "bad_request": ("transport", "HTTP 400/422 even without response_format"),
    "http_error": ("transport", "another HTTP error status"),
    "no_claims": ("not_applicable", "the answer makes no factual claim (e.g. it declines)"),
    "declined": ("not_applicable", "the answer declines, so whether it addresses the question is not defined"),
    "no_probabilities": ("judge", "probability scoring: the reply's token log-probabilities did not cover its score"),
    "no_contexts": ("input", "the item has no contexts"),
    "no_answer": ("input", "the item has no answer"),
    "no_ground_truth": ("input", "the question has no ground_truth"),
    "no_second_answer": ("input", "the pair has no second answer"),
}


@dataclass(frozen=True)
class JudgeItem:
    """One thing to grade.  ``item_id`` is the caller's identifier (e.g. ``pipeline|query_id``)."""

    item_id: str
    question: str
    answer: Optional[str] = None
    contexts: Tuple[str, ...] = ()
    ground_truth: Optional[str] = None
    second_answer: Optional[str] = None


class _Outcome:
    """What a judgment and an item's result share: ``status`` and a dict of the class's :attr:`KEYS` (tuples as
    lists, for JSON)."""

    KEYS: ClassVar[Tuple[str, ...]] = ()
    status: str

    @property
    def judged(self) -> bool:
        return self.status == "judged"

    def to_dict(self) -> Dict[str, Any]:
        out = {k: getattr(self, k) for k in self.KEYS}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


@dataclass(frozen=True)
class JudgeVerdict(_Outcome):
    """One judgment of one item on one metric (one repeat).

    ``status`` is ``judged`` (``score`` and ``label`` set, see
    :mod:`ragexam.metrics.judge.replies`) or ``unjudged`` (``score`` is ``None``; ``reason`` is a
    key of :data:`REASONS` and ``message`` the detail).  ``attempts``: replies received;
    ``requests``: HTTP requests; tokens from the endpoint's ``usage`` (``None`` if it reported
    none); ``cached``: read from the cache in this run; ``errors``: the problems of the earlier
    attempts.  The rubric name and hash, model and endpoint travel with every judgment.  ``scoring``:
    ``probability`` when ``score`` is the probability-weighted value (the written reply's is then
    ``details["score_sample"]`` and the distributions ``details["probabilities"]``), else ``sample``.
    """

    metric: str
    item_id: str
    repeat: int
    status: str
    score: Optional[float]
    label: Optional[str]
    details: Dict[str, Any]
    reason: Optional[str]
    message: Optional[str]
    attempts: int
    requests: int
    prompt_tokens: Optional[int]
    completion_tokens: Optional[int]
    cached: bool
    rubric: str
    rubric_sha: str
    model: str
    endpoint: str
    key: str
    errors: Tuple[Dict[str, Any], ...] = ()
    passed: Optional[bool] = None
    scoring: str = "sample"

    #: the keys of :meth:`to_dict`, in the order written (``judgments.jsonl``)
    KEYS: ClassVar[Tuple[str, ...]] = (
        "metric", "item_id", "repeat", "scoring", "status", "score", "label", "passed", "details", "reason", "message",
        "attempts", "requests", "prompt_tokens", "completion_tokens", "cached", "rubric", "rubric_sha", "model",
        "endpoint", "key", "errors")


@dataclass(frozen=True)
class ItemScore(_Outcome):
    """An item's result on one metric over its repeats (see the module docstring).

    ``passed``: the metric's pass rule on the canonical verdict (``None`` without a rule or when
    unjudged); ``tie``: the judged repeats' labels tied for the majority (the worse label was
    taken); ``flipped``: the judged repeats did not all give the same verdict; ``verdicts``: the
    judged repeats' labels (or scores, for score-only metrics) in repeat order.
    """

    metric: str
    item_id: str
    status: str
    score: Optional[float]
    label: Optional[str]
    details: Dict[str, Any]
    reason: Optional[str]
    message: Optional[str]
    n_repeats: int
    n_judged: int
    rubric_sha: str
    passed: Optional[bool] = None
    tie: bool = False
    flipped: bool = False
    verdicts: Tuple[Any, ...] = ()

    #: the keys of :meth:`to_dict`, in the order written
    KEYS: ClassVar[Tuple[str, ...]] = (
        "metric", "item_id", "status", "score", "label", "passed", "reason", "message", "n_repeats", "n_judged", "tie",
        "flipped", "verdicts", "rubric_sha", "details")


def _metric_def(metric: Union[str, JudgeMetric, None], fallback: str) -> Optional[JudgeMetric]:
    if isinstance(metric, JudgeMetric):
        return metric
    return registered().get(metric or fallback)


def combine_repeats(judgments: Sequence[JudgeVerdict], metric: Union[str, JudgeMetric, None] = None) -> ItemScore:
    """One :class:`ItemScore` from the repeats of one (metric, item): the canonical verdict of the
    module docstring (majority label, ties to the worse label; lower median score for score-only
    metrics); unjudged (with the most frequent reason) if no repeat was judged.  ``metric`` (name
    or object; default the judgments' metric, which must then be built in) gives the labels'
    order and the pass rule."""
    if not judgments:
        raise ValueError("combine_repeats needs at least one judgment")
    first = judgments[0]
    defn = _metric_def(metric, first.metric)
    judged = sorted((j for j in judgments if j.judged), key=lambda j: (j.score, j.repeat))
    if judged:
        labelled = defn is not None and bool(defn.labels) and all(j.label is not None for j in judged)
        tie = False
        if labelled:
            counts = Counter(j.label for j in judged)
            top = max(counts.values())
            winners = [lab for lab, c in counts.items() if c == top]
            tie = len(winners) > 1
            label = min(winners, key=defn.label_rank)
            pool = [j for j in judged if j.label == label]
        else:
            pool = judged
        pick = pool[(len(pool) - 1) // 2]
        in_order = sorted(judged, key=lambda j: j.repeat)
        verdicts = tuple(j.label if labelled else j.score for j in in_order)
        passed = defn.passed(pick.score, pick.label, pick.details) if defn is not None else None
        return ItemScore(first.metric, first.item_id, "judged", pick.score, pick.label, pick.details, None,
                         None, len(judgments), len(judged), first.rubric_sha, passed, tie,
                         len(set(verdicts)) > 1, verdicts)
    reason, _ = Counter(j.reason for j in judgments).most_common(1)[0]
    msg = next(j.message for j in judgments if j.reason == reason)
    details = next((j.details for j in judgments if j.reason == reason), {})
    return ItemScore(first.metric, first.item_id, "unjudged", None, None, details, reason, msg,
                     len(judgments), 0, first.rubric_sha)


#: The bootstrap settings of every judge interval (the defaults of ``ragexam check`` too).
INTERVAL_RESAMPLES = 2000
INTERVAL_CONFIDENCE = 0.95


@dataclass(frozen=True)
class MetricSummary:
    """Aggregate of one metric over items.

    :ivar n: judgeable items -- every item but those the metric does not apply to (an unjudged reason of the
        ``not_applicable`` category of :data:`REASONS`: faithfulness of an answer that makes no claim, it declines);
        :ivar n_judged: items with a score; :ivar coverage: ``n_judged / n`` (``None`` when ``n == 0``): judged of
        judgeable, so a pipeline that declines correctly is not short of coverage; :ivar n_not_applicable: the items
        the metric does not apply to, counted apart (their reasons are in ``unjudged`` too); :ivar mean: mean score over judged items only (``None`` if
        none); :ivar ci95: ``(low, high)`` percentile-bootstrap 95% interval of the mean over the
        judged items (``None`` when none was judged); :ivar pass_rate: share of judged items whose
        canonical verdict passes the metric's rule (``None`` without a rule); :ivar pass_ci95: its
        interval; :ivar n_passed: items that passed; :ivar unjudged: reason -> count;
        :ivar labels: label -> count over judged items; :ivar average_mismatch: context relevance
        only, judged items whose reported average differed from the recomputed one;
        :ivar n_repeated: items judged in at least two repeats; :ivar flip_share: share of them
        whose verdict differed between repeats (``None`` when none was judged twice);
        :ivar ties: items whose canonical label was a tie; :ivar interval: the bootstrap's
        signature (seed, resamples, confidence); :ivar quoted: ``faithfulness`` / ``context_recall`` with the
        quotation rule on, ``(units a context quotes, units)`` over the judged items
        (:mod:`ragexam.metrics.judge.quoted`), else ``None``.
        :ivar scoring: ``probability`` when the scores are probability-weighted, else ``sample``;
        :ivar value_name: what ``mean`` is (:func:`value_name`: ``mean``, ``mean P(true)``, ``expected score``);
        :ivar written_mean: with probability scoring, the mean of the scores the judge *wrote* (the written share
        of ``true`` for per-unit metrics) -- shown beside the probability mean; the pass rate always comes from
        the written verdicts; :ivar interval_note: why ``ci95`` is ``None`` or how it was drawn when not by the
        bootstrap (:func:`mean_interval`).

    Intervals never claim more than the items can show: the pass rate's is Wilson's
    (:func:`ragexam.stats.proportion.wilson`; a percentile bootstrap of 4 passes of 4 is [1.00-1.00]); the mean's
    is the percentile bootstrap, none below :data:`ragexam.stats.proportion.MIN_FOR_INTERVAL` judged items
    ("n = 4: too few for an interval"), and when every item has the same score (nothing to resample) the Wilson
    interval of that score's place on the metric's scale.
    """

    metric: str
    n: int
    n_judged: int
    coverage: Optional[float]
    mean: Optional[float]
    unjudged: Dict[str, int]
    labels: Dict[str, int]
    average_mismatch: Optional[int] = None
    ci95: Optional[Tuple[float, float]] = None
    pass_rate: Optional[float] = None
    pass_ci95: Optional[Tuple[float, float]] = None
    n_passed: Optional[int] = None
    n_repeated: int = 0
    flip_share: Optional[float] = None
    ties: int = 0
    interval: Optional[str] = None
    quoted: Optional[Tuple[int, int]] = None
    scoring: str = "sample"
    value_name: str = "mean"
    written_mean: Optional[float] = None
    interval_note: Optional[str] = None
    n_not_applicable: int = 0

    def to_record(self) -> JudgeStat:
        """The summary as a score stores it (:class:`ragexam.storage.score_summary.JudgeStat`)."""
        return JudgeStat(metric=self.metric, n=self.n, n_judged=self.n_judged, coverage=self.coverage,
                         n_not_applicable=self.n_not_applicable,
                         mean=self.mean, ci95=self.ci95 or None, pass_rate=self.pass_rate,
                         pass_ci95=self.pass_ci95 or None, n_passed=self.n_passed, unjudged=dict(self.unjudged),
                         labels=dict(self.labels), n_repeated=self.n_repeated, flip_share=self.flip_share,
                         ties=self.ties, interval=self.interval, scoring=self.scoring, value_name=self.value_name,
                         written_mean=self.written_mean, interval_note=self.interval_note,
                         pass_interval="wilson" if self.pass_ci95 is not None else None,
                         average_mismatch=self.average_mismatch,
                         quoted=QuotedUnits(*self.quoted) if self.quoted is not None else None)

    def to_dict(self) -> Dict[str, Any]:
        return self.to_record().to_dict()


def value_name(defn: Optional[JudgeMetric], scoring: str) -> str:
    """What a summary's ``mean`` is: ``mean`` of written scores; with probability scoring ``mean P(true)`` (true/false
    units; ``AP over P(true)`` for a rank-aware metric), ``mean P(<label>)`` (a two-label verdict) or ``expected
    score`` (a 1-5 scale weighted by the probability of each level)."""
    if scoring != "probability":
        return "mean"
    options = dict(defn.contract.options()) if defn is not None else {}
    if set(options) == {"true", "false"}:
        return "AP over P(true)" if getattr(defn, "combine", None) == "ap" else "mean P(true)"
    positive = [o for o, v in options.items() if v == 1.0 and o.startswith('"')]
    if positive and set(options.values()) <= {0.0, 1.0}:
        return f"mean P({positive[0].strip(chr(34))})"
    return "expected score"


def mean_interval(values: Sequence[float], seed: int, n_resamples: int,
                  scale: Optional[Tuple[float, float]] = None
                  ) -> Tuple[Optional[Tuple[float, float]], Optional[str], Optional[str]]:
    """``(interval, signature, note)`` of a mean of judge scores (:class:`MetricSummary`'s rule): none below
    :data:`~ragexam.stats.proportion.MIN_FOR_INTERVAL` values; the percentile bootstrap; and when every value is
    the same, the Wilson interval of its share of ``scale`` (``(lowest, highest)``), mapped back -- all 5 on 1-5
    over 8 items is [3.70-5.00], not [5.00-5.00]."""
    from ragexam.stats import bootstrap_ci
    from ragexam.stats.proportion import too_few, wilson_on_scale

    few = too_few(len(values))
    if few is not None:
        return None, None, few
    if len(set(values)) == 1 and scale is not None and scale[1] > scale[0]:
        return (wilson_on_scale(values[0], len(values), scale, confidence=INTERVAL_CONFIDENCE),
                Signature([("stat", "mean"), ("ci", "wilson_on_scale"), ("conf", INTERVAL_CONFIDENCE),
                           ("scale", f"{scale[0]:g}-{scale[1]:g}"), ("n", len(values))]),
                f"every judged item scored {values[0]:g}: the interval is Wilson's on the {scale[0]:g}-{scale[1]:g} "
                "scale")
    ci = bootstrap_ci(list(values), n_resamples=n_resamples, confidence=INTERVAL_CONFIDENCE, seed=seed)
    return (ci.low, ci.high), ci.signature, None


def _pass_interval(outcomes: Sequence[bool]) -> Tuple[float, float]:
    from ragexam.stats.proportion import wilson

    return wilson(sum(outcomes) / len(outcomes), len(outcomes), confidence=INTERVAL_CONFIDENCE)


def summarize(scores: Iterable[ItemScore], metric: Optional[str] = None, *, seed: Optional[int] = None,
              n_resamples: int = INTERVAL_RESAMPLES, definition: Optional[JudgeMetric] = None) -> MetricSummary:
    """:class:`MetricSummary` of ``scores`` (all of one metric), with bootstrap intervals drawn with
    ``seed`` (default :data:`ragexam.stats.DEFAULT_SEED`) and ``n_resamples`` resamples; ``definition``: the
    metric (default the registered one of that name), for its scale and what a probability mean is called."""
    from ragexam.stats import DEFAULT_SEED

    scores = list(scores)
    seed = DEFAULT_SEED if seed is None else seed
    if metric is None:
        metric = scores[0].metric if scores else "?"
    defn = definition or _metric_def(metric, metric)
    judged = [s for s in scores if s.judged]
    mean = sum(float(s.score) for s in judged) / len(judged) if judged else None
    unjudged = dict(Counter(s.reason for s in scores if not s.judged).most_common())
    labels = dict(Counter(s.label for s in judged if s.label is not None).most_common())
    mismatch = None
    if defn is not None and defn.average_check:
        mismatch = sum(1 for s in judged if s.details.get("average_mismatch"))
    ci = sig = pass_rate = pass_ci = n_passed = note = None
    if judged:
        scale = tuple(defn.score_range) if defn is not None and defn.score_range else None
        ci, sig, note = mean_interval([float(s.score) for s in judged], seed, n_resamples, scale)  # type: ignore
        outcomes = [s.passed for s in judged if s.passed is not None]
        if outcomes:
            n_passed = sum(outcomes)
            pass_rate = n_passed / len(outcomes)
            pass_ci = _pass_interval(outcomes)
    counted = [s for s in judged if "n_quoted" in s.details]
    quoted = (sum(s.details["n_quoted"] for s in counted),
              sum(len(s.details.get("claims") or s.details.get("statements") or ()) for s in counted)) \
        if counted else None
    repeated = [s for s in judged if s.n_judged >= 2]
    flip = sum(s.flipped for s in repeated) / len(repeated) if repeated else None
    probability = bool(judged) and all("probabilities" in s.details for s in judged)
    written = [float(s.details["score_sample"]) for s in judged if s.details.get("score_sample") is not None]
    written_mean = sum(written) / len(written) if probability and written else None
    scoring = "probability" if probability else "sample"
    judgeable = len(scores) - sum(1 for s in scores if not s.judged and not_applicable(s.reason))
    return MetricSummary(metric, judgeable, len(judged), len(judged) / judgeable if judgeable else None,
                         mean, unjudged, labels, mismatch, ci, pass_rate, pass_ci, n_passed, len(repeated), flip,
                         sum(s.tie for s in judged), sig, quoted, scoring, value_name(defn, scoring), written_mean,
                         note, len(scores) - judgeable)


def not_applicable_words(stat: Any) -> str:
    """``12 not applicable (no_claims: the answer makes no factual claim (e.g. it declines))``: a summary's (a
    :class:`MetricSummary` or a :class:`~ragexam.storage.score_summary.JudgeStat`) answers the metric does not apply
    to, with their reasons; empty when there are none."""
    n = getattr(stat, "n_not_applicable", 0) or 0
    if not n:
        return ""
    reasons = [(r, c) for r, c in (stat.unjudged or {}).items() if not_applicable(r)]
    why = "; ".join(f"{r}{'' if c == n else f' {c}'}: {REASONS[r][1]}" for r, c in reasons)
    return f"{n} not applicable" + (f" ({why})" if why else "")


def not_applicable(reason: Optional[str]) -> bool:
    """An unjudged ``reason`` of the ``not_applicable`` category (:data:`REASONS`): the metric does not apply to the
    item (``no_claims``, ``declined``), so it is not judgeable and counts in no coverage."""
    return REASONS.get(reason or "", ("",))[0] == "not_applicable"


@dataclass
class JudgePlan:
    """What a run would do (``--dry-run``): judgments in total, already cached, sharing the prompt of
    another judgment (one call serves both), skipped (settled without a call: an input is missing, or every
    claim is quoted word for word from a context), calls to make, and the
    estimated tokens and cost of those calls.  ``total = cached + shared + skipped + calls``."""

    model: str
    endpoint: str
    language: str
    repeat: int
    total: int
    cached: int
    skipped: int
    calls: int
    est_prompt_tokens: int
    est_completion_tokens: int
    est_cost: Union[float, str]
    by_metric: Dict[str, Dict[str, int]]
    shared: int = 0
    scoring: str = "sample"

    def to_dict(self) -> Dict[str, Any]:
        return {"model": self.model, "endpoint": self.endpoint, "language": self.language, "scoring": self.scoring,
                "repeat": self.repeat, "total": self.total, "cached": self.cached, "shared": self.shared,
                "skipped": self.skipped,
                "calls": self.calls, "est_prompt_tokens": self.est_prompt_tokens,
                "est_completion_tokens": self.est_completion_tokens, "est_cost_usd": self.est_cost,
                "token_rule": "ceil(chars/3) of the prompt + a fixed completion allowance per metric",
                "by_metric": self.by_metric}


@dataclass
class JudgeRun:
    """The judgments of one run, in task order (metric, item, repeat), plus accounting."""

    judgments: List[JudgeVerdict]
    model: str
    endpoint: str
    language: str
    repeat: int
    rubrics: Dict[str, Dict[str, str]]
    signatures: Dict[str, str]
    usage: Dict[str, Any]
    definitions: Dict[str, JudgeMetric] = field(default_factory=dict)
    scoring: Dict[str, str] = field(default_factory=dict)
    probe: Optional[Dict[str, Any]] = None
    #: what the run changed and why (a metric scored by the written scores under ``auto``: the judge's ``_fall_back``)
    notes: List[str] = field(default_factory=list)

    def for_metric(self, metric: str) -> List[JudgeVerdict]:
        return [j for j in self.judgments if j.metric == metric]

    def definition(self, metric: str) -> Optional[JudgeMetric]:
        """The :class:`JudgeMetric` of ``metric`` (built-in or custom)."""
        return self.definitions.get(metric) or registered().get(metric)

    def items(self, metric: str) -> Dict[str, ItemScore]:
        """``{item_id: ItemScore}`` for ``metric`` (repeats combined into the canonical verdict)."""
        groups: Dict[str, List[JudgeVerdict]] = {}
        for j in self.judgments:
            if j.metric == metric:
                groups.setdefault(j.item_id, []).append(j)
        defn = self.definition(metric)
        return {k: combine_repeats(v, defn) for k, v in groups.items()}

    def summary(self, metric: str, *, seed: Optional[int] = None) -> MetricSummary:
        return summarize(self.items(metric).values(), metric, seed=seed, definition=self.definition(metric))

    @property
    def metrics(self) -> List[str]:
        """The metrics judged, built-ins in report order, then custom ones in run order."""
        seen = list(dict.fromkeys(j.metric for j in self.judgments))
        order = [n for n, m in builtin_metrics().items() if m.per_answer]
        return [m for m in order if m in seen] + [m for m in seen if m not in order]
