"""A chat-completions client for any OpenAI-compatible endpoint, with ragexam's own retries.

Works with the OpenAI API (``gpt-4o-mini``), Ollama (``http://localhost:11434/v1``), vLLM,
LM Studio and anything else that speaks ``POST /v1/chat/completions``, through the ``openai``
package (``pip install 'ragexam[openai]'``).

Settings: ``model``; ``base_url`` (default ``$OPENAI_BASE_URL``, else the OpenAI API);
``api_key`` (default ``$OPENAI_API_KEY``; for a non-OpenAI endpoint without a key the placeholder
``"unused"`` is sent, for the OpenAI API a missing key is an error).  The key lives only in
memory: it is not in :attr:`ChatClient.endpoint`, ``repr``, signatures, cache keys or values,
and :meth:`ChatClient.redact` removes it from any text ragexam stores or prints (an endpoint
could echo it back in an error message).

Retries (the ``openai`` client's own are switched off):

* HTTP 429, 5xx, timeouts, connection errors and responses that are not a chat completion
  (a body that is not JSON, no ``choices``) are retried up to ``max_retries`` times,
  waiting ``Retry-After`` (seconds or an HTTP date; or ``retry-after-ms``) when the endpoint
  sends one, else ``d/2 + uniform(0, d/2)`` with ``d = min(max_backoff, backoff * 2**attempt)``
  (exponential backoff with jitter); every wait is capped at ``max_backoff``.  When they run
  out, :class:`CallFailed` says why (``rate_limited``, ``server_error``, ``timeout``,
  ``connection_error``, ``bad_response``).
* HTTP 400/422 while a ``response_format`` is sent is taken as "this endpoint does not support
  it": the same request is sent again one level down the ladder ``json_schema`` ->
  ``json_object`` -> none (then the reply's first JSON object is parsed).  When the lower level
  succeeds, the client stays there for later calls.  A 400 without ``response_format`` is
  :class:`CallFailed` (``bad_request``).
* HTTP 401, 403 and 404 mean the configuration is wrong (key, model name, URL); they raise
  :class:`EndpointError` at once, which stops the run.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Dict, List, Optional

from ragexam.errors import InputError, MissingDependencyError, RagexamError
from ragexam.metrics.judge.cache import public_endpoint

__all__ = ["ChatClient", "ChatReply", "CallFailed", "EndpointError", "DEFAULT_BASE_URL",
           "RESPONSE_FORMATS"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: ``response_format`` levels, strongest first; ``auto`` starts at ``json_schema``.
RESPONSE_FORMATS = ("auto", "json_schema", "json_object", "none")
_LADDER = ("json_schema", "json_object", "none")


class _BadResponse(Exception):
    pass


class EndpointError(RagexamError):
    """The endpoint refuses the configuration (401/403/404): stop, fix the settings."""


class CallFailed(Exception):
    """A request that did not produce a reply after all retries.

    ``kind``: ``rate_limited`` | ``server_error`` | ``timeout`` | ``connection_error`` |
    ``bad_response`` | ``bad_request`` | ``http_error``; ``message``: redacted detail; ``requests``: HTTP requests
    made for it."""

    def __init__(self, kind: str, message: str, requests: int) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.requests = requests


@dataclass(frozen=True)
class ChatReply:
    """One completion: the message ``content`` (``None`` if the model sent none), ``refusal``
    (OpenAI's structured-output refusal text, else ``None``), ``finish_reason``, token ``usage``
    (``None`` when the endpoint does not report it), the HTTP ``requests`` spent on it (retries
    included) and the ``response_format`` level that was used."""

    content: Optional[str]
    refusal: Optional[str]
    finish_reason: Optional[str]
    prompt_tokens: Optional[int]
    completion_tokens: Optional[int]
    requests: int
    response_format: str
    model: Optional[str] = None


class ChatClient:
    """A thread-safe chat client (see the module docstring).

    :param model: model name sent to the endpoint.
    :param base_url: endpoint root (``.../v1``).
    :param api_key: the key; never stored or printed.
    :param timeout: seconds per HTTP request.
    :param max_retries: retries of one request on 429/5xx/timeout/connection errors (>= 0).
    :param backoff: first backoff step in seconds; :param max_backoff: cap of any wait.
    :param response_format: ``auto`` (= ``json_schema`` first), ``json_schema``,
        ``json_object`` or ``none``.
    :param sleep: the sleep function (tests pass a recorder).
    """

    def __init__(self, model: str, *, base_url: Optional[str] = None, api_key: Optional[str] = None,
                 timeout: float = 60.0, max_retries: int = 4, backoff: float = 1.0,
                 max_backoff: float = 60.0, response_format: str = "auto",
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InputError(f"expected a model name, received {model!r}", source="judge", field="model")
        if response_format not in RESPONSE_FORMATS:
            raise InputError(f"received {response_format!r}; expected one of {', '.join(RESPONSE_FORMATS)}",
                             source="judge", field="response_format")
        for name, value, low in (("timeout", timeout, 0.0), ("backoff", backoff, 0.0),
                                 ("max_backoff", max_backoff, 0.0)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= low:
                raise InputError(f"received {value!r}; expected a number >= {low:g}", source="judge",
                                 field=name)
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InputError(f"received {max_retries!r}; expected an integer >= 0", source="judge",
                             field="max_retries")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if public_endpoint(self.base_url) == DEFAULT_BASE_URL:
                raise InputError("no API key: set the OPENAI_API_KEY environment variable (or pass "
                                 "--api-key); for a local OpenAI-compatible server pass --base-url "
                                 "(or set OPENAI_BASE_URL).", source="judge", field="api_key")
            key = "unused"
        self.__key = key
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self._level = "json_schema" if response_format == "auto" else response_format
        self._sleep = sleep
        self._rng = random.Random()
        self._lock = threading.Lock()
        self._client = None
        self.requests = 0

    def __repr__(self) -> str:
        return f"ChatClient(model={self.model!r}, endpoint={self.endpoint!r})"

    @property
    def endpoint(self) -> str:
        """The base URL without credentials, query string or fragment."""
        return public_endpoint(self.base_url)

    @property
    def response_format(self) -> str:
        """The ``response_format`` level currently used (it only ever moves down the ladder)."""
        return self._level

    def redact(self, text: Optional[str]) -> Optional[str]:
        """``text`` with the API key (and anything shaped like a bearer token) replaced."""
        if text is None:
            return None
        key = self.__key
        if key and key != "unused":
            text = text.replace(key, "[redacted]")
        return re.sub(r"(?i)(bearer\s+)\S+", r"\1[redacted]", text)

    def _openai(self):
        if self._client is None:
            with self._lock:
                if self._client is None:
                    try:
                        import openai
                    except ImportError:
                        raise MissingDependencyError("The LLM judge", "openai", "openai") from None
                    self._client = openai.OpenAI(api_key=self.__key, base_url=self.base_url,
                                                 max_retries=0, timeout=self.timeout)
        return self._client

    # -- one completion ----------------------------------------------------------------------------
    def complete(self, messages: List[Dict[str, str]], *, max_tokens: Optional[int] = None,
                 temperature: Optional[float] = None, seed: Optional[int] = None,
                 schema: Optional[Dict[str, Any]] = None, schema_name: str = "reply") -> ChatReply:
        """One chat completion, with retries and the ``response_format`` fallback.

        Without ``schema`` no ``response_format`` is sent (plain text, e.g. answers).
        :raises CallFailed: when no reply could be obtained; :raises EndpointError: 401/403/404.
        """
        level = self._level if schema is not None else "none"
        requests = 0
        while True:
            kwargs: Dict[str, Any] = {"model": self.model, "messages": messages}
            if max_tokens is not None:
                kwargs["max_tokens"] = max_tokens
            if temperature is not None:
                kwargs["temperature"] = temperature
            if seed is not None:
                kwargs["seed"] = seed
            if level == "json_schema":
                kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": schema_name, "schema": schema, "strict": True}}
            elif level == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
            try:
                resp, n = self._send(kwargs)
            except CallFailed as err:
                requests += err.requests
                if err.kind == "bad_request" and level != "none":
                    level = _LADDER[_LADDER.index(level) + 1]
                    continue
                raise CallFailed(err.kind, err.message, requests) from None
            requests += n
            if schema is not None:
                with self._lock:  # the lower level worked: stay there
                    if _LADDER.index(level) > _LADDER.index(self._level):
                        self._level = level
            return self._reply(resp, requests, level)

    def _reply(self, resp: Any, requests: int, level: str) -> ChatReply:
        choices = getattr(resp, "choices", None) or []
        if not choices:
            return ChatReply(None, None, None, None, None, requests, level, getattr(resp, "model", None))
        choice = choices[0]
        msg = getattr(choice, "message", None)
        content = getattr(msg, "content", None) if msg is not None else None
        refusal = getattr(msg, "refusal", None) if msg is not None else None
        usage = getattr(resp, "usage", None)
        pt = getattr(usage, "prompt_tokens", None) if usage is not None else None
        ct = getattr(usage, "completion_tokens", None) if usage is not None else None
        return ChatReply(content if isinstance(content, str) else None,
                         refusal if isinstance(refusal, str) else None,
                         getattr(choice, "finish_reason", None),
                         pt if isinstance(pt, int) else None, ct if isinstance(ct, int) else None,
                         requests, level, getattr(resp, "model", None))

    def _send(self, kwargs: Dict[str, Any]):
        import openai

        client = self._openai()
        attempt = 0
        while True:
            with self._lock:
                self.requests += 1
            try:
                resp = client.chat.completions.create(**kwargs)
                choices = getattr(resp, "choices", None)
                if not isinstance(choices, list) or not choices or getattr(choices[0], "message", None) is None:
                    raise _BadResponse("the response is not a chat completion (no choices with a message)")
                return resp, attempt + 1
            except _BadResponse as err:
                kind, status, exc = "bad_response", None, err
            except ValueError as err:  # a 200 whose body is not JSON (e.g. a proxy's error page)
                kind, status, exc = "bad_response", None, _BadResponse(f"the response is not JSON ({err})")
            except openai.APITimeoutError as err:
                kind, status, exc = "timeout", None, err
            except openai.APIConnectionError as err:
                kind, status, exc = "connection_error", None, err
            except openai.APIStatusError as err:
                status, exc = err.status_code, err
                if status in (401, 403, 404):
                    hint = {401: "check OPENAI_API_KEY / --api-key",
                            403: "the key may lack access to this model",
                            404: "check the model name and --base-url"}[status]
                    raise EndpointError(f"{self.endpoint} refused the request for model {self.model!r}: "
                                        f"HTTP {status}: {self._short(err)} ({hint}).") from None
                if status in (400, 422):
                    raise CallFailed("bad_request", f"HTTP {status}: {self._short(err)}", attempt + 1) from None
                if status == 429:
                    kind = "rate_limited"
                elif status >= 500:
                    kind = "server_error"
                elif status == 408:
                    kind = "timeout"
                else:
                    raise CallFailed("http_error", f"HTTP {status}: {self._short(err)}", attempt + 1) from None
            except openai.APIError as err:  # any other client-side failure to read the response
                kind, status, exc = "bad_response", None, err
            if attempt >= self.max_retries:
                what = f"HTTP {status}" if status is not None else kind.replace("_", " ")
                raise CallFailed(kind, f"{what} after {attempt + 1} attempts: {self._short(exc)}",
                                 attempt + 1)
            self._sleep(self._delay(exc, attempt))
            attempt += 1

    def _delay(self, err: Exception, attempt: int) -> float:
        response = getattr(err, "response", None)
        headers = getattr(response, "headers", None) if response is not None else None
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
        with self._lock:
            return d / 2 + self._rng.uniform(0, d / 2)

    def _short(self, err: Exception) -> str:
        text = str(err).strip()
        text = text.splitlines()[0] if text else type(err).__name__
        return self.redact(text[:300]) or ""
