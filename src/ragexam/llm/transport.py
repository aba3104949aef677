"""JSON over HTTP with ragexam's one retry policy (``httpx``).

Every HTTP call ragexam makes to a model or service -- chat completions, embeddings, a
``/rerank`` endpoint, a user's own search service -- goes through :meth:`HTTPTransport.post_json`:

* **Failures that may pass** are retried up to ``max_retries`` times: HTTP 429
  (``rate_limited``), 5xx (``server_error``), 408 and timeouts (``timeout``), connection errors
  (``connection_error``), and a 2xx whose body is not JSON or not of the expected shape
  (``bad_response``: a proxy's error page, a body without ``choices``).  Before retry ``i``
  (0-based) the transport waits the endpoint's ``retry-after-ms`` or ``Retry-After`` (seconds or
  an HTTP date) when it sends one, else ``d/2 + uniform(0, d/2)`` with
  ``d = min(max_backoff, backoff * 2**i)`` (exponential backoff with jitter); every wait is
  capped at ``max_backoff``.  When the retries run out, :class:`CallFailed` says why (its
  ``kind``), with the number of requests spent.
* **Failures of this request only**: HTTP 400 and 422 (``bad_request``) and any other status
  (``http_error``) are :class:`CallFailed` at once, without retry.
* **Failures of the configuration**: HTTP 401, 403, 404 (wrong key, no access, wrong model or
  URL) and a URL that is not http(s) raise :class:`EndpointError` at once; it stops the run.

Messages carry the endpoint's own error text (``error.message`` of a JSON error body, else the
first line), at most 300 characters, passed through the transport's
:class:`~ragexam.llm.redact.Redactor`.  ``timeout`` applies to each phase of a request
(connect, write, read).  Proxies come from the usual environment variables (``HTTPS_PROXY``,
``NO_PROXY``), as in ``httpx``.  One transport is safe to use from many threads.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from ragexam import fmt
from ragexam.errors import RagexamError
from ragexam.llm.redact import Redactor
from ragexam.llm.settings import public_endpoint

__all__ = ["FAILURE_KINDS", "CallFailed", "EndpointError", "RetryPolicy", "HTTPTransport", "Check"]

#: the ``kind`` of a :class:`CallFailed`.
FAILURE_KINDS = ("rate_limited", "server_error", "timeout", "connection_error", "bad_response", "bad_request",
                 "http_error")
_FATAL = (401, 403, 404)
_DEFAULT_HINTS = {401: "check the credentials", 403: "the credentials lack access to this resource",
                  404: "check the URL"}

#: a shape check of a 2xx body: ``None`` when it is as expected, else what is wrong (retried).
Check = Callable[[Any], Optional[str]]


class EndpointError(RagexamError):
    """The endpoint refuses the configuration (401/403/404, or an unusable URL): stop, fix the settings."""


class CallFailed(Exception):
    """A request that did not produce a usable response after all retries.

    ``kind``: one of :data:`FAILURE_KINDS`; ``message``: redacted detail; ``requests``: HTTP
    requests made for it; ``status``: the last HTTP status (``None`` when there was none)."""

    def __init__(self, kind: str, message: str, requests: int, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.requests = requests
        self.status = status


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries per request, ``backoff`` the first step and ``max_backoff`` the cap
    of any wait, in seconds (see the module docstring)."""

    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 60.0

    def delay(self, attempt: int, headers: Optional[Mapping[str, str]], rng: random.Random) -> float:
        """Seconds to wait before retry ``attempt`` (0-based)."""
        if headers is not None:
            ms = headers.get("retry-after-ms")
            if ms is not None:
                try:
                    return max(0.0, min(self.max_backoff, float(ms) / 1000.0))
                except ValueError:
                    pass
            ra = headers.get("retry-after")
            if ra is not None:
                try:
                    return max(0.0, min(self.max_backoff, float(ra)))
                except ValueError:
                    try:
                        when = parsedate_to_datetime(ra)
                        return max(0.0, min(self.max_backoff, when.timestamp() - time.time()))
                    except (TypeError, ValueError, IndexError, OverflowError):
                        pass
        d = min(self.max_backoff, self.backoff * (2 ** attempt))
        return d / 2 + rng.uniform(0, d / 2)


