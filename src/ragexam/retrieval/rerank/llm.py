"""``rerank:llm:MODEL``: an LLM reranks the candidates, through the shared LLM layer (:mod:`ragexam.llm`).

Two modes (``mode`` option):

* ``listwise`` (default; one call per query): the passages are numbered ``[1]..[n]`` in first-stage order
  and the model returns ``{"ranking": [numbers, most relevant first]}``.  Candidate ``[i]`` at position ``p``
  of the ranking gets the score ``n - p``; a candidate the ranking leaves out is unjudged (it keeps its
  position).  A ranking with a number outside ``1..n``, a repeated number or anything but integers is an
  invalid reply: the query keeps its first-stage order.
* ``pointwise`` (one call per candidate): the model grades one passage, ``{"relevance": g}`` with ``g`` an
  integer in ``0..scale`` (default 3: 0 unrelated, 1 on topic, 2 partly answers, 3 answers it); the grade is
  the score, ties keep first-stage order.  A reply without a valid grade leaves that candidate unjudged.

Strict JSON: the request asks for the reply's JSON schema (the client's ``response_format`` ladder), and the
reply is read by :func:`ragexam.llm.replies.extract_json_object` (no guessing from free text).  A failed call
(after the transport's retries) is a failure of the query (listwise) or of the candidate (pointwise),
counted, never cached; valid replies are cached by (model, endpoint, messages, sampling settings) -- the
messages hold the query and the candidates -- so a second run makes no calls.  Tokens and cost are summed
(:class:`ragexam.llm.cost.Usage`).  Passages longer than ``max_chars`` characters are cut for the prompt
(and the cut is part of the cache key).  Latency per query is the call's (listwise) or the sum of the
candidates' calls (pointwise: the time one after another; they run ``concurrency`` at a time here).

The endpoint, key, timeouts, retries and concurrency come from an :class:`~ragexam.llm.settings.LLMSettings`
(the command line's LLM option group): ``LLMReranker("gpt-4o-mini", settings=...)``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ragexam.errors import InputError, one_of, integer_in
from ragexam.retrieval.rerank.base import Reranker, RerankResult
from ragexam.retrieval.registry import Build, Form, integer, number, reranker_family, text
from ragexam.signature import Signature, quote

if TYPE_CHECKING:
    from ragexam.llm.client import LLMClient
    from ragexam.llm.settings import LLMSettings

__all__ = ["LLMReranker", "MODES", "LISTWISE_SCHEMA", "POINTWISE_SCHEMA"]

MODES = ("listwise", "pointwise")
FORMAT = "ragexam-rerank-llm/1"

LISTWISE_SCHEMA = {"type": "object", "properties": {"ranking": {"type": "array", "items": {"type": "integer"}}},
                   "required": ["ranking"], "additionalProperties": False}
POINTWISE_SCHEMA = {"type": "object", "properties": {"relevance": {"type": "integer"}},
                    "required": ["relevance"], "additionalProperties": False}

_LISTWISE = ("You rank passages by how well they answer a question. Passages are numbered [1] to [{n}]. "
             'Reply with one JSON object {{"ranking": [...]}} listing the passage numbers from most to least '
             "relevant, each number once. Judge only by the question and the passages.")
_POINTWISE = ("You grade how well one passage answers a question, as an integer from 0 to {scale}: 0 unrelated, "
              "{mid} on topic but not answering, {scale} answers it. Reply with one JSON object "
              '{{"relevance": <integer>}}.')


class LLMReranker(Reranker):
    """An LLM reranker (module docstring).

    :param model: the model name (``gpt-4o-mini``, an Ollama or vLLM model).
    :param settings: :class:`~ragexam.llm.settings.LLMSettings` for the endpoint and the calls (its model is
        replaced by ``model``); default: built from ``model`` (``OPENAI_BASE_URL``/``OPENAI_API_KEY``).
    :param mode: ``listwise`` or ``pointwise``; ``scale``: the top grade of pointwise (>= 1).
    :param max_chars: longest passage put in a prompt (characters; longer ones are cut).
    """

    def __init__(self, model: str, *, settings: Optional["LLMSettings"] = None, mode: str = "listwise", scale: int = 3,
                 max_chars: int = 2000, progress: bool = True, client: Optional["LLMClient"] = None) -> None:
        from ragexam.llm.settings import LLMSettings

        where = f"rerank:llm:{model}"
        one_of(mode, MODES, source=where, field="mode")
        for name, value, low in (("scale", scale, 1), ("max_chars", max_chars, 50)):
            integer_in(value, low, source=where, field=name)
        if settings is None:
            settings = LLMSettings(model)
        elif not isinstance(settings, LLMSettings):
            raise InputError(f"received a {type(settings).__name__}; expected LLMSettings.", source=where,
                             field="settings")
        elif settings.model != model:
            settings = settings.replace(model=model)
        self.settings = settings
        self.mode = mode
        self.scale = scale
        self.max_chars = max_chars
        self.progress = progress
        self._client = client
        self.last_usage: Dict[str, Any] = {}

    @property
    def client(self):
        if self._client is None:
            from ragexam.llm.client import LLMClient

            self._client = LLMClient(self.settings)
        return self._client

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def spec(self) -> str:
        opts = [f"mode={self.mode}"] if self.mode != "listwise" else []
        return f"rerank:llm:{self.model}" + (f"?{'&'.join(opts)}" if opts else "")

    @property
    def signature(self) -> Signature:
        from ragexam.llm.settings import public_endpoint

        if self._client is not None:
            endpoint = self._client.endpoint
        else:
            endpoint = public_endpoint(self.settings.base_url) if self.settings.base_url else "OPENAI_BASE_URL"
        fields = [("rerank", f"llm:{quote(self.model)}"), ("endpoint", quote(endpoint)), ("mode", self.mode),
                  ("temperature", float(self.settings.temperature)), ("max_chars", self.max_chars), ("prompt", FORMAT)]
        if self.mode == "pointwise":
            fields.append(("scale", f"0-{self.scale}"))
        return Signature(fields, version=False)

    # -- prompts ------------------------------------------------------------------------------------
    def _cut(self, text: str) -> str:
        return text if len(text) <= self.max_chars else text[: self.max_chars] + " …"

    def listwise_messages(self, query: str, texts: List[str]) -> List[Dict[str, str]]:
        passages = "\n\n".join(f"[{i}] {self._cut(t)}" for i, t in enumerate(texts, 1))
        return [{"role": "system", "content": _LISTWISE.format(n=len(texts))},
                {"role": "user", "content": f"Question: {query}\n\nPassages:\n{passages}\n\nRanking (JSON):"}]

    def pointwise_messages(self, query: str, text: str) -> List[Dict[str, str]]:
        return [{"role": "system", "content": _POINTWISE.format(scale=self.scale, mid=max(1, self.scale // 2))},
                {"role": "user", "content": f"Question: {query}\n\nPassage: {self._cut(text)}\n\nGrade (JSON):"}]

    # -- replies ------------------------------------------------------------------------------------
    @staticmethod
    def parse_listwise(content: Optional[str], n: int) -> List[Optional[float]]:
        """Scores from a listwise reply (module docstring); ``ValueError`` naming what is wrong."""
        from ragexam.llm.replies import extract_json_object

        obj = extract_json_object(content)
        ranking = obj.get("ranking")
        if not isinstance(ranking, list) or not ranking:
            raise ValueError(f'"ranking" is {ranking!r}; expected a non-empty list of passage numbers')
        scores: List[Optional[float]] = [None] * n
        for p, x in enumerate(ranking):
            if isinstance(x, bool) or not isinstance(x, int):
                if isinstance(x, float) and x.is_integer():
                    x = int(x)
                else:
                    raise ValueError(f"ranking entry {p + 1} is {x!r}; expected a passage number")
            if not 1 <= x <= n:
                raise ValueError(f"ranking entry {p + 1} is {x}, outside the passages 1..{n}")
            if scores[x - 1] is not None:
                raise ValueError(f"passage {x} is ranked twice")
            scores[x - 1] = float(n - p)
        return scores

    def parse_pointwise(self, content: Optional[str]) -> float:
        from ragexam.llm.replies import extract_json_object

        obj = extract_json_object(content)
        g = obj.get("relevance")
        if isinstance(g, float) and g.is_integer():
            g = int(g)
        if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g <= self.scale:
            raise ValueError(f'"relevance" is {g!r}; expected an integer from 0 to {self.scale}')
        return float(g)

    # -- calls --------------------------------------------------------------------------------------
    def _key(self, messages: List[Dict[str, str]]) -> str:
        from ragexam.llm.cache import request_key

        s = self.settings
        return request_key({"format": FORMAT, "kind": "rerank", "mode": self.mode, "model": self.model,
                            "endpoint": self.client.endpoint, "messages": messages, "temperature": s.temperature,
                            "max_tokens": self._max_tokens(), "seed": s.seed})

    def _max_tokens(self) -> int:
        return self.settings.max_tokens or (512 if self.mode == "listwise" else 64)

    def rerank(self, queries: List[str], candidates: List[List[str]]) -> List[RerankResult]:
        from ragexam.llm.batch import Outcome, Store, run_calls
        from ragexam.llm.cost import price_for
        from ragexam.llm.transport import CallFailed
        from ragexam.retrieval.progress import progress_bar

        client = self.client
        schema = LISTWISE_SCHEMA if self.mode == "listwise" else POINTWISE_SCHEMA
        # tasks: (query index, candidate index or -1 for listwise, n, messages)
        tasks: List[Tuple[str, Tuple[int, int, int, List[Dict[str, str]]]]] = []
        for qi, (q, texts) in enumerate(zip(queries, candidates)):
            if self.mode == "listwise":
                m = self.listwise_messages(q, texts)
                tasks.append((self._key(m), (qi, -1, len(texts), m)))
            else:
                for ci, t in enumerate(texts):
                    m = self.pointwise_messages(q, t)
                    tasks.append((self._key(m), (qi, ci, len(texts), m)))

        def one(task) -> Outcome:
            _, _, n, messages = task
            t0 = time.perf_counter()
            try:
                reply = client.complete(messages, max_tokens=self._max_tokens(), temperature=self.settings.temperature,
                                        seed=self.settings.seed, schema=schema, schema_name="ranking")
            except CallFailed as err:
                return Outcome({"status": "failed", "reason": f"{err.kind}: {err.message}"}, store=False,
                               requests=err.requests)
            latency = time.perf_counter() - t0
            common = dict(requests=reply.requests, replies=1, prompt_tokens=reply.prompt_tokens,
                          completion_tokens=reply.completion_tokens)
            try:
                value = (self.parse_listwise(reply.content, n) if self.mode == "listwise"
                         else self.parse_pointwise(reply.content))
            except ValueError as err:
                return Outcome({"status": "failed", "reason": f"invalid_reply: {err}"}, store=False, **common)
            return Outcome({"status": "ok", "value": value, "latency": latency}, store=True, **common)

        cache = self.settings.open_cache()
        with progress_bar(f"reranking ({self.spec})", len({k for k, _ in tasks}), self.progress) as bar:
            state = {"done": 0}

            def tick(done: int, total: int) -> None:
                if done > state["done"]:
                    bar.advance(done - state["done"])
                    state["done"] = done

            batch = run_calls(tasks, one, store=Store(cache, "rerank", self.model, client.endpoint),
                              concurrency=self.settings.concurrency, usable=lambda v: v.get("status") == "ok",
                              redact=client.redact_value, progress=tick,
                              claim_wait=self.settings.claim_wait_seconds)
        price = price_for(self.model, client.endpoint, self.settings.price)
        self.last_usage = batch.usage.to_dict(price)
        self.last_usage["model"] = self.model
        out: List[RerankResult] = []
        if self.mode == "listwise":
            for key, (qi, _, n, _) in tasks:
                v = batch.values[key]
                if v.get("status") != "ok":
                    out.append(RerankResult(None, str(v.get("reason"))))
                else:
                    out.append(RerankResult(tuple(v["value"]), None, v.get("latency")))
            return out
        scores: List[List[Optional[float]]] = [[None] * len(c) for c in candidates]
        reasons: List[List[str]] = [[] for _ in candidates]
        latency: List[float] = [0.0 for _ in candidates]
        for key, (qi, ci, _, _) in tasks:
            v = batch.values[key]
            if v.get("status") == "ok":
                scores[qi][ci] = float(v["value"])
                latency[qi] += float(v.get("latency") or 0.0)
            else:
                reasons[qi].append(str(v.get("reason")))
        for qi in range(len(candidates)):
            if candidates[qi] and all(s is None for s in scores[qi]):
                out.append(RerankResult(None, reasons[qi][0] if reasons[qi] else "failed: no reply"))
            else:
                out.append(RerankResult(tuple(scores[qi]), None, latency[qi]))
        return out


@reranker_family("llm", arg="model", placeholder="MODEL", order=20,
                 forms=(Form("rerank:llm:MODEL",
                             "... with an LLM (listwise, or ?mode=pointwise) through the LLM settings"),),
                 options={"mode": text("listwise | pointwise"), "scale": integer("3"), "max_chars": integer("2000"),
                          "base_url": text("the llm= settings"),
                          "api_key": text("only as a keyword or $OPENAI_API_KEY"),
                          "timeout": number(), "max_retries": integer(), "concurrency": integer(),
                          "temperature": number(), "max_tokens": integer(), "seed": integer()})
def _from_spec(b: Build) -> LLMReranker:
    """The endpoint options override the run's LLM settings (``b.llm``), else :class:`LLMSettings`' defaults."""
    from ragexam.llm.settings import LLMSettings

    opts = dict(b.options)
    mine = {k: opts.pop(k) for k in ("mode", "scale", "max_chars", "progress") if k in opts}
    settings = b.llm.replace(model=b.arg, **opts) if isinstance(b.llm, LLMSettings) else LLMSettings(b.arg, **opts)
    return LLMReranker(b.arg, settings=settings, **mine)
