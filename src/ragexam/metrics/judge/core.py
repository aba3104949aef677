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
   A ``faithfulness`` item whose answer has no claim left once declining sentences are set aside is
   ``unjudged`` ``no_claims`` the same way (:mod:`ragexam.metrics.judge.units`).
   A claim (``faithfulness``) or statement (``context_recall``) that a context states in the same words is
   supported whatever the judge says (:mod:`ragexam.metrics.judge.quoted`; ``quoted`` in the details, the
   judge's own flag beside it); when every unit of an item is, no call is made (``quoted=False`` turns the
   rule off).
2. Otherwise the rubric's messages are sent with the metric's JSON schema *for this item* (the exact
   number of contexts / claims / statements as ``minItems``/``maxItems``, scores as enums: JSON schema /
   JSON mode where supported, see :mod:`ragexam.llm.client`) and the reply, parsed as it arrived, is
   checked against the same contract (:mod:`ragexam.metrics.judge.contract`).  An invalid reply is
   answered with the exact rule it broke; a reply cut at ``max_tokens`` in a loop with the repeated piece
   and a ``frequency_penalty`` (a cut without a loop gets twice the ``max_tokens``, up to 4x); a refusal
   with the reminder that this is grading -- up to ``max_attempts`` replies in all
   (:func:`ragexam.llm.attempts.ask`).  Then the judgment is ``unjudged`` with the last problem as its
   reason.
3. A reply that is valid but yields no score (``faithfulness`` of an answer without claims,
   ``answer_relevancy`` of an answer that declines) is ``unjudged`` with reason ``no_claims`` /
   ``declined``.
4. Transport failures that outlast the retries are ``unjudged`` with reason ``rate_limited``,
   ``server_error``, ``timeout``, ``connection_error``, ``bad_response``, ``bad_request`` or
   ``http_error``.

An unjudged result never has a score: it is not NaN, not 0, and never enters a mean.  Every
summary reports coverage = judged / total and the unjudged reasons by count (:data:`REASONS`).

Scoring: sampled or probability-weighted (``scoring``)
------------------------------------------------------
``sample`` reads the score the judge wrote.  ``probability`` asks the endpoint for token log-probabilities
and reads, where the judge wrote its score, the probability of every allowed value
(:mod:`ragexam.llm.logprobs`): a 1-5 score becomes the expected value over the five digits (G-Eval), a
true/false per unit the probability of true, a two-label verdict the probability of the positive label;
per-unit values are combined as the metric's score is (:meth:`JudgeMetric.probability_score`).  Labels,
pass rules and agreement units still read the written reply; ``details`` keeps the written score
(``score_sample``) and the distributions (``probabilities``).  A reply whose log-probabilities do not cover
its score is ``unjudged`` ``no_probabilities`` -- never a mix of the two kinds of score.  ``auto`` (the
default) is ``probability`` when the endpoint returns log-probabilities, asked once per endpoint and
remembered (:func:`ragexam.llm.probe.probe`), else ``sample``.  Metrics whose verdict has no order
(``pairwise``) are always sampled.  The signature says which was used (``scoring:probability``).

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
temperature, max_tokens, seed, whether log-probabilities were asked for, and the repeat index.

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

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ragexam.signature import Signature
from ragexam import fmt
from ragexam.errors import InputError, one_of, integer_in
from ragexam.llm.attempts import TEXT_REFUSAL
from ragexam.llm.batch import Outcome, PlannedCall, plan_calls, Store, run_calls
from ragexam.llm.cache import request_key
from ragexam.llm.client import LLMClient
from ragexam.llm.cost import price_for
from ragexam.llm.settings import LLMSettings
from ragexam.metrics.judge.metric import JudgeMetric
from ragexam.metrics.judge.registry import builtin_metrics, resolve_metrics
from ragexam.metrics.judge.prompts import LANGUAGES, Rubric, detect_language, feedback_message, render_messages
from ragexam.metrics.judge.quoted import QUOTE_RULE_VERSION, Quote, quotes_many
from ragexam.metrics.judge.replies import NotApplicable, ReplyError, extract_json
from ragexam.metrics.judge.results import (INTERVAL_CONFIDENCE, INTERVAL_RESAMPLES, REASONS, ItemScore, JudgeItem,
                                           JudgePlan, JudgeRun, JudgeVerdict, MetricSummary, combine_repeats,
                                           summarize)