class _Retry(Exception):
    def __init__(self, kind: str, detail: str, status: Optional[int] = None, headers=None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.status, self.headers = kind, detail, status, headers


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""


def _error_text(body: bytes) -> str:
    """The endpoint's error message from a response body."""
    try:
        data = json.loads(body)
    except ValueError:
        return _first_line(body.decode("utf-8", "replace"))
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            for k in ("message", "detail", "error"):
                if isinstance(err.get(k), str):
                    return _first_line(err[k])
        if isinstance(err, str):
            return _first_line(err)
        for k in ("message", "detail"):
            if isinstance(data.get(k), str):
                return _first_line(data[k])
    return _first_line(json.dumps(data, ensure_ascii=False))


class HTTPTransport:
    """POSTs JSON with the retry policy of the module docstring.

    :param timeout: seconds per request phase (> 0).
    :param retry: the :class:`RetryPolicy`.
    :param headers: sent with every request (e.g. ``Authorization``); never in messages.
    :param redactor: applied to every message this transport builds.
    :param sleep: the sleep function (tests pass a recorder).
    :param max_connections: connection pool size (default: httpx's).
    """

    def __init__(self, *, timeout: float = 60.0, retry: RetryPolicy = RetryPolicy(),
                 headers: Optional[Mapping[str, str]] = None, redactor: Optional[Redactor] = None,
                 sleep: Callable[[float], None] = time.sleep, max_connections: Optional[int] = None) -> None:
        from ragexam._version import __version__

        self.timeout = float(timeout)
        self.retry = retry
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": f"ragexam/{__version__}", **dict(headers or {})}
        self.redactor = redactor or Redactor()
        self._sleep = sleep
        self._max_connections = max_connections
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._http = None
        #: HTTP requests sent so far (retries included).
        self.requests = 0

    def __repr__(self) -> str:
        return f"HTTPTransport(timeout={self.timeout:g}, {self.retry})"

    def __getstate__(self) -> dict:
        """Pickles without its HTTP connections and lock (a Ray actor opens its own)."""
        state = dict(self.__dict__)
        state.update(_lock=None, _http=None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _client(self):
        if self._http is None:
            with self._lock:
                if self._http is None:
                    import httpx

                    limits = httpx.Limits() if self._max_connections is None else httpx.Limits(
                        max_connections=self._max_connections, max_keepalive_connections=self._max_connections)
                    self._http = httpx.Client(timeout=httpx.Timeout(self.timeout), limits=limits)
        return self._http

    def close(self) -> None:
        """Close the connection pool (reopened on next use)."""
        with self._lock:
            if self._http is not None:
                self._http.close()
                self._http = None

    def short(self, text: str) -> str:
        """``text`` cut to 300 characters and redacted: how messages quote an endpoint."""
        return self.redactor.text(text[:300]) or ""

    def post_json(self, url: str, body: Any, *, check: Optional[Check] = None, what: str = "",
                  hints: Optional[Mapping[int, str]] = None, headers: Optional[Mapping[str, str]] = None
                  ) -> Tuple[Any, int]:
        """POST ``body`` as JSON to ``url``; returns ``(parsed JSON response, requests made)``.

        ``check`` validates a 2xx body (a problem is ``bad_response``, retried); ``what`` names
        the request in an :class:`EndpointError` (``"for model 'x'"``); ``hints`` maps 401/403/404
        to the fix to suggest; ``headers`` are added to the transport's for this request.

        :raises CallFailed: see the module docstring; :raises EndpointError: 401/403/404.
        """
        import httpx

        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        send_headers = {**self._headers, **dict(headers or {})}
        client = self._client()
        where = public_endpoint(url)
        attempt = 0
        while True:
            with self._lock:
                self.requests += 1
            try:
                try:
                    resp = client.post(url, content=data, headers=send_headers)
                except httpx.TimeoutException as err:
                    raise _Retry("timeout", f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)
                except httpx.UnsupportedProtocol:
                    scheme = urlsplit(url).scheme
                    raise EndpointError(f"{where}: the URL scheme {scheme!r} is not supported; expected http:// or "
                                        "https://") from None
                except httpx.InvalidURL as err:
                    raise EndpointError(f"{where}: not a usable URL ({err})") from None
                except httpx.TransportError as err:
                    raise _Retry("connection_error", f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)
                except httpx.HTTPError as err:  # e.g. a body that cannot be decoded
                    raise _Retry("bad_response", f"{type(err).__name__}: {err}")
                status = resp.status_code
                if 200 <= status < 300:
                    try:
                        parsed = json.loads(resp.content)
                    except ValueError as err:
                        raise _Retry("bad_response", f"the response is not JSON ({err})") from None
                    problem = check(parsed) if check is not None else None
                    if problem is not None:
                        raise _Retry("bad_response", problem)
                    return parsed, attempt + 1
                detail = _error_text(resp.content)
                if status in _FATAL:
                    hint = {**_DEFAULT_HINTS, **dict(hints or {})}[status]
                    for_what = f" {what}" if what else ""
                    raise EndpointError(f"{where} refused the request{for_what}: HTTP {status}: "
                                        f"{self.short(detail)} ({hint}).") from None
                if status in (400, 422):
                    raise CallFailed("bad_request", f"HTTP {status}: {self.short(detail)}", attempt + 1, status)
                if status == 429:
                    raise _Retry("rate_limited", detail, status, resp.headers)
                if status >= 500:
                    raise _Retry("server_error", detail, status, resp.headers)
                if status == 408:
                    raise _Retry("timeout", detail, status, resp.headers)
                raise CallFailed("http_error", f"HTTP {status}: {self.short(detail)}", attempt + 1, status)
            except _Retry as r:
                if attempt >= self.retry.max_retries:
                    head = f"HTTP {r.status}" if r.status is not None else r.kind.replace("_", " ")
                    raise CallFailed(r.kind, f"{head} after {fmt.plural(attempt + 1, 'attempt')}: {self.short(r.detail)}",
                                     attempt + 1, r.status) from None
                with self._lock:
                    wait = self.retry.delay(attempt, r.headers, self._rng)
                self._sleep(wait)
                attempt += 1

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if self._http is not None:
                self._http.close()
        except Exception:
            pass

