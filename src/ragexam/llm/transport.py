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
* **Waits the server asks for and does not get.**  A ``Retry-After`` longer than ``max_backoff`` is
  *cut* to ``max_backoff``; this is said (a :class:`ServiceWarning` once per transport, the count in
  :attr:`HTTPTransport.waits_cut`, and the message of a request that then fails).  All cut waits of one
  transport together are bounded by ``cut_wait_budget`` seconds (default ``max_backoff``): once it is
  spent, a reply asking for more than ``max_backoff`` fails at once (``rate_limited``/``server_error``)
  instead of waiting again -- a server saying "come back in an hour" costs one cut wait per run, not one
  per question.  Any request's own waiting is bounded by ``max_retries * max_backoff``.
* **Failures of this request only**: HTTP 400 and 422 (``bad_request``) and any other status
  (``http_error``) are :class:`CallFailed` at once, without retry; so is a 2xx body larger than
  ``max_response_bytes``, nested deeper than :data:`~ragexam.llm.safejson.MAX_DEPTH` levels, or holding a
  lone surrogate (an escape such as ``"\\ud800"``: text no file can hold, so the first write of it would
  crash) (``bad_response``: asking again would fetch the same body).
* **Failures of the configuration**: HTTP 401, 403, 404 (wrong key, no access, wrong model or
  URL) and a URL that is not http(s) raise :class:`EndpointError` at once; it stops the run.

Limits of every request (the contract tests/test_llm_transport.py holds):

* ``timeout`` is the **deadline of the whole request** -- connecting, sending, waiting for and reading
  the reply -- not of each read: a server trickling one byte a second is cut off after ``timeout``
  seconds (``timeout``), like one that sends nothing.  Waits between retries are not part of it.
* ``max_response_bytes`` caps the size of a reply **after decompression**: an argument of the transport
  (``LLMSettings.max_response_bytes``, the ``max_response_bytes`` option of ``http:`` and
  ``rerank:http:``), else the environment variable ``RAGEXAM_MAX_RESPONSE_BYTES``, else
  :data:`DEFAULT_MAX_RESPONSE_BYTES` (32 MiB).  The body is read as a stream and decompressed (``gzip``,
  ``deflate``; the transport asks for nothing else) in steps of at most 256 KiB, so a gzip bomb costs at
  most the cap plus one step in memory and fails when it passes the cap; a ``Content-Length`` over the
  cap fails before the body is read.  The body of an error status is read up to 64 KiB (only its first
  line is quoted).
* Header values (``headers=``) may not hold a line break (CR or LF): it would end the header and inject
  another one.  Such a header, or a name that is not an HTTP token, is an
  :class:`~ragexam.errors.InputError` when the transport is built (:func:`check_header`), before any request.

Messages carry the endpoint's own error text (``error.message`` of a JSON error body, else the
first line), at most 300 characters, passed through the transport's
:class:`~ragexam.llm.redact.Redactor`.  Proxies come from the usual environment variables
(``HTTPS_PROXY``, ``NO_PROXY``), as in ``httpx``.  One transport is safe to use from many threads.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
import warnings
import zlib
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Callable, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from ragexam import fmt
from ragexam.errors import InputError, RagexamError, integer_in
from ragexam.llm.redact import Redactor
from ragexam.llm.safejson import SURROGATE_HELP, TooDeep, loads, may_hold_surrogates, unencodable
from ragexam.llm.settings import public_endpoint

__all__ = ["FAILURE_KINDS", "CallFailed", "EndpointError", "RetryPolicy", "HTTPTransport", "Check",
           "ServiceWarning", "DEFAULT_MAX_RESPONSE_BYTES", "MAX_RESPONSE_ENV", "check_header",
           "check_max_response_bytes"]

#: the ``kind`` of a :class:`CallFailed`.
FAILURE_KINDS = ("rate_limited", "server_error", "timeout", "connection_error", "bad_response", "bad_request",
                 "http_error")