__all__ = ["JudgeItem", "JudgeVerdict", "ItemScore", "MetricSummary", "JudgeRun", "JudgePlan", "Judge",
           "REASONS", "summarize", "combine_repeats", "CACHE_FORMAT", "SCORING", "INTERVAL_RESAMPLES",
           "INTERVAL_CONFIDENCE"]

CACHE_FORMAT = "ragexam-judge/2"
_CACHEABLE = {"invalid_json", "invalid_reply", "truncated", "refused", "no_claims", "declined"}
_REFUSAL = TEXT_REFUSAL


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
    units: List[str]
    top_logprobs: Optional[int] = None
    #: per unit, where a context quotes it (:mod:`ragexam.metrics.judge.quoted`); empty when the rule is off
    quoted: Tuple[Optional[Quote], ...] = ()

    @property
    def all_quoted(self) -> bool:
        """Every unit is quoted by a context: the judgment needs no call."""
        return bool(self.quoted) and all(q is not None for q in self.quoted)


def _missing(defn: JudgeMetric, item: JudgeItem, units: Sequence[str]) -> Optional[str]:
    for need in defn.needs:
        if need == "contexts" and not any(c.strip() for c in item.contexts):
            return "no_contexts"
        if need == "answer" and (item.answer is None or not item.answer.strip()):
            return "no_answer"
        if need == "ground_truth" and (item.ground_truth is None or not item.ground_truth.strip()):
            return "no_ground_truth"
        if need == "second_answer" and (item.second_answer is None or not item.second_answer.strip()):
            return "no_second_answer"
    if defn.unit_kind == "claims" and not units:
        return "no_claims"
    if defn.unit_kind == "statements" and not units:
        return "no_ground_truth"
    return None


