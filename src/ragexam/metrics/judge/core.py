"""The LLM judge: items in, validated judgments out -- each a score or "unjudged, because ...".

A :class:`Judge` grades :class:`JudgeItem` s on any of the metrics of
:mod:`ragexam.metrics.judge.prompts` (``context_relevance``, ``context_precision``,
``context_recall``, ``faithfulness``, ``answer_relevancy``, ``answer_correctness``,
``abstention``) or a custom rubric (:mod:`ragexam.metrics.judge.custom`) through an
OpenAI-compatible chat endpoint, and compares two answers with :meth:`Judge.pairwise`.
What a metric needs, its reply contract and its pass rule are its
:class:`~ragexam.metrics.judge.metric.JudgeMetric`.

One judgment (metric x item x repeat)
-------------------------------------
1. If the item lacks an input the metric needs (contexts, answer, ground truth, the second answer
   of a pair), the judgment is ``unjudged`` with reason ``no_contexts`` / ``no_answer`` /
   ``no_ground_truth`` / ``no_second_answer``; no call is made.
2. Otherwise the rubric's messages are sent (JSON schema / JSON mode where supported, see
   :mod:`ragexam.llm.client`) and the reply, parsed as it arrived, is validated
   (:mod:`ragexam.metrics.judge.replies`).  An invalid reply, a truncated one
   (``finish_reason == "length"``; the next attempt gets twice the ``max_tokens``, up to 4x) or a
   refusal is answered with the problem fed back to the judge, up to ``max_attempts`` replies in
   all.  Then the judgment is ``unjudged`` with the last problem as its reason.
3. A reply that is valid but yields no score (``faithfulness`` of an answer without claims,
   ``answer_relevancy`` of an answer that declines) is ``unjudged`` with reason ``no_claims`` /
   ``declined``.
4. Transport failures that outlast the retries are ``unjudged`` with reason ``rate_limited``,
   ``server_error``, ``timeout``, ``connection_error``, ``bad_response``, ``bad_request`` or
   ``http_error``.

An unjudged result never has a score: it is not NaN, not 0, and never enters a mean.  Every
summary reports coverage = judged / total and the unjudged reasons by count (:data:`REASONS`).

Caching and resuming
--------------------
Every judgment that came from the model (judged, or unjudged for a reason in the reply itself:
``invalid_json``, ``invalid_reply``, ``truncated``, ``refused``, ``no_claims``, ``declined``) is written to the
:class:`~ragexam.llm.cache.LLMCache` in its own transaction as soon as it is known; a
rerun, or a run after a crash, reads it instead of calling again, and a second process judging
the same items at the same time waits for a call in flight instead of paying for it twice
(:func:`ragexam.llm.batch.run_calls`).  What is stored and returned is redacted (the API key and
bearer tokens, :mod:`ragexam.llm.redact`); the reply is parsed before that, as it arrived.  Transport failures are not
cached (the next run tries again); ``retry_unjudged=True`` also re-judges cached unjudged results.
The key covers model, endpoint, the full prompt messages, the rubric (name and hash),
temperature, max_tokens, seed and the repeat index.

Repeats and the canonical verdict
---------------------------------
``repeat=N`` judges every item N times (repeat ``r`` is part of the key; repeat 0 is the same
call as a run without repeats).  :meth:`JudgeRun.items` combines them per item
(:func:`combine_repeats`): the item is judged if at least one repeat was, and its **canonical
verdict** is

* for a metric with labels (faithful/unfaithful, correct/partially_correct/incorrect, a custom
  rubric's levels, ...): the **majority label** of the judged repeats; when two or more labels
  share the top count the item is a **tie** (``ItemScore.tie``, counted in the summary) and takes
  the *worse* of them, so a verdict that straddles a threshold never passes by luck;
* for a metric with a score only (context relevance, context precision): the **lower median** score;

and the item takes the score, label and details of an actual reply with that verdict (the lower
median score among them).  ``ItemScore.flipped`` is true when the judged repeats did not all give
the same verdict (label, or score for score-only metrics); the summary reports the share of such
items (``flip_share``) over the items judged at least twice.

Intervals
---------
Every :class:`MetricSummary` carries a percentile-bootstrap 95% interval of the mean over the
judged items and, for metrics with a pass rule, the pass rate and its interval
(:mod:`ragexam.stats.bootstrap`, seed and resamples recorded in ``interval``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam import fmt
from ragexam.errors import InputError
from ragexam.llm.attempts import TEXT_REFUSAL
from ragexam.llm.batch import Outcome, PlannedCall, plan_calls, run_calls
from ragexam.llm.cache import request_key
from ragexam.llm.client import LLMClient
from ragexam.llm.cost import COMPLETION_ALLOWANCE, price_for
from ragexam.llm.settings import LLMSettings
from ragexam.metrics.judge.metric import BUILTIN, JudgeMetric, resolve_metrics
from ragexam.metrics.judge.prompts import METRICS, Rubric, detect_language, feedback_message, render_messages
from ragexam.metrics.judge.replies import NotApplicable, ReplyError, extract_json

__all__ = ["JudgeItem", "JudgeVerdict", "ItemScore", "MetricSummary", "JudgeRun", "JudgePlan", "Judge",
           "REASONS", "summarize", "combine_repeats", "CACHE_FORMAT"]

CACHE_FORMAT = "ragexam-judge/1"

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
    "no_contexts": ("input", "the item has no contexts"),
    "no_answer": ("input", "the item has no answer"),
    "no_ground_truth": ("input", "the question has no ground_truth"),
    "no_second_answer": ("input", "the pair has no second answer"),
}
_CACHEABLE = {"invalid_json", "invalid_reply", "truncated", "refused", "no_claims", "declined"}
_REFUSAL = TEXT_REFUSAL


@dataclass(frozen=True)
class JudgeItem:
    """One thing to grade.  ``item_id`` is the caller's identifier (e.g. ``pipeline|query_id``)."""

    item_id: str
    question: str
    answer: Optional[str] = None
    contexts: Tuple[str, ...] = ()
    ground_truth: Optional[str] = None
    second_answer: Optional[str] = None


