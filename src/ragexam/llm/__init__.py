"""ragexam's one LLM layer: every call to a model or an HTTP service goes through here.

========================  ======================================================================
module                    what it holds
========================  ======================================================================
:mod:`.settings`          :class:`LLMSettings` (one endpoint and how to call it; validated once),
                          :func:`resolve_endpoint` (explicit > environment > ``.env``)
:mod:`.dotenv`            the small ``.env`` reader
:mod:`.transport`         :class:`HTTPTransport`: JSON POST with timeouts and the one retry policy,
                          :class:`CallFailed` (kinds), :class:`EndpointError` (401/403/404 stop)
:mod:`.client`            :class:`LLMClient`: OpenAI-compatible chat completions (``response_format``
                          ladder, token log-probabilities on request), embeddings, any JSON POST under the
                          base URL (e.g. ``/rerank``)
:mod:`.logprobs`          reading token log-probabilities: the distribution over allowed values where a
                          JSON value was written
:mod:`.probe`             ``probe``: what an endpoint supports (json_schema, json_object, logprobs,
                          seed), asked once and cached
:mod:`.cache`             :class:`LLMCache`: the content-keyed SQLite call cache, with claims
:mod:`.batch`             :func:`run_calls` (dedupe, cache, resume, concurrency, in-flight sharing
                          between processes, usage) and :func:`plan_calls` (the dry run)
:mod:`.attempts`          :func:`ask`: one call whose reply must parse, asked again with the problem
                          as feedback (a reply cut in a loop: the loop quoted, not a doubled budget)
:mod:`.cost`              token estimates, prices, :class:`Usage`
:mod:`.redact`            :class:`Redactor`: keys out of everything written, never out of what is parsed
:mod:`.replies`           :func:`~ragexam.llm.replies.extract_json_object`: the JSON object in a
                          model's reply
========================  ======================================================================

Users: the judge (:mod:`ragexam.metrics.judge`), answer generation
(:mod:`ragexam.analysis.answers.answering`), OpenAI-compatible embeddings
(:class:`ragexam.retrieval.embedders.OpenAIEmbedder`), the question generator
(:mod:`ragexam.questions`), the rerankers (:mod:`ragexam.retrieval.rerank`: the LLM one's calls,
the cross-encoder's cache, the HTTP one through :mod:`ragexam.retrieval.service`, which also calls a
user's search service).  This package imports only :mod:`ragexam.errors`, :mod:`ragexam.fmt`, :mod:`ragexam._version`,
:mod:`ragexam._lazy` (its names load on first use) and :mod:`ragexam.storage` (and ``httpx`` when a request is sent).  See ``docs/llm.md``.
"""

from ragexam._lazy import by_module, lazy_exports

_LAZY = by_module({
    ".settings": "LLMSettings Endpoint resolve_endpoint public_endpoint",
    ".client": "LLMClient ChatReply EmbeddingReply",
    ".transport": "HTTPTransport RetryPolicy CallFailed EndpointError FAILURE_KINDS",
    ".cache": "LLMCache request_key",
    ".batch": "run_calls plan_calls Outcome Batch PlannedCall CallPlan",
    ".cost": "Usage",
    ".redact": "Redactor",
    ".attempts": "ask Attempted",
    ".probe": "ProbeResult",
    ".logprobs": "TokenLogprob parse_logprobs distribution_at value_offsets",
})

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