#: the default cap of a reply's size after decompression (``max_response_bytes``): 32 MiB.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: the environment variable that sets the default of every transport (in bytes).
MAX_RESPONSE_ENV = "RAGEXAM_MAX_RESPONSE_BYTES"
_ERROR_BODY_BYTES = 64 * 1024
_STEP = 256 * 1024  # the most one decompression step produces: memory stays at the cap plus one step
_FATAL = (401, 403, 404)
_DEFAULT_HINTS = {401: "check the credentials", 403: "the credentials lack access to this resource",
                  404: "check the URL"}
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

#: a shape check of a 2xx body: ``None`` when it is as expected, else what is wrong (retried).
Check = Callable[[Any], Optional[str]]


class EndpointError(RagexamError):
    """The endpoint refuses the configuration (401/403/404, or an unusable URL): stop, fix the settings."""


class ServiceWarning(UserWarning):
    """Something a service asked for that ragexam did not do (a ``Retry-After`` longer than ``max_backoff``)."""


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


def check_header(name: Any, value: Any, *, source: str = "headers") -> Tuple[str, str]:
    """``(name, value)`` of one HTTP header, checked: a name that is an HTTP token and a text value on one line
    (a CR or LF would end the header and inject the rest as another one).  The value is never quoted in the
    message: it is usually a secret.  :raises InputError: naming the header."""
    if not isinstance(name, str) or not _TOKEN.match(name.strip()):
        shown = name if isinstance(name, str) and len(name) <= 40 else f"{str(name)[:40]}..."
        raise InputError(f"header name {shown!r} is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~, "
                         "no spaces, colons or line breaks); expected e.g. 'Authorization'.", source=source,
                         field="headers")
    if not isinstance(value, str):
        raise InputError(f"the value of header {name.strip()!r} is a {type(value).__name__}; expected a text.",
                         source=source, field="headers")
    if "\r" in value or "\n" in value or "\0" in value:
        raise InputError(f"the value of header {name.strip()!r} holds a line break (CR or LF) or a NUL byte, which "
                         "would end the header and inject what follows as another one; expected one line (the "
                         "value is not shown: it may be a secret).", source=source, field="headers")
    return name.strip(), value


def check_max_response_bytes(value: Any, *, source: str = "max_response_bytes") -> int:
    """``value`` as the size cap of a reply (an integer >= 1024); ``None`` is the default: the environment
    variable :data:`MAX_RESPONSE_ENV` when it is set, else :data:`DEFAULT_MAX_RESPONSE_BYTES`.
    :raises InputError: anything else (naming ``source``, or the environment variable)."""
    if value is None:
        import os

        raw = os.environ.get(MAX_RESPONSE_ENV, "").strip()
        if not raw:
            return DEFAULT_MAX_RESPONSE_BYTES
        source = MAX_RESPONSE_ENV
        value = int(raw) if raw.isdigit() else raw
    return integer_in(value, 1024, source=source, field="max_response_bytes",
                      what="the largest reply to accept, in bytes after decompression (default "
                           f"{DEFAULT_MAX_RESPONSE_BYTES})")


