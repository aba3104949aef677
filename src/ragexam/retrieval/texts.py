"""Pipelines that return texts: the interface of every retriever ragexam did not build.

ragexam's own retrievers (:class:`ragexam.retrieval.base.Retriever`) index ragexam's chunks and return
chunk ids.  Everything else -- a user's search service (:class:`~ragexam.retrieval.http.HTTPRetriever`),
a LangChain or LlamaIndex retriever (:mod:`~ragexam.retrieval.langchain_adapter`,
:mod:`~ragexam.retrieval.llamaindex_adapter`), a results file (:class:`ResultsRetriever`) -- chunks
the documents its own way and returns **texts**.  Such a *text retriever* has::

    spec        a label (also the pipeline's name in tables)
    signature   every setting that changes what it returns, "key:value|key:value"
    retrieve(queries, top_n, query_ids=None) -> [Retrieval, ...]     one per query, in order

A :class:`Retrieval` is the ranked :class:`~ragexam.data.retrieved.RetrievedItem` list of one question
(best first, at most ``top_n``), or -- when the system failed for that question (a timeout, an HTTP
500 after the retries, a malformed reply, a question the results file lacks) -- an empty list with a
``failure`` reason ``"kind: detail"``.  ragexam grades a failed question as retrieving nothing (a miss)
and counts and lists it (``unretrieved``), so a pipeline is never scored on fewer questions than
another one (every comparison stays paired) and never silently.

Any object with ``retrieve`` (and optionally ``spec``/``signature``) can be passed to
:func:`ragexam.run`; :func:`check_retrievals` validates what it returned.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam.data.retrieved import RetrievedItem, RetrievedSet, item_from_value
from ragexam import fmt
from ragexam.errors import InputError
from ragexam.retrieval.base import Component
from ragexam.signature import Signature, quote

__all__ = ["Retrieval", "TextRetriever", "ResultsRetriever", "is_text_retriever", "call_retrieve", "check_retrievals",
           "failure_kind", "summarize_failures", "latency_summary"]


@dataclass(frozen=True)
class Retrieval:
    """One question's ranked texts (``items``, best first), or the ``failure`` (``"kind: detail"``) that left it
    without any; ``latency`` is the seconds the system took, when measured."""

    items: Tuple[RetrievedItem, ...] = ()
    failure: Optional[str] = None
    latency: Optional[float] = None


def failure_kind(reason: str) -> str:
    """The kind of a failure reason (``"timeout: read timed out"`` -> ``"timeout"``)."""
    return reason.split(":", 1)[0].strip() or "failed"


class TextRetriever(Component):
    """Base class of text retrievers (module docstring); its ``spec`` is a label, the pipeline's name in tables
    (e.g. ``http:http://localhost:8000/search``)."""

    @abc.abstractmethod
    def retrieve(self, queries: List[str], top_n: int, query_ids: Optional[List[str]] = None) -> List[Retrieval]:
        """One :class:`Retrieval` per query, in order, each with at most ``top_n`` items."""

    def _per_query(self, queries: List[str], top_n: int, query_ids: Optional[List[str]], one) -> List[Retrieval]:
        """``retrieve`` for an in-process pipeline: check the arguments, then ``one(query, where, top_n)`` gives
        each query's items (``where`` names the question in messages)."""
        from ragexam.retrieval.base import check_queries, check_top_n

        queries = check_queries(queries, self.spec)
        top_n = check_top_n(top_n, self.spec)
        return [Retrieval(tuple(one(q, f"question {query_ids[i] if query_ids else i}", top_n)))
                for i, q in enumerate(queries)]


class WrappedRetriever(TextRetriever):
    """A framework's retriever object as a text retriever (LangChain, LlamaIndex): the wrapped ``obj``, its
    ``name`` (default: its class name) and the metadata key of a returned passage's document id
    (``doc_id_key``); its ``spec`` is ``<framework>:<name>``."""

    framework: ClassVar[str] = ""

    def __init__(self, obj: object, name: Optional[str], doc_id_key: str) -> None:
        self.obj = obj
        self.name = name or type(obj).__name__
        self.doc_id_key = doc_id_key

    @property
    def spec(self) -> str:
        return f"{self.framework}:{self.name}"

    def _metadata_doc_id(self, metadata: object) -> object:
        """``metadata[doc_id_key]`` of a returned passage (``None``: absent, or no metadata dict)."""
        return metadata.get(self.doc_id_key) if isinstance(metadata, dict) else None

    @staticmethod
    def _retrieved(text: str, doc_id: object, ident: object, score: Optional[float]) -> RetrievedItem:
        """The returned passage, its document id and its own id as text (``None`` stays ``None``)."""
        return RetrievedItem(text, None if doc_id is None else str(doc_id), None if ident is None else str(ident),
                             score)


def is_text_retriever(obj: object) -> bool:
    """True for an object with ``retrieve`` that is not a chunk retriever (``index`` and ``search``)."""
    if callable(getattr(obj, "index", None)) and callable(getattr(obj, "search", None)):
        return False
    return callable(getattr(obj, "retrieve", None))


class ResultsRetriever(TextRetriever):
    """One pipeline of a results file (:func:`ragexam.data.retrieved.load_retrieved`) as a text retriever:
    ``retrieve`` looks the questions up by id (``query_ids`` is required).  A question the file lacks is a
    failure ``"missing: no line for question … in <file>"``."""

    def __init__(self, results: RetrievedSet) -> None:
        self.results = results

    @property
    def spec(self) -> str:
        return self.results.pipeline

    @property
    def signature(self) -> Signature:
        from pathlib import Path

        return Signature([("results", quote(Path(self.results.source).name)),
                          ("pipeline", quote(self.results.pipeline))], version=False)

    def retrieve(self, queries: List[str], top_n: int, query_ids: Optional[List[str]] = None) -> List[Retrieval]:
        if query_ids is None or len(query_ids) != len(queries):
            raise InputError("a results file is looked up by question id: pass query_ids (one per query).",
                             source=self.results.source, field="query_ids")
        out = []
        for qid in query_ids:
            items = self.results.lists.get(qid)
            if items is None:
                out.append(Retrieval((), f"missing: no line for this question in {self.results.source}"))
            else:
                out.append(Retrieval(tuple(items[:top_n])))
        return out


def _as_item(value: object, where: str, label: str) -> RetrievedItem:
    if isinstance(value, RetrievedItem):  # checked as the same item written in a results file would be
        return item_from_value(value.to_dict() if isinstance(value.text, str) else {"text": value.text},
                               source=label, where=where)
    if isinstance(value, Mapping):
        return item_from_value(dict(value), source=label, where=where)
    if isinstance(value, str):
        return item_from_value(value, source=label, where=where)
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:59] + "…"
    raise InputError(f"received {shown} (a {type(value).__name__}); expected a RetrievedItem, a string or a "
                     "mapping with 'text'.", source=label, field=where)


