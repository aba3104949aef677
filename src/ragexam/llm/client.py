"""The client of an OpenAI-compatible endpoint: chat completions, embeddings, any JSON POST.

Works with the OpenAI API (``gpt-4o-mini``), Ollama (``http://localhost:11434/v1``), vLLM,
LM Studio, TEI and anything else that speaks ``POST /v1/chat/completions`` or
``POST /v1/embeddings``.  Requests go through :class:`~ragexam.llm.transport.HTTPTransport`
(``httpx``; timeouts, the one retry policy, 401/403/404 stop the run).

Settings come from :class:`~ragexam.llm.settings.LLMSettings`: ``model``, the endpoint and key
(explicit > environment > ``.env``, :func:`~ragexam.llm.settings.resolve_endpoint`), ``timeout``,
``max_retries``, ``backoff``, ``max_backoff``, ``response_format``.  The key lives only in memory:
it is not in :attr:`LLMClient.endpoint`, ``repr``, signatures, cache keys or values, and
:meth:`LLMClient.redact` removes it (and bearer tokens) from text ragexam writes out
(:mod:`ragexam.llm.redact`) -- never from a reply before it is parsed.

Chat replies and ``response_format``
------------------------------------
:meth:`LLMClient.complete` sends one chat completion.  With a JSON ``schema`` it asks for
structured output at the client's current level of the ladder ``json_schema`` ->
``json_schema_portable`` (the same schema without ``minItems``, ``maxItems``, ``maxLength``, which some
strict implementations refuse: :func:`portable_schema`) -> ``json_object`` -> none: HTTP 400/422 while a
``response_format`` is sent is taken as "this endpoint does not support it", and the same request is sent
again one level down (then the caller parses the reply's first JSON object).  With ``logprobs=K`` the
request asks for ``logprobs`` and the ``K`` most likely tokens at each position, and the reply carries
them parsed (:mod:`ragexam.llm.logprobs`).  When a lower level succeeds, the client stays
there for later calls (:attr:`LLMClient.response_format`).  A 400 without ``response_format`` is
:class:`~ragexam.llm.transport.CallFailed` (``bad_request``).  A 2xx body that is not a chat
completion (no ``choices`` with a ``message``) is ``bad_response`` and retried.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ragexam.llm.logprobs import TokenLogprob, UnreadableLogprobs, parse_logprobs
from ragexam.llm.redact import Redactor
from ragexam.llm.settings import DEFAULT_BASE_URL, RESPONSE_FORMATS, Endpoint, LLMSettings
from ragexam.llm.transport import CallFailed, Check, EndpointError, HTTPTransport, RetryPolicy

__all__ = ["LLMClient", "ChatReply", "EmbeddingReply", "CallFailed", "EndpointError", "DEFAULT_BASE_URL",
           "RESPONSE_FORMATS", "portable_schema", "PORTABLE_DROPS"]

_LADDER = ("json_schema", "json_schema_portable", "json_object", "none")
#: schema keywords left out at the ``json_schema_portable`` level
PORTABLE_DROPS = ("minItems", "maxItems", "maxLength", "minLength")


def portable_schema(schema: Any) -> Any:
    """``schema`` without the keywords of :data:`PORTABLE_DROPS`, anywhere in it."""
    if isinstance(schema, dict):
        return {k: portable_schema(v) for k, v in schema.items() if k not in PORTABLE_DROPS}
    if isinstance(schema, list):
        return [portable_schema(v) for v in schema]
    return schema


def _hints(endpoint: Endpoint) -> Dict[int, str]:
    came = {"argument": "the key was passed explicitly", "environment": "the key came from the environment",
            "placeholder": "no key was set"}.get(endpoint.api_key_source,
                                                 f"the key came from {endpoint.api_key_source}")
    return {401: f"check OPENAI_API_KEY / --api-key; {came}",
            403: "the key may lack access to this model",
            404: "check the model name and --base-url"}


@dataclass(frozen=True)
class ChatReply:
    """One completion: the message ``content`` (``None`` if the model sent none), ``refusal``
    (OpenAI's structured-output refusal text, else ``None``), ``finish_reason``, token ``usage``
    (``None`` when the endpoint does not report it), the HTTP ``requests`` spent on it (retries
    and ``response_format`` fallbacks included), the ``response_format`` level used and, when asked for,
    the tokens' ``logprobs`` (``None`` when the endpoint sent none, or sent values that are not log-probabilities:
    then ``logprobs_error`` says which, :func:`ragexam.llm.logprobs.parse_logprobs`)."""

    content: Optional[str]
    refusal: Optional[str]
    finish_reason: Optional[str]
    prompt_tokens: Optional[int]
    completion_tokens: Optional[int]
    requests: int
    response_format: str
    model: Optional[str] = None
    logprobs: Optional[List[TokenLogprob]] = None
    logprobs_error: Optional[str] = None


@dataclass(frozen=True)
class EmbeddingReply:
    """The ``vectors`` of one embeddings request in input order (as the endpoint sent them,
    sorted by ``index``), its ``prompt_tokens`` (``None`` if not reported) and ``requests``."""

    vectors: List[List[float]]
    prompt_tokens: Optional[int]
    requests: int


def _is_chat_completion(body: Any) -> Optional[str]:
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) \
            or not isinstance(choices[0].get("message"), dict):
        return "the response is not a chat completion (no choices with a message)"
    return None


def _is_embedding_list(body: Any) -> Optional[str]:
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(
            isinstance(d, dict) and isinstance(d.get("embedding"), list) and isinstance(d.get("index", 0), int)
            for d in data):
        return "the response is not an embedding list (no 'data' of {index, embedding})"
    return None


def _int(v: Any) -> Optional[int]:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class LLMClient:
    """A thread-safe client of one OpenAI-compatible endpoint (see the module docstring).

    Build it from :class:`~ragexam.llm.settings.LLMSettings` (``LLMClient(settings)``) or from the
    same fields as keywords (``LLMClient("gpt-4o-mini", timeout=30)``).  ``sleep`` replaces
    ``time.sleep`` between retries (tests pass a recorder).

    :raises InputError: a setting out of range or a bad base URL; no key for the OpenAI API at the first
        request (:meth:`require_key`), so a client that only plans needs none.
    """

    def __init__(self, settings: "LLMSettings | str", *, sleep: Callable[[float], None] = time.sleep,
                 **fields: Any) -> None:
        if isinstance(settings, LLMSettings):
            if fields:
                settings = settings.replace(**fields)
        else:
            settings = LLMSettings(settings, **fields)
        self.settings = settings
        self._endpoint = settings.resolve(require_key=False)
        self.model = settings.model
        self.base_url = self._endpoint.base_url
        self.redactor = Redactor([self._endpoint.api_key])
        self._level = "json_schema" if settings.response_format == "auto" else settings.response_format
        self._lock = threading.Lock()
        self.transport = HTTPTransport(
            timeout=settings.timeout,
            retry=RetryPolicy(settings.max_retries, settings.backoff, settings.max_backoff),
            headers={"Authorization": f"Bearer {self._endpoint.api_key}"}, redactor=self.redactor, sleep=sleep,
            max_connections=max(settings.concurrency, 10), max_response_bytes=settings.max_response_bytes)
        self._hints = _hints(self._endpoint)

    def __repr__(self) -> str:
        return f"LLMClient(model={self.model!r}, endpoint={self.endpoint!r})"

    def __getstate__(self) -> Dict[str, Any]:
        """Pickles (for calls on Ray actors, :mod:`ragexam.exec`) without its lock; the transport drops its
        connections.  The key travels with it: the actors must send it."""
        state = dict(self.__dict__)
        state["_lock"] = None
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def require_key(self) -> None:
        """:class:`~ragexam.errors.InputError` when the endpoint is the OpenAI API and no key was found."""
        if self._endpoint.api_key_source == "missing":
            from ragexam.errors import InputError
            from ragexam.llm.settings import _source, no_key

            raise InputError(no_key(), source=_source("api_key"), field="api_key")

    @property
    def endpoint(self) -> str:
        """The base URL without credentials, query string or fragment."""
        return self._endpoint.public

    @property
    def key_source(self) -> str:
        """Where the key came from: ``argument``, ``environment``, a ``.env`` path or ``placeholder``."""
        return self._endpoint.api_key_source

    @property
    def requests(self) -> int:
        """HTTP requests sent so far (retries included)."""
        return self.transport.requests

    @property
    def timeout(self) -> float:
        return self.settings.timeout

    @property
    def max_retries(self) -> int:
        return self.settings.max_retries

    @property
    def response_format(self) -> str:
        """The ``response_format`` level currently used (it only ever moves down the ladder)."""
        return self._level

    def redact(self, text: Optional[str]) -> Optional[str]:
        """``text`` with the API key and bearer tokens replaced; only for text written out."""
        return self.redactor.text(text)

    def redact_value(self, value: Any) -> Any:
        """:meth:`redact` applied to every string in a JSON-like value."""
        return self.redactor.value(value)

    def url(self, path: str) -> str:
        """``path`` under the base URL (an absolute ``http(s)://`` URL is returned as is)."""
        if path.startswith(("http://", "https://")):
            return path
        return self.base_url + "/" + path.lstrip("/")

    # -- any JSON POST ----------------------------------------------------------------------------
    def post_json(self, path: str, body: Any, *, check: Optional[Check] = None,
                  hints: Optional[Mapping[int, str]] = None) -> Tuple[Any, int]:
        """POST ``body`` to ``path`` under the base URL with this client's key, timeouts and
        retries (e.g. a ``/rerank`` endpoint); returns ``(parsed JSON, requests)``.  See
        :meth:`~ragexam.llm.transport.HTTPTransport.post_json`."""
        self.require_key()
        return self.transport.post_json(self.url(path), body, check=check, what=f"for model {self.model!r}",
                                        hints={**self._hints, **dict(hints or {})})

    # -- chat completions ---------------------------------------------------------------------------
    def complete(self, messages: List[Dict[str, str]], *, max_tokens: Optional[int] = None,
                 temperature: Optional[float] = None, seed: Optional[int] = None,
                 schema: Optional[Dict[str, Any]] = None, schema_name: str = "reply",
                 logprobs: Optional[int] = None, extra: Optional[Mapping[str, Any]] = None) -> ChatReply:
        """One chat completion, with retries and the ``response_format`` fallback.

        Without ``schema`` no ``response_format`` is sent (plain text, e.g. answers).  ``logprobs``: ask for
        token log-probabilities with that many alternatives per position; ``extra``: more body fields (e.g.
        ``frequency_penalty``).
        :raises CallFailed: when no reply could be obtained; :raises EndpointError: 401/403/404.
        """
        level = self._level if schema is not None else "none"
        requests = 0
        while True:
            body: Dict[str, Any] = {"model": self.model, "messages": messages}
            if max_tokens is not None:
                body["max_tokens"] = max_tokens
            if temperature is not None:
                body["temperature"] = temperature
            if seed is not None:
                body["seed"] = seed
            if logprobs is not None:
                body["logprobs"] = True
                body["top_logprobs"] = logprobs
            body.update(extra or {})
            if level in ("json_schema", "json_schema_portable"):
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": schema_name, "schema": schema if level == "json_schema" else portable_schema(schema),
                    "strict": True}}
            elif level == "json_object":
                body["response_format"] = {"type": "json_object"}
            try:
                resp, n = self.post_json("chat/completions", body, check=_is_chat_completion)
            except CallFailed as err:
                requests += err.requests
                if err.kind == "bad_request" and level != "none":
                    level = _LADDER[_LADDER.index(level) + 1]
                    continue
                raise CallFailed(err.kind, err.message, requests, err.status) from None
            requests += n
            if schema is not None:
                with self._lock:  # the lower level worked: stay there
                    if _LADDER.index(level) > _LADDER.index(self._level):
                        self._level = level
            return self._reply(resp, requests, level)

    @staticmethod
    def _reply(resp: Dict[str, Any], requests: int, level: str) -> ChatReply:
        choice = resp["choices"][0]
        msg = choice["message"]
        content, refusal = msg.get("content"), msg.get("refusal")
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
        finish = choice.get("finish_reason")
        model = resp.get("model")
        try:
            tokens, unreadable = parse_logprobs(choice), None
        except UnreadableLogprobs as err:
            tokens, unreadable = None, str(err)
        return ChatReply(content if isinstance(content, str) else None,
                         refusal if isinstance(refusal, str) else None,
                         finish if isinstance(finish, str) else None,
                         _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")),
                         requests, level, model if isinstance(model, str) else None, tokens, unreadable)

    # -- embeddings -----------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str], *, dimensions: Optional[int] = None) -> EmbeddingReply:
        """One ``POST /embeddings`` request for ``texts`` (``encoding_format: float``; ``dimensions``
        when given).  :raises CallFailed: / :raises EndpointError: as :meth:`post_json`."""
        body: Dict[str, Any] = {"model": self.model, "input": list(texts), "encoding_format": "float"}
        if dimensions:
            body["dimensions"] = dimensions
        resp, n = self.post_json("embeddings", body, check=_is_embedding_list)
        data = sorted(resp["data"], key=lambda d: d.get("index", 0))
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
        return EmbeddingReply([d["embedding"] for d in data], _int(usage.get("prompt_tokens")), n)

    def close(self) -> None:
        """Close the connection pool."""
        self.transport.close()