def _size(n: float) -> str:
    """``n`` bytes as text: ``512 bytes``, ``64 KiB``, ``32 MiB``, ``1.5 GiB``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{int(n)} bytes"


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` retries per request, ``backoff`` the first step and ``max_backoff`` the cap
    of any wait, in seconds; ``cut_wait_budget`` the seconds all waits cut at ``max_backoff`` may add up
    to over the transport's life (``None``: ``max_backoff``).  See the module docstring."""

    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 60.0
    cut_wait_budget: Optional[float] = None

    @property
    def cut_budget(self) -> float:
        """:attr:`cut_wait_budget`, or ``max_backoff``."""
        return self.max_backoff if self.cut_wait_budget is None else float(self.cut_wait_budget)

    def asked(self, headers: Optional[Mapping[str, str]]) -> Optional[float]:
        """The seconds the server asks to wait (``retry-after-ms``, ``Retry-After`` in seconds or as an HTTP
        date), uncapped; ``None`` when it asks nothing readable."""
        if headers is None:
            return None
        ms = headers.get("retry-after-ms")
        if ms is not None:
            try:
                return max(0.0, float(ms) / 1000.0)
            except ValueError:
                pass
        ra = headers.get("retry-after")
        if ra is not None:
            try:
                return max(0.0, float(ra))
            except ValueError:
                try:
                    return max(0.0, parsedate_to_datetime(ra).timestamp() - time.time())
                except (TypeError, ValueError, IndexError, OverflowError):
                    pass
        return None

    def delay(self, attempt: int, headers: Optional[Mapping[str, str]], rng: random.Random) -> float:
        """Seconds to wait before retry ``attempt`` (0-based): the server's wait capped at ``max_backoff``,
        else the jittered backoff."""
        asked = self.asked(headers)
        if asked is not None and asked == asked:
            return min(self.max_backoff, asked)
        d = min(self.max_backoff, self.backoff * (2 ** attempt))
        return d / 2 + rng.uniform(0, d / 2)


