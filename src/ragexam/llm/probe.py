"""What an endpoint supports, asked once and remembered: ``json_schema``, ``json_object``, ``logprobs``, ``seed``.

:func:`probe` sends **one** small chat completion that asks for all four at once -- a reply under a JSON
schema that allows only ``"alpha"`` or ``"beta"`` to a prompt that asks for ``"gamma"``, with
``logprobs``, ``top_logprobs`` and a ``seed``:

==================  ===================================================================================
result              meaning
==================  ===================================================================================
``json_schema``     ``enforced`` (the reply obeyed the schema against the prompt), ``accepted`` (sent,
                    not enforced: the reply broke it), ``rejected`` (HTTP 400/422)
``json_object``     ``accepted`` / ``rejected`` -- asked only when ``json_schema`` is not enforced
``logprobs``        ``yes`` (the reply carried token log-probabilities with alternatives), ``no`` (accepted,
                    none sent), ``unreadable`` (values that are not log-probabilities, such as 1000:
                    the note says which), ``rejected``
``top_logprobs``    alternatives per token the endpoint sent
``seed``            ``accepted`` / ``rejected``
==================  ===================================================================================

Only when that request is refused (HTTP 400/422) are the features asked about one at a time (up to four more
small requests), so a refusal is pinned on the feature that caused it.  The result is stored in the LLM
call cache (kind ``probe``, keyed by model and endpoint) and read back by later runs; ``refresh=True`` asks
again.  ``ragexam llm probe --base-url URL --model M`` prints it; the judge's ``--scoring auto`` reads it
to decide whether to weigh scores by their probabilities (:mod:`ragexam.metrics.judge.core`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ragexam.llm.cache import request_key, utc_now
from ragexam.llm.logprobs import UnreadableLogprobs, parse_logprobs
from ragexam.llm.transport import CallFailed, EndpointError

__all__ = ["ProbeResult", "probe", "cached_probe", "PROBE_FORMAT", "TOP_LOGPROBS", "failure_help", "unreachable"]

PROBE_FORMAT = "ragexam-probe/1"
#: alternatives per token asked for (OpenAI allows up to 20)
TOP_LOGPROBS = 10
_SCHEMA = {"type": "object", "properties": {"word": {"type": "string", "enum": ["alpha", "beta"]}},
           "required": ["word"], "additionalProperties": False}
_MESSAGES = [{"role": "user", "content": 'Reply with exactly this JSON object and nothing else: {"word": "gamma"}'}]


@dataclass(frozen=True)
class ProbeResult:
    """What :func:`probe` found (see the module docstring); ``requests``: HTTP requests it took; ``notes``:
    the endpoint's own words for what it refused; ``cached``: read from the cache."""

    model: str
    endpoint: str
    json_schema: str
    json_object: str
    logprobs: str
    top_logprobs: int
    seed: str
    checked: str
    requests: int = 0
    notes: Tuple[str, ...] = ()
    cached: bool = False

    @property
    def has_logprobs(self) -> bool:
        return self.logprobs == "yes"

    def to_dict(self) -> Dict[str, Any]:
        return {"model": self.model, "endpoint": self.endpoint, "json_schema": self.json_schema,
                "json_object": self.json_object, "logprobs": self.logprobs, "top_logprobs": self.top_logprobs,
                "seed": self.seed, "checked": self.checked, "requests": self.requests, "notes": list(self.notes),
                "cached": self.cached}

    @classmethod
    def from_dict(cls, d: Dict[str, Any], *, cached: bool = False) -> "ProbeResult":
        return cls(d["model"], d["endpoint"], d["json_schema"], d["json_object"], d["logprobs"],
                   int(d.get("top_logprobs") or 0), d["seed"], d.get("checked", ""), int(d.get("requests") or 0),
                   tuple(d.get("notes") or ()), cached)


#: the completion limit of every probe call (``--max-tokens`` does not change it)
MAX_TOKENS = 16


def _key(model: str, endpoint: str) -> str:
    return request_key({"format": PROBE_FORMAT, "kind": "probe", "model": model, "endpoint": endpoint})


def _body(model: str, *, schema: bool = False, json_object: bool = False, logprobs: bool = False,
          seed: bool = False) -> Dict[str, Any]:
    body: Dict[str, Any] = {"model": model, "messages": _MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 0}
    if schema:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "ragexam_probe", "schema": _SCHEMA,
                                                                          "strict": True}}
    elif json_object:
        body["response_format"] = {"type": "json_object"}
    if logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = TOP_LOGPROBS
    if seed:
        body["seed"] = 12345
    return body