#: the ``--scoring`` modes
SCORING = ("sample", "probability", "auto")


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
        name in :meth:`run`; two of them with the same name are an error.
    :param scoring: ``auto``, ``sample`` or ``probability`` (module docstring; default the settings' ``scoring``,
        ``auto``).
    :param reasoning: (default the settings' ``reasoning``, ``True``) ``False``: the reply schema allows an empty ``reasoning`` only (``maxLength`` 0).  The
        score comes first in every reply, so it is the same token for token; only the explanation (and its
        cost: most of a small local model's time) is left out.  In the signature as ``reasoning:off``.
    :param quoted: (default the settings' ``quoted``, ``True``) a claim or statement that a context states in the
        same words is supported without the judge's say (:mod:`ragexam.metrics.judge.quoted`); in the
        signature of ``faithfulness`` and ``context_recall`` as ``quoted:v2`` (``quoted:off``).
    :param client: a ready :class:`~ragexam.llm.client.LLMClient` (its endpoint settings win).
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

    def __copy__(self) -> "Judge":
        """A copy sharing this judge's cache, client and executor (``copy.copy`` would otherwise go through
        :meth:`__getstate__` and drop the cache: a check judged with the copy would be neither cached nor
        recorded)."""
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        return twin

    def __init__(self, model: Optional[str] = None, *, settings: Optional[LLMSettings] = None,
                 max_attempts: int = 3, language: str = "auto", retry_unjudged: bool = False,
                 custom: Sequence[JudgeMetric] = (), scoring: Optional[str] = None, reasoning: Optional[bool] = None,
                 quoted: Optional[bool] = None, client: Optional[LLMClient] = None,
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
        integer_in(max_attempts, 1, source="--max-attempts", field="max_attempts")
        one_of(language, ("auto", *LANGUAGES), source="--judge-lang", field="language")
        scoring = settings.scoring if scoring is None else scoring
        one_of(scoring, SCORING, source="--scoring", field="scoring")
        if client is None:
            client = LLMClient(settings)
        self.settings = settings
        self.client = client
        self.model = client.model
        self.temperature = float(settings.temperature)
        self.max_tokens = settings.max_tokens if settings.max_tokens is not None else self.DEFAULT_MAX_TOKENS
        self.seed = settings.seed
        self.concurrency = settings.concurrency
        self.max_attempts = max_attempts
        self.language = language
        self.scoring = scoring
        reasoning = settings.reasoning if reasoning is None else reasoning
        if not isinstance(reasoning, bool):
            raise InputError(f"received {reasoning!r}; expected True or False", source="--no-reasoning",
                             field="reasoning")
        self.reasoning = reasoning
        quoted = settings.quoted if quoted is None else quoted
        if not isinstance(quoted, bool):
            raise InputError(f"received {quoted!r}; expected True or False", source="--judge-quoted", field="quoted")
        self.quoted = quoted
        self.cache = settings.open_cache()
        self.executor = executor
        self.retry_unjudged = retry_unjudged
        self.price = price_for(self.model, client.endpoint, settings.price)
        self.custom = _custom_metrics(custom)
        self.probe_result: Any = None
        try:  # fail now, not after the paid calls, if the settings cannot be written in a signature
            self.signature(next(iter(builtin_metrics().values())), "en")
        except ValueError as err:
            raise InputError(f"received {self.model!r}: {err}", source="--judge-model", field="model") from None

    def __repr__(self) -> str:
        return f"Judge(model={self.model!r}, endpoint={self.client.endpoint!r})"

    @property
    def endpoint(self) -> str:
        return self.client.endpoint

    # -- scoring ---------------------------------------------------------------------------------
    def resolve_scoring(self, *, send: bool = True) -> str:
        """``sample`` or ``probability``: ``scoring`` with ``auto`` decided by the endpoint's probe (sent once
        and cached; with ``send=False`` only a cached probe is read and an unknown endpoint counts as
        ``sample``).  :raises InputError: ``probability`` on an endpoint that returns no log-probabilities."""
        if self.scoring == "sample":
            return "sample"
        if self.probe_result is None:
            from ragexam.llm.probe import cached_probe, probe
            from ragexam.llm.transport import CallFailed

            try:
                self.probe_result = probe(self.client, self.cache) if send else cached_probe(self.client, self.cache)
            except CallFailed as err:  # the endpoint is failing: its calls will say so; nothing to weigh with
                if self.scoring == "probability":
                    raise InputError(f"could not ask {self.endpoint} whether it returns token log-probabilities: "
                                     f"{err.message}; retry, or use --scoring sample", source="--scoring",
                                     field="scoring") from None
                return "sample"
        has = self.probe_result is not None and self.probe_result.has_logprobs
        if self.scoring == "probability" and self.probe_result is not None and not has:
            raise InputError(f"{self.endpoint} returns no token log-probabilities for {self.model!r} (probe: logprobs "
                             f"{self.probe_result.logprobs}); use --scoring sample (or auto)", source="--scoring",
                             field="scoring")
        return "probability" if has or (self.scoring == "probability" and self.probe_result is None) else "sample"

    def metric_scoring(self, defn: JudgeMetric, mode: str) -> str:
        """The scoring a metric gets under ``mode`` (a metric whose values have no order is sampled)."""
        return "probability" if mode == "probability" and defn.contract.options() else "sample"

    # -- tasks ---------------------------------------------------------------------------------
    def resolve_language(self, items: Sequence[JudgeItem]) -> str:
        """``ko``/``en``: the fixed language, or detected from questions and ground truths."""
        if self.language != "auto":
            return self.language
        texts = [i.question for i in items] + [i.ground_truth for i in items if i.ground_truth]
        return detect_language(texts)

    def _tasks(self, jobs: Mapping[str, Sequence[JudgeItem]], repeat: int, language: str,
               defs: Mapping[str, JudgeMetric], mode: str) -> List[_Task]:
        integer_in(repeat, 1, source="--repeat", field="repeat")
        tasks = []
        planned = []
        for metric, items in jobs.items():
            defn = defs[metric]
            ids = [i.item_id for i in items]
            if len(set(ids)) != len(ids):
                dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
                raise InputError(f"item ids must be unique per metric; repeated: {dup}", source="judge",
                                 field="item_id")
            for item in items:
                units = defn.unit_texts(contexts=item.contexts, answer=item.answer, ground_truth=item.ground_truth)
                planned.append((metric, defn, item, units, _missing(defn, item, units)))
        asked = [i for i, (_, defn, _, _, missing) in enumerate(planned)
                 if self.quoted and defn.quotable and missing is None]
        found = dict(zip(asked, quotes_many([(planned[i][3], planned[i][2].contexts) for i in asked])))
        rubrics = {m: (defs[m].rubric(language), self._top_logprobs(defs[m], mode)) for m in jobs}
        for n, (metric, defn, item, units, missing) in enumerate(planned):
            rubric, top = rubrics[metric]
            quoted = tuple(found.get(n, ()))
            messages = render_messages(rubric, question=item.question, contexts=item.contexts,
                                       answer=item.answer, ground_truth=item.ground_truth,
                                       second_answer=item.second_answer, units=units)
            for r in range(repeat):
                key = request_key({"format": CACHE_FORMAT, "kind": "judge", "model": self.model,
                                   "endpoint": self.endpoint, "metric": metric, "rubric": rubric.name,
                                   "rubric_sha": rubric.sha, "temperature": self.temperature,
                                   "max_tokens": self.max_tokens, "seed": self.seed, "repeat": r,
                                   "logprobs": top, "messages": messages,
                                   **({} if self.reasoning else {"reasoning": False})})
                tasks.append(_Task(metric, item, r, rubric, messages, key, missing, defn, units, top, quoted))
        return tasks

    def _top_logprobs(self, defn: JudgeMetric, mode: str) -> Optional[int]:
        from ragexam.llm.probe import TOP_LOGPROBS

        return TOP_LOGPROBS if self.metric_scoring(defn, mode) == "probability" else None

    def metric(self, metric: Union[str, JudgeMetric]) -> JudgeMetric:
        """The :class:`JudgeMetric` for a name (a custom metric of this judge, else a registered one) or object."""
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
        their tokens (:mod:`ragexam.llm.cost`) and cost; nothing is sent (not even the probe: ``auto`` scoring
        on an endpoint never probed counts as sampled).  Arguments as in :meth:`run`."""
        jobs, defs = self._jobs(items, metrics)
        language = self._language_of(jobs)
        mode = self.resolve_scoring(send=False)
        tasks = self._tasks(jobs, repeat, language, defs, mode)
        plan = plan_calls((PlannedCall(
            None if t.missing is not None or t.all_quoted else t.key, "".join(m["content"] for m in t.messages),
            t.defn.allowance_for(len(t.units)), t.metric) for t in tasks),
            self.cache, usable=self._usable, price=self.price)
        shown = mode if self.scoring != "auto" or self.probe_result is not None else "auto (endpoint not probed yet)"
        return JudgePlan(self.model, self.endpoint, language, repeat, plan.total, plan.cached, plan.skipped,
                         plan.calls, plan.est_prompt_tokens, plan.est_completion_tokens, plan.est_cost,
                         plan.by_group, plan.shared, shown)

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
        needs_calls = any(_missing(defs[m], i, defs[m].unit_texts(contexts=i.contexts, answer=i.answer,
                                                                  ground_truth=i.ground_truth)) is None
                          for m, its in jobs.items() for i in its)
        if needs_calls:
            self.client.require_key()
        mode = self.resolve_scoring(send=needs_calls)
        tasks = self._tasks(jobs, repeat, language, defs, mode)
        scoring = {m: self.metric_scoring(defs[m], mode) for m in jobs}
        limit = None
        if self.executor is not None:  # one limit for every actor of the cluster: --concurrency calls at once
            from ragexam.exec.calls import RateLimit

            limit = RateLimit(concurrency=self.concurrency, name=f"judge:{self.endpoint}")
        called = ((t.key, t) for t in tasks if t.missing is None and not t.all_quoted)
        batch = run_calls(called, self._judge, store=Store(self.cache, "judge", self.model, self.endpoint),
                          concurrency=self.concurrency, usable=self._usable, redact=self.client.redact_value, progress=progress,
                          claim_wait=self.settings.claim_wait_seconds, executor=self.executor, limit=limit)
        out = _verdicts(self, tasks, batch, scoring)
        notes = _fall_back(self.scoring, out, scoring)
        if notes:
            out = _verdicts(self, tasks, batch, scoring)
        rubrics = {m: {"name": defs[m].rubric(language).name, "sha": defs[m].rubric(language).sha,
                       **({"source": defs[m].source} if defs[m].custom else {})} for m in jobs}
        return JudgeRun(out, self.model, self.endpoint, language, repeat, rubrics,
                        {m: self.signature(defs[m], language, repeat, scoring[m]) for m in rubrics},
                        batch.usage.to_dict(self.price), dict(defs), scoring,
                        self.probe_result.to_dict() if self.probe_result is not None else None, notes)

    def signature(self, metric: Union[str, JudgeMetric], language: str, repeat: int = 1,
                  scoring: Optional[str] = None) -> Signature:
        """``judge:<model>|endpoint:...|rubric:<name>@<sha>|temp:..|max_tokens:..|seed:..|repeat:..|
        attempts:..|format:..|scoring:..|version:ragexam-<v>`` (never the API key).  A custom rubric's name
        and hash cover everything of its file the judge sees; its pass level follows as ``pass:>=N``.
        ``scoring``: the scoring used (default this judge's setting, ``auto`` until a run resolved it)."""
        defn = self.metric(metric)
        r = defn.rubric(language)
        fields = [("judge", self.model), ("endpoint", self.endpoint), ("rubric", f"{r.name}@{r.sha}")]
        if defn.custom:  # the pass level is not in the prompt (changing it re-judges nothing) but in the score
            fields.append(("pass", (defn.pass_text or "none").replace("score >= ", ">=")))
        fields += [("temp", self.temperature), ("max_tokens", self.max_tokens), ("seed", self.seed),
                   ("repeat", repeat), ("attempts", self.max_attempts), ("format", self.client.response_format),
                   ("scoring", scoring or self.scoring)] + ([] if self.reasoning else [("reasoning", "off")])
        if defn.quotable:
            fields.append(("quoted", QUOTE_RULE_VERSION if self.quoted else "off"))
        return Signature(fields)

    # -- one judgment ----------------------------------------------------------------------------
    def _verdict(self, value: Dict[str, Any], t: _Task, *, cached: bool, scoring: str = "sample") -> JudgeVerdict:
        if t.quoted and not t.all_quoted and value["status"] == "judged":  # a reply: overrule it where quoted
            value = _with_quotes(value, t)
        status, score, reason, message = value["status"], value["score"], value["reason"], value["message"]
        details = value["details"]
        if status == "judged" and scoring == "probability":
            prob = value.get("probability") or {}
            details = {**details, "score_sample": score, "probabilities": prob}
            score = prob.get("score")
            if score is None:
                status, reason = "unjudged", "no_probabilities"
                message = prob.get("error") or REASONS["no_probabilities"][1]
        passed = t.defn.passed(value["score"], value["label"], value["details"]) if status == "judged" else None
        return JudgeVerdict(metric=t.metric, item_id=t.item.item_id, repeat=t.repeat, status=status,
                            score=score, label=value["label"] if status == "judged" else None, details=details,
                            reason=reason, message=message, attempts=value["attempts"],
                            requests=value["requests"], prompt_tokens=value["prompt_tokens"],
                            completion_tokens=value["completion_tokens"], cached=cached,
                            rubric=t.rubric.name, rubric_sha=t.rubric.sha, model=self.model,
                            endpoint=self.endpoint, key=t.key, errors=tuple(value.get("errors", ())),
                            passed=passed, scoring=scoring)

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

    def _all_quoted(self, t: _Task, scoring: str) -> Dict[str, Any]:
        """The judgment of an item whose every unit a context quotes: supported throughout, no call made (the
        judge's reader on an all-true reply; with probability scoring, probability 1 for each unit)."""
        v = t.defn.reader({t.defn.contract.score: [True] * len(t.units), "reasoning": ""}, t.units)
        details = dict(v.details)
        entries = t.defn.unit_kind  # the reader's list of units: "claims" / "statements"
        details[entries] = [{**e, "quoted": q.to_dict()} for e, q in zip(details[entries], t.quoted)]
        details["n_quoted"] = len(t.units)
        value = self._value(t, "judged", v.score, v.label, details, None, None, 0, 0, None, None, ())
        if scoring == "probability":
            value["probability"] = {"field": t.defn.contract.score, "score": 1.0,
                                    "distributions": [{"true": 1.0, "false": 0.0} for _ in t.units],
                                    "mass": [1.0 for _ in t.units]}
        return value

    def _schema(self, t: _Task) -> Dict[str, Any]:
        """The reply schema of one task: the rubric's for its number of units (without reasoning: ``maxLength``
        0 on the ``reasoning`` field)."""
        schema = t.rubric.schema_for(len(t.units))
        if not self.reasoning and "reasoning" in schema["properties"]:
            schema["properties"]["reasoning"] = {"type": "string", "maxLength": 0}
        return schema

    def _judge(self, t: _Task) -> Outcome:
        """One judgment: up to ``max_attempts`` replies (:func:`ragexam.llm.attempts.ask`), each parsed as it
        arrived (the run redacts what is stored and returned, never what is parsed)."""
        from ragexam.llm.attempts import Reading, ask

        top = t.top_logprobs
        reading = Reading(lambda content: t.defn.validate(extract_json(content), t.units), (ReplyError,),
                          lambda kind, message: feedback_message(kind, t.rubric.language, message),
                          final=(NotApplicable,), refusal=_REFUSAL, loop_kind="loop")
        got = ask(self.client, t.messages, reading, max_attempts=self.max_attempts, max_tokens=self.max_tokens,
                  temperature=self.temperature, seed=self.seed, schema=self._schema(t), schema_name=t.metric,
                  logprobs=top)
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
            if top is not None:
                value["probability"] = probabilities(t.defn, t.units, got.content, got.logprobs,
                                                     error=got.logprobs_error)
        else:
            value = self._unjudged(got.reason or "invalid_json",
                                   f"{got.message} (after {fmt.plural(got.attempts, 'attempt')})", t, **counts)
        value["loops"] = got.loops
        store = value["status"] == "judged" or value["reason"] in _CACHEABLE
        return Outcome(value, store, got.requests, got.attempts, got.prompt_tokens, got.completion_tokens)


def _verdicts(judge: Judge, tasks: Sequence[_Task], batch: Any, scoring: Mapping[str, str]) -> List[JudgeVerdict]:
    """The verdict of every task from its value (no input, every unit quoted, or the batch's reply)."""
    out: List[JudgeVerdict] = []
    for t in tasks:
        sc = scoring[t.metric]
        if t.missing is not None:
            value, cached = judge._unjudged(t.missing, REASONS[t.missing][1], t), False
        elif t.all_quoted:
            value, cached = judge._all_quoted(t, sc), False
        else:
            value, cached = batch.values[t.key], t.key in batch.from_cache
        out.append(judge._verdict(value, t, cached=cached, scoring=sc))
    return out


def _fall_back(mode: str, verdicts: Sequence[JudgeVerdict], scoring: Dict[str, str]) -> List[str]:
    """Under ``auto`` scoring (``mode``), each metric some of whose replies carried no readable log-probabilities
    (although the probe found the endpoint returns them) is scored by the written scores instead -- the whole
    metric, never a mix of the two kinds of score -- with a note saying so; ``scoring`` is updated."""
    if mode != "auto":
        return []
    notes = []
    for m, sc in scoring.items():
        if sc != "probability":
            continue
        mine = [v for v in verdicts if v.metric == m and v.details.get("score_sample") is not None]
        lost = [v for v in mine if v.reason == "no_probabilities"]
        if lost:
            scoring[m] = "sample"
            notes.append(f"{m}: {len(lost)} of {fmt.plural(len(mine), 'reply', 'replies')} carried no readable "
                         "token log-probabilities although the endpoint's probe found it returns them "
                         f"({lost[0].message}); {m} is scored by the written scores (--scoring auto; --scoring "
                         "probability leaves those replies unjudged)")
    return notes


def _custom_metrics(custom: Sequence[JudgeMetric]) -> Dict[str, JudgeMetric]:
    """``{name: metric}`` of a judge's custom metrics; ``InputError`` for a non-metric, a built-in's name, or two
    metrics with one name (``score --rubric a.json --rubric b.json`` both named ``politeness``)."""
    out: Dict[str, JudgeMetric] = {}
    built_in = builtin_metrics()
    for m in custom:
        if not isinstance(m, JudgeMetric):
            raise InputError(f"received {type(m).__name__}; expected a JudgeMetric (load_rubric(path))",
                             source="judge", field="custom")
        if m.name in built_in:
            raise InputError(f"a custom metric may not be named {m.name!r}, a built-in metric; rename it",
                             source=m.source, field="name")
        if m.name in out:
            raise InputError(f"two rubrics are named {m.name!r}: {out[m.name].source} and {m.source}; a metric's name "
                             "must be unique -- change 'name' in one of the files", source=m.source, field="name")
        out[m.name] = m
    return out


def _with_quotes(value: Dict[str, Any], t: _Task) -> Dict[str, Any]:
    """A judged per-unit value with the quoted units supported (:mod:`ragexam.metrics.judge.quoted`): the
    judge's flag kept as ``judge_supported``, where it was quoted as ``quoted``, score and label read again, and
    the quoted units' probabilities set to 1 (the judge's own in ``judge_distributions``).  The value read from
    the cache is not changed."""
    details = dict(value["details"])
    entries_key = t.defn.unit_kind  # the reader's list of units: "claims" / "statements"
    entries = []
    flags = []
    for entry, q in zip(details[entries_key], t.quoted):
        entry = dict(entry)
        if q is not None:
            entry.update(supported=True, judge_supported=entry.get("supported"), quoted=q.to_dict())
        entries.append(entry)
        flags.append(bool(entry["supported"]))
    v = t.defn.reader({t.defn.contract.score: flags, "reasoning": details.get("reasoning", "")}, t.units)
    details = {**details, **v.details, entries_key: entries, "n_quoted": sum(q is not None for q in t.quoted)}
    out = {**value, "score": v.score, "label": v.label, "details": details}
    prob = value.get("probability")
    if prob and prob.get("distributions") and len(prob["distributions"]) == len(t.quoted):
        dists = [{"true": 1.0, "false": 0.0} if q is not None else d for d, q in zip(prob["distributions"], t.quoted)]
        out["probability"] = {**prob, "distributions": dists, "score": t.defn.probability_score(dists),
                              "judge_distributions": prob["distributions"]}
    return out


def probabilities(defn: JudgeMetric, units: Sequence[str], content: Optional[str], tokens: Any, *,
                  error: Optional[str] = None) -> Dict[str, Any]:
    """The probability score of one reply (:mod:`ragexam.llm.logprobs`): ``{"field", "score", "distributions",
    "mass"}`` (one distribution per unit for per-unit metrics), or ``{"score": None, "error": why}`` (``error``:
    why the reply's log-probabilities could not be read, :class:`~ragexam.llm.logprobs.UnreadableLogprobs`)."""
    from ragexam.llm.logprobs import distribution_at, value_offsets

    contract = defn.contract
    options = [o for o, _ in contract.options()]
    if not options:
        return {"score": None, "error": f"{defn.name}'s score has no values to weigh by probability"}
    if error is not None:
        return {"score": None, "error": f"the reply's log-probabilities cannot be read: {error}"}
    if not tokens or content is None:
        return {"score": None, "error": "the reply carried no token log-probabilities"}
    spans = value_offsets(content)
    name = contract.score
    paths = [(name, i) for i in range(len(units))] if contract.per_unit() else [(name,)]
    dists = []
    for path in paths:
        where = f'"{path[0]}"' + (f" value {path[1] + 1}" if len(path) > 1 else "")
        if path not in spans:
            return {"score": None, "error": f"no {where} in the reply to read probabilities at"}
        d = distribution_at(tokens, content, spans[path][0], options)
        if d is None:
            return {"score": None, "error": f"the reply's log-probabilities do not cover {where} (no listed "
                                            "alternative is an allowed value, or the tokens do not spell the reply)"}
        dists.append(d)
    return {"field": name, "score": defn.probability_score([d.probs for d in dists]),
            "distributions": [{o: round(p, 6) for o, p in d.probs.items()} for d in dists],
            "mass": [round(d.mass, 6) for d in dists]}