class _Retry(Exception):
    def __init__(self, kind: str, detail: str, status: Optional[int] = None, headers=None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.status, self.headers = kind, detail, status, headers


class _Final(Exception):
    """A failure of this request that asking again would not change (``bad_response``)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""


def _error_text(body: bytes) -> str:
    """The endpoint's error message from a response body."""
    try:
        data = loads(body)
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


# -- the deadline of a request -------------------------------------------------------------------------------
# httpx's timeouts apply to each network operation, so a server sending a byte a second never times out.  Each
# socket operation of a request instead gets what is left of the request's deadline (set per thread by
# post_json: a sync httpx client does its I/O in the calling thread), through a network backend wrapped around
# httpcore's.
_DEADLINE = threading.local()


def _left(timeout: Optional[float], expired: type) -> Optional[float]:
    at = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise expired("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


def _deadline_backend(inner: Any) -> Any:
    """``inner`` (an ``httpcore`` network backend) with every operation bounded by the request's deadline."""
    import httpcore

    class Stream(httpcore.NetworkStream):
        def __init__(self, stream: Any) -> None:
            self._s = stream

        def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
            return self._s.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
            self._s.write(buffer, _left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._s.close()

        def start_tls(self, ssl_context: Any, server_hostname: Optional[str] = None,
                      timeout: Optional[float] = None) -> Any:
            return Stream(self._s.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._s.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        deadline_bound = True

        def connect_tcp(self, host: str, port: int, timeout: Optional[float] = None,
                        local_address: Optional[str] = None, socket_options: Any = None) -> Any:
            return Stream(inner.connect_tcp(host, port, _left(timeout, httpcore.ConnectTimeout), local_address,
                                            socket_options))

        def connect_unix_socket(self, path: str, timeout: Optional[float] = None,
                                socket_options: Any = None) -> Any:  # pragma: no cover - no unix sockets here
            return Stream(inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), socket_options))

        def sleep(self, seconds: float) -> None:  # pragma: no cover - httpcore's retries are off
            inner.sleep(seconds)

    return Backend()


def _bind_deadlines(client: Any) -> int:
    """Wrap the network backend of every connection pool of the ``httpx`` ``client`` (its own and the proxies'
    from the environment) in :func:`_deadline_backend`; returns how many were wrapped.  (Should a future httpx
    hide the pools, the deadline is still checked between the chunks of a body.)"""
    n = 0
    for transport in [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is not None and not getattr(backend, "deadline_bound", False):
            pool._network_backend = _deadline_backend(backend)
            n += 1
    return n


# -- a body read as a bounded stream --------------------------------------------------------------------------
class _TooLarge(Exception):
    pass


class _Body:
    """A response body, decompressed (``gzip``/``deflate``/none) in steps that never produce more than the cap."""

    def __init__(self, encoding: Optional[str], limit: int) -> None:
        codings = [c.strip().lower() for c in (encoding or "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise _Final("bad_response", f"the response is compressed as {encoding!r}, which ragexam does not "
                                         "read; expected gzip, deflate or none (ragexam asks for gzip, deflate)")
        self.coding = codings[0] if codings else None
        self.limit = limit
        self.size = 0
        self.wire = 0
        self.parts: List[bytes] = []
        self._z: Any = None

    def _add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            raise _TooLarge()
        if data:
            self.parts.append(data)

    def feed(self, data: bytes) -> None:
        self.wire += len(data)
        if self.coding is None:
            self._add(data)
            return
        try:
            while data:
                if self._z is None:
                    self._z = zlib.decompressobj(self._wbits(data))
                elif self._z.eof:
                    if not data.strip(b"\0"):
                        return  # zero padding after the stream
                    if self.coding == "deflate":
                        raise _Retry("bad_response", "the deflate body has data after its end")
                    self._z = zlib.decompressobj(self._wbits(data))  # the next member of a multi-member gzip
                self._add(self._z.decompress(data, min(self.limit - self.size + 1, _STEP)))
                data = self._z.unused_data if self._z.eof else self._z.unconsumed_tail
        except zlib.error as err:
            raise _Retry("bad_response", f"the {self.coding} body cannot be decompressed ({err})") from None

    def _wbits(self, head: bytes) -> int:
        if self.coding != "deflate":
            return 16 + zlib.MAX_WBITS  # gzip
        zlib_header = len(head) >= 2 and head[0] & 0x0F == 8 and ((head[0] << 8) | head[1]) % 31 == 0
        return zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS  # zlib-wrapped, or raw deflate as some send

    def content(self) -> bytes:
        if self._z is not None and not self._z.eof and self.coding != "deflate":
            raise _Retry("bad_response", f"the {self.coding} body ends early (truncated)")
        if self._z is not None:
            try:
                self._add(self._z.flush())
            except zlib.error as err:
                raise _Retry("bad_response", f"the {self.coding} body cannot be decompressed ({err})") from None
        return b"".join(self.parts)


class HTTPTransport:
    """POSTs JSON with the retry policy and the limits of the module docstring.

    :param timeout: seconds one request may take in all (> 0): its deadline.
    :param retry: the :class:`RetryPolicy`.
    :param headers: sent with every request (e.g. ``Authorization``); never in messages; checked by
        :func:`check_header`.
    :param redactor: applied to every message this transport builds.
    :param sleep: the sleep function (tests pass a recorder).
    :param max_connections: connection pool size (default: httpx's).
    :param max_response_bytes: the largest reply accepted, after decompression (default:
        ``$RAGEXAM_MAX_RESPONSE_BYTES``, else 32 MiB).
    """

    def __init__(self, *, timeout: float = 60.0, retry: RetryPolicy = RetryPolicy(),
                 headers: Optional[Mapping[str, str]] = None, redactor: Optional[Redactor] = None,
                 sleep: Callable[[float], None] = time.sleep, max_connections: Optional[int] = None,
                 max_response_bytes: Optional[int] = None) -> None:
        from ragexam._version import __version__

        self.timeout = float(timeout)
        self.retry = retry
        self.max_response_bytes = check_max_response_bytes(max_response_bytes)
        mine = dict(check_header(k, v) for k, v in dict(headers or {}).items())
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "Accept-Encoding": "gzip, deflate", "User-Agent": f"ragexam/{__version__}", **mine}
        self.redactor = redactor or Redactor()
        self._sleep = sleep
        self._max_connections = max_connections
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._http = None
        #: HTTP requests sent so far (retries included).
        self.requests = 0
        #: waits cut at ``max_backoff`` so far, and the seconds of the cut waits taken.
        self.waits_cut = 0
        self.cut_waited = 0.0
        self._warned = False

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
                    http = httpx.Client(timeout=httpx.Timeout(self.timeout), limits=limits)
                    _bind_deadlines(http)
                    self._http = http
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

    def _exchange(self, url: str, data: bytes, headers: Mapping[str, str]) -> Tuple[int, Any, bytes]:
        """One request within the deadline: ``(status, headers, body)`` (a 2xx body whole, an error's first
        64 KiB).  :raises _Retry: timeout, connection error, a body that cannot be decompressed;
        :raises _Final: a body over the cap or compressed in a way ragexam does not read."""
        import httpx

        deadline = time.monotonic() + self.timeout
        _DEADLINE.at = deadline
        try:
            with self._client().stream("POST", url, content=data, headers=headers) as resp:
                ok = 200 <= resp.status_code < 300
                limit = self.max_response_bytes if ok else _ERROR_BODY_BYTES
                length = resp.headers.get("content-length", "")
                if ok and length.isdigit() and int(length) > limit and not resp.headers.get("content-encoding"):
                    raise _Final("bad_response", f"the response is {_size(int(length))} (Content-Length), over the "
                                                 f"{_size(limit)} limit (max_response_bytes); raise it if such "
                                                 "replies are expected")
                body = _Body(resp.headers.get("content-encoding"), limit)
                try:
                    for chunk in resp.iter_raw():
                        body.feed(chunk)
                        if time.monotonic() > deadline:
                            raise httpx.ReadTimeout("the request's deadline passed")
                except _TooLarge:
                    if not ok:
                        return resp.status_code, resp.headers, b"".join(body.parts)[:limit]
                    packed = f" ({_size(body.wire)} on the wire, {body.coding})" if body.coding else ""
                    raise _Final("bad_response", f"the response is larger than {_size(limit)}{packed} after "
                                                 "decompression, the limit (max_response_bytes); raise it if such "
                                                 "replies are expected") from None
                return resp.status_code, resp.headers, body.content()
        except httpx.TimeoutException:
            raise _Retry("timeout", f"no complete response within {self.timeout:g} s (timeout: the deadline of one "
                                    "request)") from None
        except httpx.UnsupportedProtocol:
            raise EndpointError(f"{public_endpoint(url)}: the URL scheme {urlsplit(url).scheme!r} is not supported; "
                                "expected http:// or https://") from None
        except httpx.InvalidURL as err:
            raise EndpointError(f"{public_endpoint(url)}: not a usable URL ({err})") from None
        except httpx.TransportError as err:
            raise _Retry("connection_error", f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)
        except httpx.HTTPError as err:  # e.g. a malformed response
            raise _Retry("bad_response", f"{type(err).__name__}: {err}")
        finally:
            _DEADLINE.at = None

    def _wait(self, r: _Retry, attempt: int, where: str) -> Tuple[float, Optional[str]]:
        """Seconds to wait before retrying after ``r`` and, when the server asked for more than ``max_backoff``,
        what was done about it; ``(-1, why)`` when the cut-wait budget is spent (fail now)."""
        asked = self.retry.asked(r.headers)
        with self._lock:
            wait = self.retry.delay(attempt, r.headers, self._rng)
            if asked is None or asked <= self.retry.max_backoff:
                return wait, None
            left = self.retry.cut_budget - self.cut_waited
            note = (f"the server asked to wait {asked:g} s (Retry-After); waits are cut to "
                    f"{self.retry.max_backoff:g} s (max_backoff) and all cut waits to "
                    f"{self.retry.cut_budget:g} s (cut_wait_budget)")
            if left <= 0:
                return -1.0, note
            wait = min(wait, left)
            self.waits_cut += 1
            self.cut_waited += wait
            warn = not self._warned
            self._warned = True
        if warn:
            warnings.warn(f"{where}: {note}; waiting {wait:g} s.", ServiceWarning, stacklevel=4)
        return wait, note

    def post_json(self, url: str, body: Any, *, check: Optional[Check] = None, what: str = "",
                  hints: Optional[Mapping[int, str]] = None, headers: Optional[Mapping[str, str]] = None
                  ) -> Tuple[Any, int]:
        """POST ``body`` as JSON to ``url``; returns ``(parsed JSON response, requests made)``.

        ``check`` validates a 2xx body (a problem is ``bad_response``, retried); ``what`` names
        the request in an :class:`EndpointError` (``"for model 'x'"``); ``hints`` maps 401/403/404
        to the fix to suggest; ``headers`` are added to the transport's for this request.

        :raises CallFailed: see the module docstring; :raises EndpointError: 401/403/404.
        """
        data = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        extra = dict(check_header(k, v) for k, v in dict(headers or {}).items())
        send_headers = {**self._headers, **extra}
        where = public_endpoint(url)
        attempt = 0
        notes: List[str] = []
        while True:
            with self._lock:
                self.requests += 1
            try:
                try:
                    status, resp_headers, content = self._exchange(url, data, send_headers)
                except _Final as f:
                    raise CallFailed(f.kind, self.short(f.detail), attempt + 1, None) from None
                if 200 <= status < 300:
                    try:
                        parsed = loads(content)
                    except TooDeep as err:
                        raise CallFailed("bad_response", f"the response is {err}", attempt + 1, status) from None
                    except ValueError as err:
                        raise _Retry("bad_response", f"the response is not JSON ({err})") from None
                    bad = unencodable(parsed) if may_hold_surrogates(content) else None
                    if bad is not None:  # a text no file can hold: refused here, before anything stores it
                        raise CallFailed("bad_response", f"the response's {bad[0]} holds {bad[1]}: {SURROGATE_HELP}",
                                         attempt + 1, status)
                    problem = check(parsed) if check is not None else None
                    if problem is not None:
                        raise _Retry("bad_response", problem)
                    return parsed, attempt + 1
                self._refuse(status, content, attempt, what, hints, where, resp_headers)
            except _Retry as r:
                wait, note = (0.0, None) if attempt >= self.retry.max_retries else self._wait(r, attempt, where)
                if note is not None and note not in notes:
                    notes.append(note)
                if attempt >= self.retry.max_retries or wait < 0:
                    head = f"HTTP {r.status}" if r.status is not None else r.kind.replace("_", " ")
                    spent = ", which are spent: not retried" if wait < 0 else ""
                    tail = f" ({notes[-1]}{spent})" if notes else ""
                    raise CallFailed(r.kind, f"{head} after {fmt.plural(attempt + 1, 'attempt')}: "
                                             f"{self.short(r.detail)}{tail}", attempt + 1, r.status) from None
                self._sleep(wait)
                attempt += 1

    def _refuse(self, status: int, content: bytes, attempt: int, what: str, hints: Optional[Mapping[int, str]],
                where: str, resp_headers: Any) -> None:
        """Raise what a non-2xx ``status`` means (module docstring)."""
        detail = _error_text(content)
        if status in _FATAL:
            hint = {**_DEFAULT_HINTS, **dict(hints or {})}[status]
            for_what = f" {what}" if what else ""
            raise EndpointError(f"{where} refused the request{for_what}: HTTP {status}: "
                                f"{self.short(detail)} ({hint}).") from None
        if status in (400, 422):
            raise CallFailed("bad_request", f"HTTP {status}: {self.short(detail)}", attempt + 1, status)
        if status == 429:
            raise _Retry("rate_limited", detail, status, resp_headers)
        if status >= 500:
            raise _Retry("server_error", detail, status, resp_headers)
        if status == 408:
            raise _Retry("timeout", detail, status, resp_headers)
        raise CallFailed("http_error", f"HTTP {status}: {self.short(detail)}", attempt + 1, status)

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            if self._http is not None:
                self._http.close()
        except Exception:
            pass
