"""Calling a user's JSON service (a search endpoint, a rerank endpoint) many times: concurrent, retried,
cached, with progress and latency -- the one place the HTTP retriever and the HTTP reranker share.

Every request goes through the LLM layer's transport (:class:`ragexam.llm.transport.HTTPTransport`: one
retry policy, timeouts, 401/403/404 stop the run) and its batch runner (:func:`ragexam.llm.batch.run_calls`:
de-duplication, the content-keyed call cache ``llm-cache.sqlite3``, concurrency, two processes never pay
twice).  What this module adds:

* **headers** (e.g. ``Authorization``) are sent with every request and never stored, printed or hashed:
  their values are secrets of the transport's redactor, so an endpoint that echoes one back is redacted
  in every error message and in every text of a parsed reply (which is cached, stored in the run folder and
  shown).  A header value holding a line break (CR/LF) is refused before any request
  (:func:`ragexam.llm.transport.check_header`);
* a **cache key** of everything that determines the reply and nothing else: a format tag, the kind of
  call, the URL without credentials, and the request body (:meth:`JSONService.key`);
* each reply is **parsed** by the caller's function; a reply of the wrong shape is a per-request failure
  ``"malformed: what is wrong"`` without retry (a mapping mistake does not pass by asking again), a
  transport failure after the retries is ``"<kind>: <message>"`` (``timeout``, ``server_error``, ...).
  Only successes are cached, so the next run asks again for the failures;
* the **latency** of each successful request (seconds, retries included) is kept with its result, so a
  cached result reports the latency measured when it was called.

The transport's limits hold for every request: ``timeout`` is the deadline of one whole request,
``max_response_bytes`` caps a reply after decompression, a reply nested too deep is a failure of that request
(``bad_response``), and a ``Retry-After`` longer than the wait cap is cut and said
(:mod:`ragexam.llm.transport`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ragexam.errors import InputError, integer_in, number_in
from ragexam.types import JsonValue, PathLike

__all__ = ["JSONService", "ServiceOptions", "Malformed", "json_path", "ServiceUsage"]


class Malformed(Exception):
    """A reply of the wrong shape (raised by a parse function)."""


def json_path(obj: JsonValue, path: str) -> JsonValue:
    """The value at a dotted ``path`` (``"data.hits"``; a number indexes a list) of ``obj``; ``KeyError`` when a
    step is absent."""
    cur = obj
    for step in path.split("."):
        if isinstance(cur, dict) and step in cur:
            cur = cur[step]
        elif isinstance(cur, list) and step.lstrip("-").isdigit() and -len(cur) <= int(step) < len(cur):
            cur = cur[int(step)]
        else:
            raise KeyError(step)
    return cur


def set_path(obj: Dict[str, JsonValue], path: str, value: JsonValue) -> None:
    """Set the dotted ``path`` of ``obj`` to ``value``, creating objects on the way."""
    steps = path.split(".")
    cur = obj
    for step in steps[:-1]:
        nxt = cur.get(step)
        if not isinstance(nxt, dict):
            nxt = cur[step] = {}
        cur = nxt
    cur[steps[-1]] = value


@dataclass
class ServiceUsage:
    """What one :meth:`JSONService.call_many` did: ``calls`` made now, ``cached`` results read, ``failed``,
    HTTP ``requests`` (retries included), ``waits_cut``: waits the service asked for (``Retry-After``) that
    were cut to the wait cap."""

    calls: int = 0
    cached: int = 0
    failed: int = 0
    requests: int = 0
    waits_cut: int = 0

    def to_dict(self) -> Dict[str, int]:
        out = {"calls": self.calls, "cached": self.cached, "failed": self.failed, "requests": self.requests}
        if self.waits_cut:
            out["waits_cut"] = self.waits_cut
        return out


def _check_url(url: object, where: str) -> str:
    from ragexam.llm.settings import is_http_url

    if not isinstance(url, str) or not is_http_url(url.strip()):
        raise InputError(f"received {url!r}; expected an http(s) URL such as http://localhost:8000/search.",
                         source=where, field="url")
    return url.strip()


def _check_headers(headers: object, where: str) -> Dict[str, str]:
    from ragexam.llm.transport import check_header

    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise InputError(f"received a {type(headers).__name__}; expected a mapping of header name -> value.",
                         source=where, field="headers")
    return dict(check_header(k, v, source=where) for k, v in headers.items())


@dataclass(frozen=True)
class ServiceOptions:
    """How a JSON service is called -- not what it answers, so none of it is in a signature or a cache key.

    ``headers`` are sent with every request; never stored, printed or part of a cache key.  ``timeout``: seconds
    one request may take in all (its deadline); ``max_retries``/``backoff``: the retry policy of
    :mod:`ragexam.llm.transport`; ``concurrency``: requests in flight at once; ``max_response_bytes``: the largest
    reply accepted, after decompression (default: the transport's).  ``cache``: read and write the call cache
    (``cache_dir``, default ``$RAGEXAM_CACHE_DIR``...); ``progress``: a progress bar on stderr (when it is a
    terminal); ``sleep``: how the retry waits (tests pass a recorder).  The values are checked by
    :class:`JSONService`."""

    headers: Optional[Mapping[str, str]] = None
    timeout: float = 30.0
    max_retries: int = 2
    backoff: float = 0.5
    concurrency: int = 4
    cache: bool = True
    cache_dir: Optional[PathLike] = None
    progress: bool = True
    sleep: Optional[Callable[[float], None]] = None
    max_response_bytes: Optional[int] = None


class JSONService:
    """POSTs JSON bodies to one ``url`` (module docstring), called as ``options`` say.

    :param kind: the kind of call (``"retrieve"``, ``"rerank"``), part of the cache key and stored beside
        each result.
    :param where: who calls it, in error messages (``http:URL``).
    """

    def __init__(self, url: str, *, kind: str, options: ServiceOptions = ServiceOptions(),
                 where: str = "service") -> None:
        from ragexam.llm.redact import Redactor
        from ragexam.llm.settings import public_endpoint
        from ragexam.llm.transport import HTTPTransport, RetryPolicy, check_max_response_bytes

        self.url = _check_url(url, where)
        self.public_url = public_endpoint(self.url)
        self.kind = kind
        self.where = where
        self._headers = _check_headers(options.headers, where)
        timeout, backoff, max_retries, concurrency = (options.timeout, options.backoff, options.max_retries,
                                                      options.concurrency)
        for name, value in (("timeout", timeout), ("backoff", backoff)):
            number_in(value, 0.0, above=name == "timeout", source=where, field=name, what="a number of seconds")
        for name, value, low in (("max_retries", max_retries, 0), ("concurrency", concurrency, 1)):
            integer_in(value, low, source=where, field=name)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.concurrency = int(concurrency)
        self.cache = bool(options.cache)
        self.cache_dir = options.cache_dir
        self.progress = options.progress
        secrets = list(self._headers.values()) + [v.split(" ", 1)[-1] for v in self._headers.values()]
        # header values are secrets of the redactor of every message the transport writes and of every parsed
        # reply (its texts are cached, stored and shown)
        limit = check_max_response_bytes(options.max_response_bytes, source=where)
        self.transport = HTTPTransport(timeout=self.timeout,
                                       retry=RetryPolicy(self.max_retries, self.backoff, max(self.backoff, 30.0)),
                                       headers=self._headers, redactor=Redactor(secrets),
                                       sleep=options.sleep or time.sleep,
                                       max_connections=max(self.concurrency, 1), max_response_bytes=limit)
        self.last_usage = ServiceUsage()

    @property
    def header_names(self) -> List[str]:
        """The names of the headers sent (lower case, sorted); values are never shown."""
        return sorted(k.lower() for k in self._headers)

    def __repr__(self) -> str:
        return f"JSONService({self.public_url!r}, kind={self.kind!r})"

    def key(self, body: JsonValue, extra: Optional[Mapping[str, JsonValue]] = None) -> str:
        """The cache key of a request: ``format``, ``kind``, the URL without credentials (query kept: it can
        change the reply) and the body, plus ``extra``."""
        from urllib.parse import urlsplit, urlunsplit

        from ragexam.llm.cache import request_key

        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        url = urlunsplit((parts.scheme, host, parts.path, parts.query, ""))
        return request_key({"format": f"ragexam-{self.kind}/1", "kind": self.kind, "url": url, "body": body,
                            **dict(extra or {})})

    def call_many(self, bodies: Sequence[Any], parse: Callable[[Any], Dict[str, Any]], *,
                  description: str = "", keys: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
        """POST each body; ``parse(reply)`` turns a reply into the JSON-able result (raising :class:`Malformed`
        for a reply of the wrong shape).  Returns, per body, ``{"status": "ok", **parsed, "latency": s}`` or
        ``{"status": "failed", "reason": "kind: detail"}``, in order.  Repeated bodies are sent once.
        :raises ragexam.llm.transport.EndpointError: 401/403/404 or an unusable URL (stops the run)."""
        from ragexam.llm.batch import Outcome, Store, run_calls
        from ragexam.llm.transport import CallFailed
        from ragexam.retrieval.progress import progress_bar

        ks = list(keys) if keys is not None else [self.key(b) for b in bodies]
        tasks = list(zip(ks, bodies))
        cut_before = self.transport.waits_cut
        # a service that refused the connection (after the retries) before answering once listens nowhere: the
        # rest fail at once with that reason instead of each retrying (71 questions took 20 s to say so)
        refused: Dict[str, Optional[str]] = {"reason": None}

        def one(body: JsonValue) -> Outcome:
            if refused["reason"] is not None:
                return Outcome({"status": "failed", "reason": refused["reason"]}, store=False, requests=0)
            t0 = time.perf_counter()
            try:
                reply, requests = self.transport.post_json(self.url, body, what=f"({self.kind})")
            except CallFailed as err:
                reason = f"{err.kind}: {err.message}"
                if err.kind == "connection_error" and "refused" in err.message.lower() and not refused.get("ok"):
                    refused["reason"] = f"{reason} (not sent again: nothing listens at {self.public_url})"
                return Outcome({"status": "failed", "reason": reason}, store=False, requests=err.requests)
            refused["ok"] = "yes"
            latency = time.perf_counter() - t0
            try:
                parsed = self.transport.redactor.value(parse(reply))
            except Malformed as err:
                return Outcome({"status": "failed", "reason": f"malformed: {self.transport.short(str(err))}"},
                               store=False, requests=requests)
            return Outcome({"status": "ok", **parsed, "latency": latency}, store=True, requests=requests, replies=1)

        cache = None
        if self.cache:
            from ragexam.llm.cache import LLMCache

            cache = LLMCache(self.cache_dir)
        with progress_bar(description or f"{self.kind} ({self.public_url})", len(set(ks)), self.progress) as bar:
            state = {"done": 0}

            def tick(done: int, total: int) -> None:
                if done > state["done"]:
                    bar.advance(done - state["done"])
                    state["done"] = done

            batch = run_calls(tasks, one, store=Store(cache, self.kind, self.kind, self.public_url),
                              concurrency=self.concurrency, usable=lambda v: v.get("status") == "ok",
                              progress=tick,
                              claim_wait=self.timeout * (self.max_retries + 1))
        out = [batch.values[k] for k in ks]
        self.last_usage = ServiceUsage(calls=len(batch.fresh), cached=sum(1 for k in ks if k in batch.from_cache),
                                       failed=sum(1 for v in out if v.get("status") != "ok"),
                                       requests=batch.usage.requests,
                                       waits_cut=self.transport.waits_cut - cut_before)
        return out

    def close(self) -> None:
        self.transport.close()
