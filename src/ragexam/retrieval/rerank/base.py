"""The rerank stage: ``RETRIEVER>RERANKER`` reorders the first stage's top ``top`` candidates.

A **reranker** scores candidate texts against a query (:class:`Reranker`: ``rerank(queries, candidates)``
returns one :class:`RerankResult` per query: a score per candidate, ``None`` for a candidate it could not
judge, or a ``failure`` for the whole query).  A **stage** wraps any first stage and a reranker:

* :class:`RerankedRetriever` over a ragexam retriever (``index``/``search``: chunk ids) -- it is itself a
  chunk retriever, so it works with every chunker and relevance mode and is judged by the location rule;
* :class:`RerankedTextRetriever` over a pipeline that returns texts (a results file, ``http:``, LangChain,
  LlamaIndex) -- itself a text retriever.

What the stage does for one query (:func:`rerank_order`):

1. the first stage retrieves ``max(depth, top)`` items; its top ``top`` are the *candidates*;
2. the reranker scores them; the final ranking is the candidates reordered -- judged candidates by score,
   highest first, ties in first-stage order -- followed by the first stage's items below ``top`` in their
   order (so the stage can only move what the first stage found into the top ``top``, and a cutoff deeper
   than ``top`` sees the same items);
3. **unjudged candidates keep their first-stage positions** (a reply that skipped them, an LLM reply that
   did not parse for that candidate): the judged ones are sorted into the remaining positions.  When the
   whole query failed (HTTP errors after the retries, a malformed reply, wrong indexes), the first-stage
   order is kept as it is.  Both are counted (``status`` per query in :attr:`last_report`), never silent.

The stage's scores are rank-derived (``n - rank + 1``: the reranker's scores and the first stage's are not
comparable); the reranker's own scores are in :attr:`last_report`.  Its ``signature`` holds both stages:
``<first-stage signature>>>rerank:<reranker signature>|top:<top>``.  :attr:`last_report` also keeps the
first stage's ranking, so a run grades the first stage without retrieving twice (the lift, the recall
ceiling: :mod:`ragexam.analysis.exam.run`).

``top`` defaults to :data:`DEFAULT_TOP` (20): the usual number of candidates handed to a cross-encoder or
an LLM reranker -- twice the deepest default cutoff (10), so the reranker has room to pull a relevant
candidate into the top 10, while an LLM reranker's prompt (listwise) stays short and its cost (pointwise:
one call per candidate) bounded.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ragexam.errors import InputError, integer_in
from ragexam.retrieval.base import Component
from ragexam.signature import Signature
from ragexam.types import RetrieverObject, TextRetrieverObject

#: what a rerank stage reranks: a retriever over ragexam's chunks, or one that returns texts
FirstStage = Union[RetrieverObject, TextRetrieverObject]

__all__ = ["DEFAULT_TOP", "Reranker", "RerankResult", "RerankReport", "rerank_order", "RerankedRetriever",
           "RerankedTextRetriever", "rerank_stage"]

#: candidates reranked per query when ``top`` is not given (module docstring).
DEFAULT_TOP = 20


@dataclass(frozen=True)
class RerankResult:
    """A reranker's answer for one query: ``scores[i]`` for candidate ``i`` (``None``: not judged), or a
    ``failure`` (``"kind: detail"``) for the whole query; ``latency`` seconds when measured."""

    scores: Optional[Tuple[Optional[float], ...]] = None
    failure: Optional[str] = None
    latency: Optional[float] = None


class Reranker(Component):
    """A reranker: ``spec`` (``rerank:...``), ``signature`` (every setting that changes its scores),
    ``rerank(queries, candidates)``; ``last_usage`` after a call (calls, cached, requests, tokens, cost: a
    JSON-ready dict)."""

    last_usage: Dict[str, Any] = {}

    @abc.abstractmethod
    def rerank(self, queries: List[str], candidates: List[List[str]]) -> List[RerankResult]:
        """One :class:`RerankResult` per query; ``candidates[i]`` are query ``i``'s texts in first-stage order."""