def call_retrieve(retriever: Any, queries: List[str], top_n: int, query_ids: Optional[List[str]]) -> object:
    """``retriever.retrieve(queries, top_n, query_ids)``, or ``retrieve(queries, top_n)`` when its ``retrieve``
    takes no third argument (the two-argument form docs/run.md shows is as valid as the full one)."""
    import inspect

    method = retriever.retrieve
    try:
        params = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: give it every argument
        return method(queries, top_n, query_ids)
    takes_ids = any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "query_ids" for p in params) or \
        sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) >= 3
    return method(queries, top_n, query_ids) if takes_ids else method(queries, top_n)


def _question(qi: int, query_ids: Optional[Sequence[str]]) -> str:
    """How a message names the ``qi``-th question: by its id when known."""
    return f"question {query_ids[qi]!r}" if query_ids is not None and qi < len(query_ids) else f"question {qi}"


def _checked(r: Retrieval, where: str, label: str, top_n: int) -> Retrieval:
    """One :class:`Retrieval` checked: its items, a failure only without items (a failed question retrieved
    nothing: graded as a miss and counted), a latency of ``None`` or a finite number of seconds >= 0."""
    from ragexam.errors import number_in

    at = f"{label}, {where}"
    items = tuple(_as_item(x, f"item {i}", at) for i, x in enumerate(r.items))
    if r.failure is not None:
        if not isinstance(r.failure, str) or not r.failure.strip():
            raise InputError(f"received {r.failure!r}; expected a reason string (\"kind: detail\", e.g. "
                             "\"timeout: no reply in 10 s\").", source=at, field="failure")
        if items:
            raise InputError(f"received {fmt.plural(len(items), 'item')} and the failure {r.failure!r}; a failed "
                             "question retrieved nothing. Fix: return the items without a failure (they are "
                             "graded), or the failure without items (a miss, counted as unretrieved).", source=at,
                             field="failure")
    latency = None if r.latency is None else number_in(r.latency, 0, source=at, field="latency",
                                                       what="a number of seconds")
    return Retrieval(items[:top_n], r.failure, latency)