@dataclass(frozen=True)
class JudgeVerdict:
    """One judgment of one item on one metric (one repeat).

    ``status`` is ``judged`` (``score`` and ``label`` set, see
    :mod:`ragexam.metrics.judge.replies`) or ``unjudged`` (``score`` is ``None``; ``reason`` is a
    key of :data:`REASONS` and ``message`` the detail).  ``attempts``: replies received;
    ``requests``: HTTP requests; tokens from the endpoint's ``usage`` (``None`` if it reported
    none); ``cached``: read from the cache in this run; ``errors``: the problems of the earlier
    attempts.  The rubric name and hash, model and endpoint travel with every judgment.
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

    @property
    def judged(self) -> bool:
        return self.status == "judged"

    def to_dict(self) -> Dict[str, Any]:
        return {"metric": self.metric, "item_id": self.item_id, "repeat": self.repeat,
                "status": self.status, "score": self.score, "label": self.label, "passed": self.passed,
                "details": self.details, "reason": self.reason, "message": self.message,
                "attempts": self.attempts, "requests": self.requests,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "cached": self.cached, "rubric": self.rubric, "rubric_sha": self.rubric_sha,
                "model": self.model, "endpoint": self.endpoint, "key": self.key,
                "errors": list(self.errors)}


@dataclass(frozen=True)
class ItemScore:
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

    @property
    def judged(self) -> bool:
        return self.status == "judged"

    def to_dict(self) -> Dict[str, Any]:
        return {"metric": self.metric, "item_id": self.item_id, "status": self.status, "score": self.score,
                "label": self.label, "passed": self.passed, "reason": self.reason, "message": self.message,
                "n_repeats": self.n_repeats, "n_judged": self.n_judged, "tie": self.tie, "flipped": self.flipped,
                "verdicts": list(self.verdicts), "rubric_sha": self.rubric_sha, "details": self.details}


def _metric_def(metric: Union[str, JudgeMetric, None], fallback: str) -> Optional[JudgeMetric]:
    if isinstance(metric, JudgeMetric):
        return metric
    return BUILTIN.get(metric or fallback)


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

    :ivar n: items; :ivar n_judged: items with a score; :ivar coverage: ``n_judged / n``
        (``None`` when ``n == 0``); :ivar mean: mean score over judged items only (``None`` if
        none); :ivar ci95: ``(low, high)`` percentile-bootstrap 95% interval of the mean over the
        judged items (``None`` when none was judged); :ivar pass_rate: share of judged items whose
        canonical verdict passes the metric's rule (``None`` without a rule); :ivar pass_ci95: its
        interval; :ivar n_passed: items that passed; :ivar unjudged: reason -> count;
        :ivar labels: label -> count over judged items; :ivar average_mismatch: context relevance
        only, judged items whose reported average differed from the recomputed one;
        :ivar n_repeated: items judged in at least two repeats; :ivar flip_share: share of them
        whose verdict differed between repeats (``None`` when none was judged twice);
        :ivar ties: items whose canonical label was a tie; :ivar interval: the bootstrap's
        signature (seed, resamples, confidence).
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

    def to_dict(self) -> Dict[str, Any]:
        out = {"metric": self.metric, "n": self.n, "n_judged": self.n_judged, "coverage": self.coverage,
               "mean": self.mean, "ci95": list(self.ci95) if self.ci95 else None,
               "pass_rate": self.pass_rate, "pass_ci95": list(self.pass_ci95) if self.pass_ci95 else None,
               "n_passed": self.n_passed, "unjudged": dict(self.unjudged), "labels": dict(self.labels),
               "n_repeated": self.n_repeated, "flip_share": self.flip_share, "ties": self.ties,
               "interval": self.interval}
        if self.average_mismatch is not None:
            out["average_mismatch"] = self.average_mismatch
        return out


def _interval(values: Sequence[float], seed: int, n_resamples: int) -> Tuple[Tuple[float, float], str]:
    from ragexam.stats import bootstrap_ci

    ci = bootstrap_ci(list(values), n_resamples=n_resamples, confidence=INTERVAL_CONFIDENCE, seed=seed)
    return (ci.low, ci.high), ci.signature


def summarize(scores: Iterable[ItemScore], metric: Optional[str] = None, *, seed: Optional[int] = None,
              n_resamples: int = INTERVAL_RESAMPLES) -> MetricSummary:
    """:class:`MetricSummary` of ``scores`` (all of one metric), with bootstrap intervals drawn with
    ``seed`` (default :data:`ragexam.stats.DEFAULT_SEED`) and ``n_resamples`` resamples."""
    from ragexam.stats import DEFAULT_SEED

    scores = list(scores)
    seed = DEFAULT_SEED if seed is None else seed
    if metric is None:
        metric = scores[0].metric if scores else "?"
    judged = [s for s in scores if s.judged]
    mean = sum(float(s.score) for s in judged) / len(judged) if judged else None
    unjudged = dict(Counter(s.reason for s in scores if not s.judged).most_common())
    labels = dict(Counter(s.label for s in judged if s.label is not None).most_common())
    mismatch = None
    if metric == "context_relevance":
        mismatch = sum(1 for s in judged if s.details.get("average_mismatch"))
    ci = sig = pass_rate = pass_ci = n_passed = None
    if judged:
        ci, sig = _interval([float(s.score) for s in judged], seed, n_resamples)
        outcomes = [s.passed for s in judged if s.passed is not None]
        if outcomes:
            n_passed = sum(outcomes)
            pass_rate = n_passed / len(outcomes)
            pass_ci, _ = _interval([float(x) for x in outcomes], seed, n_resamples)
    repeated = [s for s in judged if s.n_judged >= 2]
    flip = sum(s.flipped for s in repeated) / len(repeated) if repeated else None
    return MetricSummary(metric, len(scores), len(judged), len(judged) / len(scores) if scores else None,
                         mean, unjudged, labels, mismatch, ci, pass_rate, pass_ci, n_passed, len(repeated), flip,
                         sum(s.tie for s in judged), sig)


@dataclass
class JudgePlan:
    """What a run would do (``--dry-run``): judgments in total, already cached, sharing the prompt of
    another judgment (one call serves both), skipped for missing inputs, calls to make, and the
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

    def to_dict(self) -> Dict[str, Any]:
        return {"model": self.model, "endpoint": self.endpoint, "language": self.language,
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

    def for_metric(self, metric: str) -> List[JudgeVerdict]:
        return [j for j in self.judgments if j.metric == metric]

    def definition(self, metric: str) -> Optional[JudgeMetric]:
        """The :class:`JudgeMetric` of ``metric`` (built-in or custom)."""
        return self.definitions.get(metric) or BUILTIN.get(metric)

    def items(self, metric: str) -> Dict[str, ItemScore]:
        """``{item_id: ItemScore}`` for ``metric`` (repeats combined into the canonical verdict)."""
        groups: Dict[str, List[JudgeVerdict]] = {}
        for j in self.judgments:
            if j.metric == metric:
                groups.setdefault(j.item_id, []).append(j)
        defn = self.definition(metric)
        return {k: combine_repeats(v, defn) for k, v in groups.items()}

    def summary(self, metric: str, *, seed: Optional[int] = None) -> MetricSummary:
        return summarize(self.items(metric).values(), metric, seed=seed)

    @property
    def metrics(self) -> List[str]:
        """The metrics judged, built-ins in report order, then custom ones in run order."""
        seen = list(dict.fromkeys(j.metric for j in self.judgments))
        return [m for m in METRICS if m in seen] + [m for m in seen if m not in METRICS]


@dataclass
class _Task:
    metric: str
    item: JudgeItem
    repeat: int
    rubric: Rubric
    messages: List[Dict[str, str]]
    key: str
    missing: Optional[str]
    defn: JudgeMetric


def _missing(defn: JudgeMetric, item: JudgeItem) -> Optional[str]:
    for need in defn.needs:
        if need == "contexts" and not any(c.strip() for c in item.contexts):
            return "no_contexts"
        if need == "answer" and (item.answer is None or not item.answer.strip()):
            return "no_answer"
        if need == "ground_truth" and (item.ground_truth is None or not item.ground_truth.strip()):
            return "no_ground_truth"
        if need == "second_answer" and (item.second_answer is None or not item.second_answer.strip()):
            return "no_second_answer"
    return None


def _allowance(metric: str, n_contexts: int) -> int:
    """Completion tokens a reply of ``metric`` is assumed to take in a dry run."""
    base = COMPLETION_ALLOWANCE.get(metric, _ALLOWANCE.get(metric, 200))
    return base + (15 * n_contexts if metric in ("context_relevance", "context_precision") else 0)


_ALLOWANCE = {"context_precision": 80, "context_recall": 300, "answer_relevancy": 150, "pairwise": 150}


class Judge:
    """An LLM judge over an OpenAI-compatible chat endpoint.

    The endpoint settings are one :class:`~ragexam.llm.settings.LLMSettings` (validated there):
    pass ``settings=``, or its fields as keywords -- ``base_url``, ``api_key`` (explicit >
    environment > ``.env``), ``temperature`` (default 0), ``max_tokens`` (default 1024), ``seed``,
    ``concurrency`` (judgments in flight, default 4), ``timeout``, ``max_retries``, ``backoff``,
    ``max_backoff``, ``response_format``, ``cache_dir``, ``cache`` (``False``: no cache),
    ``price``, ``claim_wait``.  Judge settings:

    :param model: the judge model (``gpt-4o-mini``, ``qwen2.5:7b-instruct`` on Ollama, ...).
    :param max_attempts: replies per judgment before it is unjudged (>= 1; default 3).
    :param language: ``auto`` (from the items' Hangul share), ``ko`` or ``en``.
    :param retry_unjudged: re-judge cached unjudged results.
    :param custom: custom metrics (:func:`ragexam.metrics.judge.custom.load_rubric`), then usable by
        name in :meth:`run`.
    :param client: a ready :class:`~ragexam.llm.client.LLMClient` (its endpoint settings win).
    :param sleep: the sleep between retries (tests pass a recorder).
    :param executor: where the calls run (:mod:`ragexam.exec`): ``None`` for threads here (default), or an
        executor such as ``RayExecutor`` -- the calls then run on its async actors with at most
        ``concurrency`` in flight across the cluster, while the cache, de-duplication and redaction stay
        here.  The verdicts are the same either way.
    """

    DEFAULT_MAX_TOKENS = 1024

    def __getstate__(self) -> Dict[str, Any]:
        """Pickles (to run :meth:`_judge` on Ray actors) without the cache and the executor, which stay here."""
        state = dict(self.__dict__)
        state.update(cache=None, executor=None)
        return state

    def __init__(self, model: Optional[str] = None, *, settings: Optional[LLMSettings] = None,
                 max_attempts: int = 3, language: str = "auto", retry_unjudged: bool = False,
                 custom: Sequence[JudgeMetric] = (), client: Optional[LLMClient] = None, sleep: Optional[Callable[[float], None]] = None,
                 executor: Any = None, **endpoint: Any) -> None:
        if settings is None:
            if client is not None:
                settings = client.settings.replace(**endpoint) if endpoint else client.settings
            else:
                settings = LLMSettings(model, **endpoint)  # type: ignore[arg-type]
        elif endpoint:
            settings = settings.replace(**endpoint)
        if model is not None and model != settings.model:
            settings = settings.replace(model=model)
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InputError(f"received {max_attempts!r}; expected an integer >= 1", source="--max-attempts",
                             field="max_attempts")
        if language not in ("auto", "ko", "en"):
            raise InputError(f"received {language!r}; expected 'auto', 'ko' or 'en'", source="--judge-lang",
                             field="language")
        if client is None:
            client = LLMClient(settings, **({"sleep": sleep} if sleep is not None else {}))
        self.settings = settings
        self.client = client
        self.model = client.model
        self.temperature = float(settings.temperature)
        self.max_tokens = settings.max_tokens if settings.max_tokens is not None else self.DEFAULT_MAX_TOKENS
        self.seed = settings.seed
        self.concurrency = settings.concurrency
        self.max_attempts = max_attempts
        self.language = language
        self.cache = settings.open_cache()
        self.executor = executor
        self.retry_unjudged = retry_unjudged
        self.price = price_for(self.model, client.endpoint, settings.price)
        self.custom: Dict[str, JudgeMetric] = {}
        for m in custom:
            if not isinstance(m, JudgeMetric):
                raise InputError(f"received {type(m).__name__}; expected a JudgeMetric (load_rubric(path))",
                                 source="judge", field="custom")
            if m.name in BUILTIN:
                raise InputError(f"a custom metric may not be named {m.name!r}, a built-in metric; rename it",
                                 source=m.source, field="name")
            self.custom[m.name] = m
        try:  # fail now, not after the paid calls, if the settings cannot be written in a signature
            self.signature(METRICS[0], "en")
        except ValueError as err:
            raise InputError(f"received {self.model!r}: {err}", source="--judge-model", field="model") from None

    def __repr__(self) -> str:
        return f"Judge(model={self.model!r}, endpoint={self.client.endpoint!r})"

    @property
    def endpoint(self) -> str:
        return self.client.endpoint

    # -- tasks ---------------------------------------------------------------------------------
    def resolve_language(self, items: Sequence[JudgeItem]) -> str:
        """``ko``/``en``: the fixed language, or detected from questions and ground truths."""
        if self.language != "auto":
            return self.language
        texts = [i.question for i in items] + [i.ground_truth for i in items if i.ground_truth]
        return detect_language(texts)

    def _tasks(self, jobs: Mapping[str, Sequence[JudgeItem]], repeat: int, language: str,
               defs: Mapping[str, JudgeMetric]) -> List[_Task]:
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise InputError(f"received {repeat!r}; expected an integer >= 1", source="--repeat", field="repeat")
        tasks = []
        for metric, items in jobs.items():
            defn = defs[metric]
            rubric = defn.rubric(language)
            ids = [i.item_id for i in items]
            if len(set(ids)) != len(ids):
                dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
                raise InputError(f"item ids must be unique per metric; repeated: {dup}", source="judge",
                                 field="item_id")
            for item in items:
                missing = _missing(defn, item)
                messages = render_messages(rubric, question=item.question, contexts=item.contexts,
                                           answer=item.answer, ground_truth=item.ground_truth,
                                           second_answer=item.second_answer)
                for r in range(repeat):
                    key = request_key({"format": CACHE_FORMAT, "kind": "judge", "model": self.model,
                                       "endpoint": self.endpoint, "metric": metric, "rubric": rubric.name,
                                       "rubric_sha": rubric.sha, "temperature": self.temperature,
                                       "max_tokens": self.max_tokens, "seed": self.seed, "repeat": r,
                                       "messages": messages})
                    tasks.append(_Task(metric, item, r, rubric, messages, key, missing, defn))
        return tasks

    def metric(self, metric: Union[str, JudgeMetric]) -> JudgeMetric:
        """The :class:`JudgeMetric` for a name (a custom metric of this judge, else a built-in) or object."""
        return resolve_metrics([metric], self.custom)[0]

    def _jobs(self, items: Optional[Sequence[JudgeItem]], metrics: Any
              ) -> Tuple[Dict[str, List[JudgeItem]], Dict[str, JudgeMetric]]:
        """``({name: items}, {name: JudgeMetric})``; ``metrics`` is names/objects or ``{name or object: items}``."""
        if isinstance(metrics, Mapping):
            pairs = list(metrics.items())
        else:
            if isinstance(metrics, (str, JudgeMetric)):
                metrics = [metrics]
            pairs = [(m, items or ()) for m in metrics]
        defs_list = resolve_metrics([m for m, _ in pairs], self.custom)
        defs = {d.name: d for d in defs_list}
        jobs: Dict[str, List[JudgeItem]] = {}
        for m, its in pairs:
            name = m.name if isinstance(m, JudgeMetric) else m
            jobs.setdefault(name, list(its))
        return jobs, defs

    def _language_of(self, jobs: Mapping[str, Sequence[JudgeItem]]) -> str:
        seen: Dict[str, JudgeItem] = {}
        for items in jobs.values():
            for i in items:
                seen.setdefault(i.item_id, i)
        return self.resolve_language(list(seen.values()))

    def _usable(self, cached: Dict[str, Any]) -> bool:
        return cached.get("status") == "judged" or not self.retry_unjudged

    # -- dry run -------------------------------------------------------------------------------
    def plan(self, items: Optional[Sequence[JudgeItem]], metrics: Union[Sequence[str], Mapping[str, Sequence[JudgeItem]]],
             *, repeat: int = 1) -> JudgePlan:
        """Count the calls a run would make (cached and input-less judgments excluded) and estimate
        their tokens (:mod:`ragexam.llm.cost`) and cost; nothing is sent.  Arguments as in :meth:`run`."""
        jobs, defs = self._jobs(items, metrics)
        language = self._language_of(jobs)
        tasks = self._tasks(jobs, repeat, language, defs)
        plan = plan_calls((PlannedCall(
            None if t.missing is not None else t.key, "".join(m["content"] for m in t.messages),
            _allowance(t.metric, len(t.item.contexts)), t.metric) for t in tasks),
            self.cache, usable=self._usable, price=self.price)
        return JudgePlan(self.model, self.endpoint, language, repeat, plan.total, plan.cached, plan.skipped,
                         plan.calls, plan.est_prompt_tokens, plan.est_completion_tokens, plan.est_cost,
                         plan.by_group, plan.shared)

    # -- run -----------------------------------------------------------------------------------
    def run(self, items: Optional[Sequence[JudgeItem]], metrics: Union[Sequence[str], Mapping[str, Sequence[JudgeItem]]],
            *, repeat: int = 1, progress: Optional[Callable[[int, int], None]] = None) -> JudgeRun:
        """Judge every item on every metric ``repeat`` times (see the module docstring).

        ``metrics`` is a list of metric names (each applied to all ``items``), or a mapping
        ``{metric: items}`` to judge different items per metric (``items`` is then ignored).
        The prompt language is resolved once over all items.  Calls go through
        :func:`ragexam.llm.batch.run_calls` (cache, resume, concurrency, in-flight sharing).

        :raises EndpointError: the endpoint refused the configuration (401/403/404); results
            finished before that are in the cache.
        """
        jobs, defs = self._jobs(items, metrics)
        language = self._language_of(jobs)
        tasks = self._tasks(jobs, repeat, language, defs)
        limit = None
        if self.executor is not None:  # one limit for every actor of the cluster: --concurrency calls at once
            from ragexam.exec.calls import RateLimit

            limit = RateLimit(concurrency=self.concurrency, name=f"judge:{self.endpoint}")
        batch = run_calls(((t.key, t) for t in tasks if t.missing is None), self._judge, cache=self.cache,
                          kind="judge", model=self.model, endpoint=self.endpoint, concurrency=self.concurrency,
                          usable=self._usable, redact=self.client.redact_value, progress=progress,
                          claim_wait=self.settings.claim_wait_seconds, executor=self.executor, limit=limit)
        out: List[JudgeVerdict] = []
        for t in tasks:
            if t.missing is not None:
                out.append(self._verdict(self._unjudged(t.missing, REASONS[t.missing][1], t), t, cached=False))
            else:
                out.append(self._verdict(batch.values[t.key], t, cached=t.key in batch.from_cache))
        rubrics = {m: {"name": defs[m].rubric(language).name, "sha": defs[m].rubric(language).sha,
                       **({"source": defs[m].source} if defs[m].custom else {})} for m in jobs}
        return JudgeRun(out, self.model, self.endpoint, language, repeat, rubrics,
                        {m: self.signature(defs[m], language, repeat) for m in rubrics},
                        batch.usage.to_dict(self.price), dict(defs))

    def signature(self, metric: Union[str, JudgeMetric], language: str, repeat: int = 1) -> str:
        """``judge:<model>|endpoint:...|rubric:<name>@<sha>|temp:..|max_tokens:..|seed:..|repeat:..|
        attempts:..|format:..|version:ragexam-<v>`` (never the API key).  A custom rubric's name and
        hash cover everything of its file the judge sees; its pass level follows as ``pass:>=N``."""
        from ragexam.signature import Signature

        defn = self.metric(metric)
        r = defn.rubric(language)
        fields = [("judge", self.model), ("endpoint", self.endpoint), ("rubric", f"{r.name}@{r.sha}")]
        if defn.custom:  # the pass level is not in the prompt (changing it re-judges nothing) but in the score
            fields.append(("pass", (defn.pass_text or "none").replace("score >= ", ">=")))
        fields += [("temp", self.temperature), ("max_tokens", self.max_tokens), ("seed", self.seed),
                   ("repeat", repeat), ("attempts", self.max_attempts), ("format", self.client.response_format)]
        return str(Signature(fields))

    # -- one judgment ----------------------------------------------------------------------------
    def _verdict(self, value: Dict[str, Any], t: _Task, *, cached: bool) -> JudgeVerdict:
        passed = t.defn.passed(value["score"], value["label"], value["details"]) if value["status"] == "judged" else None
        return JudgeVerdict(metric=t.metric, item_id=t.item.item_id, repeat=t.repeat, status=value["status"],
                            score=value["score"], label=value["label"], details=value["details"],
                            reason=value["reason"], message=value["message"], attempts=value["attempts"],
                            requests=value["requests"], prompt_tokens=value["prompt_tokens"],
                            completion_tokens=value["completion_tokens"], cached=cached,
                            rubric=t.rubric.name, rubric_sha=t.rubric.sha, model=self.model,
                            endpoint=self.endpoint, key=t.key, errors=tuple(value.get("errors", ())),
                            passed=passed)

    def _unjudged(self, reason: str, message: str, t: _Task, *, attempts: int = 0, requests: int = 0,
                  pt: Optional[int] = None, ct: Optional[int] = None, errors: Sequence[Dict[str, Any]] = (),
                  details: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        return self._value(t, "unjudged", None, None, details or {}, reason, message, attempts, requests, pt, ct,
                           errors)

    def _value(self, t: _Task, status: str, score: Optional[float], label: Optional[str], details: Dict[str, Any],
               reason: Optional[str], message: Optional[str], attempts: int, requests: int, pt: Optional[int],
               ct: Optional[int], errors: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
        """A judgment as stored in the cache (what :meth:`_verdict` reads back)."""
        return {"status": status, "score": score, "label": label, "details": details, "reason": reason,
                "message": message, "attempts": attempts, "requests": requests, "prompt_tokens": pt,
                "completion_tokens": ct, "rubric": t.rubric.name, "rubric_sha": t.rubric.sha, "model": self.model,
                "endpoint": self.endpoint, "errors": list(errors)}

    def _judge(self, t: _Task) -> Outcome:
        """One judgment: up to ``max_attempts`` replies (:func:`ragexam.llm.attempts.ask`), each parsed as it
        arrived (the run redacts what is stored and returned, never what is parsed)."""
        from ragexam.llm.attempts import ask

        n_ctx = len(t.item.contexts)
        got = ask(self.client, t.messages, lambda content: t.defn.validate(extract_json(content), n_ctx),
                  bad_reply=(ReplyError,), final=(NotApplicable,), refusal=_REFUSAL,
                  feedback=lambda kind, message: feedback_message(kind, t.rubric.language, message),
                  max_attempts=self.max_attempts, max_tokens=self.max_tokens, temperature=self.temperature,
                  seed=self.seed, schema=t.rubric.schema, schema_name=t.metric)
        counts = dict(attempts=got.attempts, requests=got.requests, pt=got.prompt_tokens, ct=got.completion_tokens,
                      errors=got.errors)
        if got.failed is not None:
            value = self._unjudged(got.failed.kind, got.failed.message or got.failed.kind, t, **counts)
        elif got.final is not None:
            na = got.final
            value = self._unjudged(na.reason, na.message, t, details=na.details, **counts)  # type: ignore[attr-defined]
        elif got.parsed:
            v = got.value
            value = self._value(t, "judged", v.score, v.label, v.details, None, None, got.attempts, got.requests,
                                got.prompt_tokens, got.completion_tokens, got.errors)
        else:
            value = self._unjudged(got.reason or "invalid_json",
                                   f"{got.message} (after {fmt.plural(got.attempts, 'attempt')})", t, **counts)
        store = value["status"] == "judged" or value["reason"] in _CACHEABLE
        return Outcome(value, store, got.requests, got.attempts, got.prompt_tokens, got.completion_tokens)