def rerank_order(n: int, result: RerankResult) -> Tuple[List[int], str]:
    """The new order of ``n`` candidates (indexes into the first-stage order) and the query's status:
    ``"reranked"``, ``"partial"`` (some candidates unjudged: they keep their positions) or ``"failed"`` (the
    first-stage order is kept).  See the module docstring."""
    if result.failure is not None or result.scores is None:
        return list(range(n)), "failed"
    scores = list(result.scores)
    if len(scores) != n:
        return list(range(n)), "failed"
    judged = [i for i in range(n) if scores[i] is not None]
    if not judged:
        return list(range(n)), "failed"
    ranked = sorted(judged, key=lambda i: (-float(scores[i]), i))  # type: ignore[arg-type]
    slots = iter(ranked)
    order = [i if scores[i] is None else next(slots) for i in range(n)]
    return order, ("reranked" if len(judged) == n else "partial")


@dataclass
class RerankReport:
    """What the last ``search``/``retrieve`` of a stage did, per query (in query order): the first stage's
    ranking (``first_stage``: chunk hits, or :class:`~ragexam.retrieval.texts.Retrieval` objects), the
    ``status`` (``reranked``, ``partial``, ``failed``, ``skipped``: nothing to rerank), the ``reason`` of a
    failure, the unjudged candidates, the reranker's ``scores`` and ``latency``, and the ``usage``."""

    top: int
    first_stage: List[Any] = field(default_factory=list)
    status: List[str] = field(default_factory=list)
    reasons: List[Optional[str]] = field(default_factory=list)
    unjudged: List[int] = field(default_factory=list)
    scores: List[Optional[Tuple[Optional[float], ...]]] = field(default_factory=list)
    latency: List[Optional[float]] = field(default_factory=list)
    usage: Dict[str, Any] = field(default_factory=dict)


def _check_top(top: object) -> int:
    return integer_in(top, 1, source="rerank stage", field="top",
                      what="the number of first-stage candidates to rerank")


def _check_results(results: object, n: int, reranker: Reranker, sizes: Sequence[int]) -> List[RerankResult]:
    if not isinstance(results, list) or len(results) != n:
        raise InputError(f"rerank() returned {len(results) if isinstance(results, list) else type(results).__name__}"
                         f" results for {n} queries; expected one per query.", source=reranker.spec)
    out = []
    for r, size in zip(results, sizes):
        if not isinstance(r, RerankResult):
            raise InputError(f"rerank() returned a {type(r).__name__}; expected RerankResult.", source=reranker.spec)
        if r.failure is None and r.scores is not None and len(r.scores) != size:
            r = RerankResult(None, f"malformed: {len(r.scores)} scores for {size} candidates", r.latency)
        out.append(r)
    return out


class _Stage:
    """What both stage kinds share: the reranker call over the candidates, and the report."""

    def __init__(self, first: FirstStage, reranker: Reranker, top: int = DEFAULT_TOP) -> None:
        if not isinstance(reranker, Reranker):
            raise InputError(f"received a {type(reranker).__name__}; expected a Reranker (rerank:http:URL, "
                             "rerank:llm:MODEL, rerank:st:MODEL, rerank:dense).", source="rerank stage",
                             field="reranker")
        self.first = first
        self.reranker = reranker
        self.top = _check_top(top)
        self.last_report: Optional[RerankReport] = None

    @property
    def spec(self) -> str:
        first = getattr(self.first, "spec", None) or type(self.first).__name__
        rs = self.reranker.spec
        return f"{first}>{rs}" + (f"{'&' if '?' in rs else '?'}top={self.top}" if self.top != DEFAULT_TOP else "")

    @property
    def signature(self) -> Signature:
        first = getattr(self.first, "signature", None) or f"custom:{type(self.first).__name__}"
        return Signature.of(first).then(self.reranker.signature, join=">>").extend({"top": self.top})

    @property
    def first_spec(self) -> str:
        return getattr(self.first, "spec", None) or type(self.first).__name__

    def _rerank(self, queries: List[str], candidates: List[List[str]]) -> Tuple[List[List[int]], RerankReport]:
        report = RerankReport(self.top)
        todo = [i for i, c in enumerate(candidates) if c]
        results: Dict[int, RerankResult] = {}
        if todo:
            got = self.reranker.rerank([queries[i] for i in todo], [candidates[i] for i in todo])
            for i, r in zip(todo, _check_results(got, len(todo), self.reranker, [len(candidates[i]) for i in todo])):
                results[i] = r
        orders = []
        for i, cands in enumerate(candidates):
            r = results.get(i)
            if r is None:
                orders.append([])
                report.status.append("skipped")
                report.reasons.append(None)
                report.unjudged.append(0)
                report.scores.append(None)
                report.latency.append(None)
                continue
            order, status = rerank_order(len(cands), r)
            orders.append(order)
            report.status.append(status)
            report.reasons.append(r.failure if status == "failed" else None)
            report.unjudged.append(len(cands) if status == "failed" else
                                   sum(1 for s in (r.scores or ()) if s is None))
            report.scores.append(r.scores)
            report.latency.append(r.latency)
        report.usage = dict(getattr(self.reranker, "last_usage", {}) or {})
        return orders, report


