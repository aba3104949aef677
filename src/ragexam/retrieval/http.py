"""A live search service as a pipeline: ``-r http:URL`` POSTs each question and grades the texts it returns.

Request (one per question)::

    POST URL   {"query": "<question>", "top_k": <N>}            (+ ``extra_body`` fields, Python only)

Response: the list of results at ``results_path`` of the reply (``auto``: the reply itself when it is a
list, else the first of ``results``, ``hits``, ``documents``, ``contexts``, ``data``, ``matches`` that
holds a list), best first.  Each result is a string (the text) or an object whose fields are read with
dotted paths:

=================  ===========================================================================
option             meaning (default)
=================  ===========================================================================
query_field        where the question goes in the request (``query``; dotted paths nest)
top_k_field        where the number of results goes (``top_k``; empty: not sent)
top_k              how many results to ask for (default: the run's ``depth``)
results_path       the list in the reply (``auto``, above)
text_field         the text of a result (``auto``: ``text``, ``content``, ``page_content``,
                   ``document``, ``passage``, ``chunk`` -- the first that is a string)
doc_id_field       its source document (``auto``: ``doc_id``, ``document_id``, ``metadata.doc_id``;
                   absent is fine in evidence mode)
id_field           its id in the service (``auto``: ``id``, ``chunk_id``, ``metadata.id``)
score_field        its score (``auto``: ``score``, ``relevance_score``, ``similarity``)
timeout            seconds one request may take in all, reply included (30); max_retries (2),
                   backoff (0.5): the retry policy
max_response_bytes the largest reply accepted, after decompression (32 MiB)
concurrency        requests in flight (4); cache (true), cache_dir, progress (true)
=================  ===========================================================================

Headers (``Authorization``, API keys) are given with ``headers=`` (``--header 'Name: value'`` on the
command line), never in the spec string: the spec is printed and stored.  They are never stored,
printed or part of a cache key, and their values are replaced by ``[redacted]`` in the returned texts
too (they are stored in the run folder); a value with a line break is refused before any request.

Results are cached by (URL, request body) in the call cache, so a second run sends nothing.  A question
the service failed on -- HTTP 429/5xx/timeouts after the retries, a 400, a reply that is not JSON, one
larger than ``max_response_bytes``, nested deeper than 100 levels or holding a lone surrogate, or one of
the wrong shape (no list where ``results_path`` says, a result without text) -- is a failure of that
question (``"timeout: ..."``, ``"malformed: ..."``), graded as a miss and counted
(:mod:`ragexam.retrieval.texts`); HTTP 401/403/404 stop the run (the URL or the key is wrong).
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam.errors import InputError, integer_in
from ragexam.retrieval.service import JSONService, Malformed, ServiceOptions, json_path, set_path
from ragexam.retrieval.texts import Retrieval, TextRetriever
from ragexam.retrieval.registry import Build, Form, integer, number, retriever_family, text
from ragexam.signature import Signature, quote
from ragexam.types import JsonValue, options_from

__all__ = ["HTTPRetriever", "RESULT_LISTS", "TEXT_FIELDS", "DOC_ID_FIELDS", "ID_FIELDS", "SCORE_FIELDS"]

RESULT_LISTS = ("results", "hits", "documents", "contexts", "data", "matches")
TEXT_FIELDS = ("text", "content", "page_content", "document", "passage", "chunk")
DOC_ID_FIELDS = ("doc_id", "document_id", "metadata.doc_id")
ID_FIELDS = ("id", "chunk_id", "metadata.id")
SCORE_FIELDS = ("score", "relevance_score", "similarity")


def _first(obj: Dict[str, Any], paths: Sequence[str], want) -> Any:
    for p in paths:
        try:
            v = json_path(obj, p)
        except KeyError:
            continue
        if want(v):
            return v
    return None


class HTTPRetriever(TextRetriever):
    """A search service behind ``URL`` (module docstring); ``headers`` and the other keywords (``service``: timeout,
    max_retries, backoff, concurrency, cache, cache_dir, progress, max_response_bytes) are how it is called
    (:class:`~ragexam.retrieval.service.ServiceOptions`)."""

    def __init__(self, url: str, *, headers: Optional[Mapping[str, str]] = None, query_field: str = "query",
                 top_k_field: str = "top_k", top_k: Optional[int] = None, results_path: str = "auto",
                 text_field: str = "auto", doc_id_field: str = "auto", id_field: str = "auto",
                 score_field: str = "auto", extra_body: Optional[Mapping[str, object]] = None,
                 **service: object) -> None:
        where = f"http:{url}"
        for name, value in (("query_field", query_field), ("results_path", results_path),
                            ("text_field", text_field), ("doc_id_field", doc_id_field), ("id_field", id_field),
                            ("score_field", score_field)):
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"received {value!r}; expected a field name or dotted path.", source=where,
                                 field=name)
        if not isinstance(top_k_field, str):
            raise InputError(f"received {top_k_field!r}; expected a field name (or empty: not sent).", source=where,
                             field="top_k_field")
        if top_k is not None:
            integer_in(top_k, 1, source=where, field="top_k")
        if extra_body is not None and not isinstance(extra_body, Mapping):
            raise InputError(f"received a {type(extra_body).__name__}; expected a JSON object.", source=where,
                             field="extra_body")
        self.service = JSONService(url, kind="retrieve", where=where,
                                   options=options_from(ServiceOptions, dict(service, headers=headers), "HTTPRetriever"))
        self.query_field = query_field.strip()
        self.top_k_field = top_k_field.strip()
        self.top_k = top_k
        self.results_path = results_path.strip()
        self.text_field = text_field.strip()
        self.doc_id_field = doc_id_field.strip()
        self.id_field = id_field.strip()
        self.score_field = score_field.strip()
        self.extra_body = dict(extra_body or {})
        self.last_usage = self.service.last_usage

    @property
    def url(self) -> str:
        return self.service.url

    @property
    def spec(self) -> str:
        return f"http:{self.service.public_url}"

    def _options(self) -> List[Tuple[str, str]]:
        defaults = {"query_field": "query", "top_k_field": "top_k", "results_path": "auto", "text_field": "auto",
                    "doc_id_field": "auto", "id_field": "auto", "score_field": "auto"}
        return [(k, quote(getattr(self, k))) for k in defaults]

    @property
    def signature(self) -> Signature:
        """``http:<url>|<request and response fields>|top_k:<N or depth>[|headers:<names>]``: what decides the
        results (not timeouts, retries or concurrency; header names only, never values)."""
        fields = [("http", quote(self.service.public_url)), *self._options(),
                  ("top_k", self.top_k if self.top_k is not None else "depth")]
        if self.extra_body:
            fields.append(("extra_body", sorted(self.extra_body)))
        if self.service.header_names:
            fields.append(("headers", list(self.service.header_names)))
        return Signature(fields, version=False)

    def body(self, query: str, top_n: int) -> Dict[str, Any]:
        """The request body for ``query``."""
        body: Dict[str, Any] = dict(self.extra_body)
        set_path(body, self.query_field, query)
        if self.top_k_field:
            set_path(body, self.top_k_field, self.top_k if self.top_k is not None else top_n)
        return body

    def parse(self, reply: JsonValue) -> Dict[str, JsonValue]:
        """``{"items": [{"text", "doc_id", "id", "score"}, ...]}`` from a reply; :class:`Malformed` if it has the
        wrong shape."""
        if self.results_path == "auto":
            if isinstance(reply, list):
                results = reply
            elif isinstance(reply, dict):
                results = next((reply[k] for k in RESULT_LISTS if isinstance(reply.get(k), list)), None)
                if results is None:
                    raise Malformed(f"the reply has no list under {', '.join(RESULT_LISTS)} (keys: "
                                    f"{', '.join(map(str, reply)) or 'none'}); set results_path")
            else:
                raise Malformed(f"the reply is a {type(reply).__name__}; expected a list of results or an object "
                                "holding one")
        else:
            try:
                results = json_path(reply, self.results_path)
            except KeyError as err:
                raise Malformed(f"the reply has no {self.results_path!r} (missing {err.args[0]!r})") from None
            if not isinstance(results, list):
                raise Malformed(f"{self.results_path!r} is a {type(results).__name__}; expected a list")
        items = []
        for i, r in enumerate(results):
            if isinstance(r, str):
                if not r.strip():
                    raise Malformed(f"result {i} is an empty text")
                items.append({"text": r, "doc_id": None, "id": None, "score": None})
                continue
            if not isinstance(r, dict):
                raise Malformed(f"result {i} is a {type(r).__name__}; expected a text or an object")
            text = self._field(r, self.text_field, TEXT_FIELDS, lambda v: isinstance(v, str))
            if not isinstance(text, str) or not text.strip():
                keys = ", ".join(map(str, r)) or "none"
                raise Malformed(f"result {i} has no text under "
                                f"{self.text_field if self.text_field != 'auto' else '/'.join(TEXT_FIELDS)} "
                                f"(keys: {keys}); set text_field")
            doc_id = self._field(r, self.doc_id_field, DOC_ID_FIELDS, lambda v: isinstance(v, (str, int)))
            ident = self._field(r, self.id_field, ID_FIELDS, lambda v: isinstance(v, (str, int)))
            score = self._field(r, self.score_field, SCORE_FIELDS,
                                lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
            if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                                      or score != score or score in (float("inf"), float("-inf"))):
                raise Malformed(f"result {i} has the score {score!r}; expected a finite number")
            items.append({"text": text, "doc_id": None if doc_id is None else str(doc_id),
                          "id": None if ident is None else str(ident),
                          "score": None if score is None else float(score)})
        return {"items": items}

    @staticmethod
    def _field(r: Dict[str, Any], path: str, auto: Sequence[str], want) -> Any:
        if path == "auto":
            return _first(r, auto, want)
        try:
            return json_path(r, path)
        except KeyError:
            return None

    def retrieve(self, queries: List[str], top_n: int, query_ids: Optional[List[str]] = None) -> List[Retrieval]:
        from ragexam.data.retrieved import RetrievedItem

        bodies = [self.body(q, top_n) for q in queries]
        values = self.service.call_many(bodies, self.parse, description=f"searching {self.service.public_url}")
        self.last_usage = self.service.last_usage
        out = []
        for v in values:
            if v.get("status") != "ok":
                out.append(Retrieval((), str(v.get("reason") or "failed: no reason given")))
                continue
            items = tuple(RetrievedItem(x["text"], x.get("doc_id"), x.get("id"), x.get("score"))
                          for x in v["items"][:top_n])
            out.append(Retrieval(items, None, v.get("latency")))
        return out


@retriever_family("http", arg="url", member=False, example="http://localhost:8000/search", order=40,
                  forms=(Form("http:URL", 'your search service: POST {"query", "top_k"}, grade the texts it returns'),),
                  options={"query_field": text("query"), "top_k_field": text("top_k"),
                           "top_k": integer("the run's depth"), "results_path": text(), "text_field": text(), "doc_id_field": text(), "id_field": text(),
                           "score_field": text("auto"), "timeout": number("30: the deadline of one request"),
                           "max_retries": integer("2"), "backoff": number("0.5"), "concurrency": integer("4"),
                           "max_response_bytes": integer("32 MiB")})
def _from_spec(b: Build) -> HTTPRetriever:
    """``headers`` come from the run (``--header``), never from the spec."""
    return HTTPRetriever(b.arg, headers=b.headers, **b.options)