@dataclass
class _Asked:
    requests: int = 0
    notes: List[str] = field(default_factory=list)

    def send(self, client: Any, body: Dict[str, Any], what: str) -> Optional[Dict[str, Any]]:
        """The choice of the reply, or ``None`` when the endpoint refused the request (400/422)."""
        from ragexam.llm.client import _is_chat_completion

        try:
            resp, n = client.post_json("chat/completions", body, check=_is_chat_completion)
        except CallFailed as err:
            self.requests += err.requests
            if err.kind == "bad_request":
                self.notes.append(f"{what}: {err.message}")
                return None
            raise
        self.requests += n
        return resp["choices"][0]


def _schema_result(choice: Dict[str, Any]) -> str:
    content = (choice.get("message") or {}).get("content")
    try:
        obj = json.loads(content or "")
    except ValueError:
        return "accepted"
    return "enforced" if isinstance(obj, dict) and obj.get("word") in ("alpha", "beta") else "accepted"


def _logprobs_result(choice: Dict[str, Any], notes: List[str]) -> Tuple[str, int]:
    try:
        tokens = parse_logprobs(choice)
    except UnreadableLogprobs as err:
        notes.append(f"logprobs: {err}")
        return "unreadable", 0
    if not tokens:
        return "no", 0
    top = max(len(t.top) for t in tokens)
    return ("yes" if top >= 2 else "no"), top


def probe(client: Any, cache: Any = None, *, refresh: bool = False) -> ProbeResult:
    """What ``client``'s endpoint supports (see the module docstring), from ``cache`` when it was asked
    before (unless ``refresh``).  :raises CallFailed: / :raises EndpointError: when the endpoint cannot be
    asked at all."""
    if cache is not None and not refresh:
        got = cached_probe(client, cache)
        if got is not None:
            return got
    asked = _Asked()
    choice = asked.send(client, _body(client.model, schema=True, logprobs=True, seed=True), "json_schema + logprobs + seed")
    if choice is not None:
        schema = _schema_result(choice)
        logprobs, top = _logprobs_result(choice, asked.notes)
        seed = "accepted"
    else:
        c = asked.send(client, _body(client.model, schema=True), "json_schema")
        schema = _schema_result(c) if c is not None else "rejected"
        c = asked.send(client, _body(client.model, logprobs=True), "logprobs")
        logprobs, top = _logprobs_result(c, asked.notes) if c is not None else ("rejected", 0)
        seed = "accepted" if asked.send(client, _body(client.model, seed=True), "seed") is not None else "rejected"
    json_object = "not asked (json_schema enforced)"
    if schema != "enforced":
        json_object = "accepted" if asked.send(client, _body(client.model, json_object=True), "json_object") \
            is not None else "rejected"
    result = ProbeResult(client.model, client.endpoint, schema, json_object, logprobs, top, seed, utc_now(),
                         asked.requests, tuple(client.redact(n) or "" for n in asked.notes))
    if cache is not None:
        cache.put(_key(client.model, client.endpoint), "probe", client.model, client.endpoint, result.to_dict())
    return result


def cached_probe(client: Any, cache: Any) -> Optional[ProbeResult]:
    """The stored probe of ``client``'s model and endpoint, or ``None`` (nothing is sent)."""
    if cache is None:
        return None
    value = cache.get(_key(client.model, client.endpoint))
    return ProbeResult.from_dict(value, cached=True) if value else None


#: what to do about a request that failed, by :attr:`CallFailed.kind`
_FIXES = {
    "connection_error": "nothing answers at that address: start the server, or correct --base-url (scheme, host, "
                        "port and the /v1 path)",
    "timeout": "the endpoint did not answer in time: check that the server is up and not overloaded, or raise "
               "--timeout",
    "server_error": "the server failed: read its log, then retry (or raise --max-retries)",
    "rate_limited": "the endpoint is rate-limiting: wait and retry, or raise --max-retries",
    "bad_response": "the reply is not an OpenAI chat completion (an HTML page from a proxy, or another kind of "
                    "server): --base-url must be the /v1 address of an OpenAI-compatible server",
    "bad_request": "the endpoint refused even a plain request: check --model and that the server speaks the "
                   "OpenAI chat completions API",
    "http_error": "check --base-url and the server's documentation",
}


def failure_help(err: CallFailed) -> str:
    """The fix for a request that failed, by its kind (one sentence)."""
    return _FIXES.get(err.kind, "check --base-url and the server")


def unreachable(err: CallFailed, endpoint: str, what: str = "what it supports") -> EndpointError:
    """The error that stops a command which cannot ask ``endpoint`` anything (``llm probe``, the fitness probe):
    where, what went wrong (the transport's words) and the fix."""
    return EndpointError(f"could not ask {endpoint} {what}: {err.message}; {failure_help(err)}.")