class RerankedRetriever(_Stage):
    """A ragexam retriever (``index``/``search``) followed by a reranker: itself a chunk retriever."""

    def index(self, ids: List[str], texts: List[str]) -> "RerankedRetriever":
        self.first.index(ids, texts)
        self._texts = dict(zip(ids, texts))
        return self

    def search(self, queries: List[str], top_n: int) -> List[List[Tuple[str, float]]]:
        from ragexam.retrieval.base import check_queries, check_top_n

        if not hasattr(self, "_texts"):
            from ragexam.errors import RagexamError

            raise RagexamError(f"retriever '{self.spec}': search() was called before index().")
        queries = check_queries(queries, self.spec)
        top_n = check_top_n(top_n, self.spec)
        first = self.first.search(queries, max(top_n, self.top))
        candidates = []
        for hits in first:
            cands = []
            for cid, _ in hits[: self.top]:
                if cid not in self._texts:
                    raise InputError(f"the first stage returned chunk id {cid!r}, which was not indexed.",
                                     source=self.spec)
                cands.append(self._texts[cid])
            candidates.append(cands)
        orders, report = self._rerank(queries, candidates)
        out = []
        for hits, order in zip(first, orders):
            ranked = [hits[i][0] for i in order] + [c for c, _ in hits[len(order):]]
            ranked = ranked[:top_n]
            out.append([(cid, float(len(ranked) - r)) for r, cid in enumerate(ranked)])
        report.first_stage = [h[:top_n] for h in first]
        self.last_report = report
        return out


class RerankedTextRetriever(_Stage):
    """A pipeline that returns texts followed by a reranker: itself a text retriever.  A question the first
    stage failed on stays failed (nothing to rerank)."""

    def retrieve(self, queries: List[str], top_n: int, query_ids: Optional[List[str]] = None):
        from ragexam.retrieval.base import check_top_n
        from ragexam.retrieval.texts import Retrieval, call_retrieve, check_retrievals

        top_n = check_top_n(top_n, self.spec)
        depth = max(top_n, self.top)
        first = check_retrievals(call_retrieve(self.first, list(queries), depth, query_ids), len(queries),
                                 self.first_spec, depth, query_ids)
        candidates = [[it.text for it in r.items[: self.top]] for r in first]
        orders, report = self._rerank(list(queries), candidates)
        out = []
        from dataclasses import replace

        for r, order, scores in zip(first, orders, report.scores):
            head = [replace(r.items[i], score=(None if scores is None or scores[i] is None else float(scores[i])))
                    for i in order]
            tail = [replace(it, score=None) for it in r.items[len(order):]]
            out.append(Retrieval(tuple((head + tail)[:top_n]), r.failure, r.latency))
        report.first_stage = [Retrieval(r.items[:top_n], r.failure, r.latency) for r in first]
        self.last_report = report
        return out


def rerank_stage(first: FirstStage, reranker: Reranker, top: int = DEFAULT_TOP) -> "_Stage":
    """The stage for ``first``: :class:`RerankedTextRetriever` when it returns texts, else
    :class:`RerankedRetriever`."""
    from ragexam.retrieval.texts import is_text_retriever

    if is_text_retriever(first):
        return RerankedTextRetriever(first, reranker, top)
    if callable(getattr(first, "index", None)) and callable(getattr(first, "search", None)):
        return RerankedRetriever(first, reranker, top)
    raise InputError(f"received a {type(first).__name__} as the first stage; expected a retriever (index/search "
                     "or retrieve).", source="rerank stage", field="first")
