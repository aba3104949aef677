"""``rerank:http:URL``: the rerank APIs people run, through ragexam's one transport and call cache.

Two request/response shapes (``shape`` option; ``auto`` detects it):

==========  ======================================================  =====================================
shape       request                                                 response
==========  ======================================================  =====================================
``cohere``  ``{"model"?, "query", "documents": [...], "top_n": n}``  ``{"results": [{"index", "relevance_score"}]}``
            (Cohere, Jina, vLLM, Infinity, most hosted APIs)
``tei``     ``{"query", "texts": [...]}``                           ``[{"index", "score"}]``
            (Hugging Face text-embeddings-inference ``/rerank``)
==========  ======================================================  =====================================

``auto`` sends the first question in the ``cohere`` shape and, when the server answers it with HTTP 400 or
422 (it does not know those fields), in the ``tei`` shape; the shape that worked is used for every other
question and recorded in the signature.  Either response shape is accepted whichever was sent.

A reply is checked strictly: every ``index`` an integer within the candidates and given once, every score a
finite number; otherwise the whole question failed (``"malformed: ..."``) and keeps its first-stage order --
never a silent reordering; so does a reply larger than ``max_response_bytes`` (32 MiB after
decompression), nested deeper than 100 levels or holding a lone surrogate (``bad_response``).  Candidates
the reply leaves out are *unjudged* and keep their positions (:mod:`ragexam.retrieval.rerank.base`).
Timeouts (``timeout``: the deadline of one whole request), 429 and 5xx are retried (the LLM layer's policy,
:mod:`ragexam.llm.transport`); 401/403/404 stop the run.  Headers (API keys) come from ``headers=``
(``--header``) only, never from the spec; they are never stored, and a value with a line break is refused
before any request; ``OPENAI_API_KEY`` is never sent here.  Results are cached by (URL, model, query,
candidates): a second run sends nothing.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional

from ragexam.errors import InputError, one_of
from ragexam.retrieval.rerank.base import Reranker, RerankResult
from ragexam.retrieval.registry import Build, Form, integer, number, reranker_family, text
from ragexam.retrieval.service import JSONService, Malformed, ServiceOptions
from ragexam.signature import Signature, quote
from ragexam.types import JsonValue, options_from

__all__ = ["HTTPReranker", "SHAPES"]

SHAPES = ("auto", "cohere", "tei")


def parse_scores(reply: JsonValue, n: int) -> Dict[str, List[Optional[float]]]:
    """``{"scores": [score or None per candidate]}`` from a Cohere/Jina/vLLM or TEI reply for ``n`` candidates;
    :class:`Malformed` when it has the wrong shape, an index out of range or twice, or a score that is not a
    finite number."""
    if isinstance(reply, dict):
        results = reply.get("results", reply.get("data"))
        if not isinstance(results, list):
            raise Malformed(f"the reply has no 'results' list (keys: {', '.join(map(str, reply)) or 'none'})")
    elif isinstance(reply, list):
        results = reply
    else:
        raise Malformed(f"the reply is a {type(reply).__name__}; expected a list or an object with 'results'")
    scores: List[Optional[float]] = [None] * n
    for j, r in enumerate(results):
        if not isinstance(r, dict):
            raise Malformed(f"result {j} is a {type(r).__name__}; expected an object with index and score")
        idx = r.get("index")
        if isinstance(idx, bool) or not isinstance(idx, int):
            raise Malformed(f"result {j} has the index {idx!r}; expected an integer")
        if not 0 <= idx < n:
            raise Malformed(f"result {j} has the index {idx}, outside the {n} candidates")
        if scores[idx] is not None:
            raise Malformed(f"index {idx} is given twice")
        s = r.get("relevance_score", r.get("score"))
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not math.isfinite(float(s)):
            raise Malformed(f"result {j} (index {idx}) has the score {s!r}; expected a finite number")
        scores[idx] = float(s)
    return {"scores": scores}


def _add_usage(total: Dict[str, int], more: Mapping[str, int]) -> None:
    """Add the counts of ``more`` (calls, cached, failed, requests, waits_cut) to ``total``."""
    for k, v in more.items():
        total[k] = total.get(k, 0) + v


class HTTPReranker(Reranker):
    """A rerank endpoint (module docstring).

    :param url: the endpoint, e.g. ``http://localhost:8080/rerank`` or ``https://api.jina.ai/v1/rerank``.
    :param shape: ``auto``, ``cohere`` or ``tei``.
    :param model: sent as ``model`` in the ``cohere`` shape (required by hosted APIs; optional for vLLM).
    :param headers: e.g. ``{"Authorization": "Bearer ..."}``; never stored, printed or part of a cache key.
    :param service: how it is called: timeout, max_retries, backoff, concurrency, cache, cache_dir, progress,
        max_response_bytes (:class:`~ragexam.retrieval.service.ServiceOptions`).
    """

    def __init__(self, url: str, *, shape: str = "auto", model: Optional[str] = None,
                 headers: Optional[Mapping[str, str]] = None, **service: object) -> None:
        where = f"rerank:http:{url}"
        one_of(shape, SHAPES, source=where, field="shape")
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise InputError(f"received {model!r}; expected a model name.", source=where, field="model")
        self.service = JSONService(url, kind="rerank", where=where,
                                   options=options_from(ServiceOptions, dict(service, headers=headers), "HTTPReranker"))
        self.shape = shape
        self.model = model
        self.detected: Optional[str] = None if shape == "auto" else shape
        self.last_usage: Dict[str, Any] = {}

    @property
    def spec(self) -> str:
        return f"rerank:http:{self.service.public_url}"

    @property
    def signature(self) -> Signature:
        shape = self.detected or self.shape
        fields = [("rerank", "http:" + quote(self.service.public_url)), ("shape", shape), ("model", self.model)]
        if self.service.header_names:
            fields.append(("headers", list(self.service.header_names)))
        return Signature(fields, version=False)

    def body(self, query: str, texts: List[str], shape: str) -> Dict[str, Any]:
        if shape == "tei":
            return {"query": query, "texts": list(texts)}
        body: Dict[str, Any] = {"query": query, "documents": list(texts), "top_n": len(texts)}
        if self.model is not None:
            body["model"] = self.model
        return body

    def _key(self, query: str, texts: List[str]) -> str:
        return self.service.key({"model": self.model, "query": query, "candidates": list(texts)})

    def _call(self, idx: List[int], queries: List[str], candidates: List[List[str]], shape: str):
        """Values for the queries ``idx`` sent in ``shape`` (one batch per candidate count: a reply's indexes are
        checked against it), and the usage."""
        by_size: Dict[int, List[int]] = {}
        for i in idx:
            by_size.setdefault(len(candidates[i]), []).append(i)
        values: Dict[int, Dict[str, Any]] = {}
        usage = {"calls": 0, "cached": 0, "failed": 0, "requests": 0}
        for n, group in by_size.items():
            got = self.service.call_many([self.body(queries[i], candidates[i], shape) for i in group],
                                         lambda r, n=n: {**parse_scores(r, n), "shape": shape},
                                         keys=[self._key(queries[i], candidates[i]) for i in group],
                                         description=f"reranking ({self.spec})")
            _add_usage(usage, self.service.last_usage.to_dict())
            values.update(zip(group, got))
        return [values[i] for i in idx], usage

    def rerank(self, queries: List[str], candidates: List[List[str]]) -> List[RerankResult]:
        n = len(queries)
        values: List[Optional[Dict[str, Any]]] = [None] * n
        usage = {"calls": 0, "cached": 0, "failed": 0, "requests": 0}
        todo = list(range(n))
        if self.detected is None and todo:
            first, u = self._call(todo[:1], queries, candidates, "cohere")
            _add_usage(usage, u)
            v = first[0]
            if v.get("status") == "ok":
                self.detected = v.get("shape", "cohere")
            elif str(v.get("reason", "")).startswith("bad_request"):
                first, u = self._call(todo[:1], queries, candidates, "tei")
                _add_usage(usage, u)
                usage["failed"] -= 1  # the cohere probe's 400 is not a failure of the question
                v = first[0]
                if v.get("status") == "ok":
                    self.detected = "tei"
            values[0] = v
            todo = todo[1:]
        if todo:
            rest, u = self._call(todo, queries, candidates, self.detected or "cohere")
            _add_usage(usage, u)
            for i, v in zip(todo, rest):
                values[i] = v
        self.last_usage = usage
        out = []
        for v in values:
            if v is None or v.get("status") != "ok":
                out.append(RerankResult(None, str((v or {}).get("reason") or "failed: no reply")))
            else:
                out.append(RerankResult(tuple(v["scores"]), None, v.get("latency")))
        return out


@reranker_family("http", arg="url", example="http://localhost:8080/rerank", order=10,
                 forms=(Form("rerank:http:URL", "rerank A's top 20 with a Cohere/Jina/vLLM or TEI rerank endpoint"),),
                 options={"shape": text("auto | cohere | tei"), "model": text(), "timeout": number("30"),
                          "max_retries": integer("2"), "backoff": number("0.5"), "concurrency": integer("4"),
                          "max_response_bytes": integer("32 MiB")})
def _from_spec(b: Build) -> HTTPReranker:
    return HTTPReranker(b.arg, headers=b.headers, **b.options)