def check_retrievals(value: object, n: int, label: str, top_n: int,
                     query_ids: Optional[Sequence[str]] = None) -> List[Retrieval]:
    """What a text retriever's ``retrieve`` returned, checked: one entry per query, each a :class:`Retrieval`
    (or a plain list of items / strings / ``{"text": ...}`` mappings); at most ``top_n`` items are kept
    (a longer list is cut to the retrieval depth, like any retriever's).  Messages name a question by its id
    (``query_ids``) when given."""
    if not isinstance(value, (list, tuple)) or len(value) != n:
        got = len(value) if isinstance(value, (list, tuple)) else type(value).__name__
        raise InputError(f"retrieve() returned {got} results for {n} questions; expected one per question, in "
                         "order.", source=f"retriever {label}")
    out: List[Retrieval] = []
    for qi, r in enumerate(value):
        where = _question(qi, query_ids)
        if isinstance(r, Retrieval):
            out.append(_checked(r, where, f"retriever {label}", top_n))
        elif isinstance(r, (list, tuple)):
            out.append(_checked(Retrieval(tuple(r)), where, f"retriever {label}", top_n))
        else:
            raise InputError(f"{where}: received {'None' if r is None else 'a ' + type(r).__name__}; expected a "
                             "Retrieval or a list of items.", source=f"retriever {label}")
    return out


def summarize_failures(reasons: Mapping[str, str]) -> Dict[str, Any]:
    """``{"n", "by_kind": {kind: n}, "questions": [{"query_id", "reason"}]}`` of ``{query_id: failure reason}``."""
    failed = [(q, r) for q, r in reasons.items() if r]
    by_kind: Dict[str, int] = {}
    for _, reason in failed:
        k = failure_kind(str(reason))
        by_kind[k] = by_kind.get(k, 0) + 1
    return {"n": len(failed), "by_kind": dict(sorted(by_kind.items())),
            "questions": [{"query_id": q, "reason": str(reason)} for q, reason in failed]}


def latency_summary(latencies: Sequence[float]) -> Optional[Dict[str, Any]]:
    """``{"n", "mean", "median", "p95", "max"}`` seconds of the measured latencies, or None."""
    xs = sorted(float(x) for x in latencies if x is not None)
    if not xs:
        return None
    import math
    import statistics

    p95 = xs[max(0, min(len(xs) - 1, int(math.ceil(0.95 * len(xs))) - 1))]  # nearest rank
    return {"n": len(xs), "mean": sum(xs) / len(xs), "median": statistics.median(xs), "p95": p95, "max": xs[-1]}
