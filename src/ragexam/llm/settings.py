"""One object for "an LLM endpoint and how to call it": :class:`LLMSettings`.

Every LLM task (the judge, answer generation, OpenAI-compatible embeddings, later the question
generator and rerankers) takes its endpoint settings from one :class:`LLMSettings`, validated
here and nowhere else.  A value out of range raises :class:`~ragexam.errors.InputError` naming
the command-line option (``--timeout``), what was received and what is expected, before any
request is sent.

========================  ==========  ================================================================
field (option)            default     meaning
========================  ==========  ================================================================
model (``--model``)       --          model name sent to the endpoint
base_url                  env/.env    endpoint root (``.../v1``); see :func:`resolve_endpoint`
api_key                   env/.env    the key; never in ``repr``, signatures, caches or messages
timeout                   60          seconds one HTTP request may take in all: its deadline (> 0)
max_response_bytes        32 MiB      the largest reply accepted, after decompression (>= 1024; ``None``:
                                      ``$RAGEXAM_MAX_RESPONSE_BYTES``, else 32 MiB; :mod:`ragexam.llm.transport`)
max_retries               4           retries of one request on 429/5xx/timeouts/connection errors
backoff, max_backoff      1, 60       first backoff step and cap of any wait, seconds (>= 0)
concurrency               4           calls in flight at once (>= 1)
cache, cache_dir          on, --      the call cache (:mod:`ragexam.llm.cache`) and its directory
price                     table       USD per 1M (input, output) tokens, overriding :data:`~ragexam.llm.cost.PRICES`
temperature               0           sampling temperature (0-2)
max_tokens                task's      completion limit per reply (>= 1; ``None``: the task's default)
seed                      none        passed to the endpoint (not all honour it)
response_format           auto        ``auto`` | ``json_schema`` | ``json_object`` | ``none`` (structured replies)
scoring                   auto        how a judge reads a score: ``sample`` (the written one), ``probability``
                                      (weighted by the token log-probabilities it asks for), ``auto``
                                      (``probability`` where the endpoint returns them; :mod:`ragexam.llm.probe`)
reasoning                 True        whether a judge asks for its reasoning (``False``: an empty one, which a
                                      score written first does not depend on; far fewer tokens)
quoted                    True        whether a claim (statement) a context states in the same words is supported
                                      without the judge's say (:mod:`ragexam.metrics.judge.quoted`)
claim_wait                derived     seconds to wait for another process's in-flight call before
                                      taking it over (default ``timeout * (max_retries + 1)``)
========================  ==========  ================================================================

Endpoint and key (:func:`resolve_endpoint`): explicit value > environment variable
(``OPENAI_BASE_URL``, ``OPENAI_API_KEY``) > ``.env`` in the current directory
(:mod:`ragexam.llm.dotenv`); without a base URL the OpenAI API is used, which needs a key; any
other endpoint without a key gets the placeholder ``"unused"`` (local servers ignore it).  A client
(:class:`~ragexam.llm.client.LLMClient`) without the key the OpenAI API needs is built anyway and refuses
at its first request, so a dry run (which sends nothing) needs no key.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from ragexam.errors import InputError, audience, integer_in, number_in, one_of

__all__ = ["LLMSettings", "Endpoint", "resolve_endpoint", "public_endpoint", "DEFAULT_BASE_URL",
           "RESPONSE_FORMATS", "SCORINGS", "option_name", "NO_KEY", "no_key", "settings_object", "object_expected",
           "dict_keywords"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: ``response_format`` levels, strongest first; ``auto`` starts at ``json_schema``.
RESPONSE_FORMATS = ("auto", "json_schema", "json_object", "none")
_PLACEHOLDER_KEY = "unused"
#: how a judge reads scores (:mod:`ragexam.metrics.judge.core`)
SCORINGS = ("auto", "sample", "probability")
#: what is said when the OpenAI API is to be called without a key
NO_KEY = ("no API key: set the OPENAI_API_KEY environment variable (or pass --api-key, or put OPENAI_API_KEY=... in "
          "a .env file in the current directory); for a local OpenAI-compatible server pass --base-url (or set "
          "OPENAI_BASE_URL).")


def option_name(field_name: str) -> str:
    """The command-line option of a settings field: ``max_retries`` -> ``--max-retries``."""
    return "--" + field_name.replace("_", "-")


def _source(field_name: str) -> str:
    """Where a settings field's problem is: its option on the command line (:func:`option_name`), the
    :class:`LLMSettings` object in Python (:func:`ragexam.errors.audience`)."""
    return option_name(field_name) if audience() == "cli" else "LLMSettings"


def no_key() -> str:
    """What is said when the OpenAI API is to be called without a key (:data:`NO_KEY` on the command line), with
    the fix in the reader's own syntax."""
    if audience() == "cli":
        return NO_KEY
    return ("no API key: set the OPENAI_API_KEY environment variable (or pass LLMSettings(..., api_key=...), or put "
            "OPENAI_API_KEY=... in a .env file in the current directory); for a local OpenAI-compatible server pass "
            "LLMSettings(..., base_url=...) (or set OPENAI_BASE_URL).")


def _bad(name: str, value: Any, expected: str) -> InputError:
    opt = _source(name)
    return InputError(f"received {value!r}; expected {expected}", source=opt, field=name)


def _number(name: str, value: Any, *, low: float, strict: bool = False, high: Optional[float] = None,
            what: str = "a number") -> float:
    return number_in(value, low, high, above=strict, source=_source(name), field=name, what=what)


def _integer(name: str, value: Any, *, low: int) -> int:
    return integer_in(value, low, source=_source(name), field=name)


def is_http_url(url: str) -> bool:
    """True for an ``http(s)://host[:port]...`` URL with a readable port."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        if ok:
            parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return False
    return ok


def public_endpoint(url: str) -> str:
    """``url`` without user info, query string or fragment: safe to log, store and hash."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # not a number or out of range: keep it as written, it cannot be a secret
        port = parts.netloc.rsplit("@", 1)[-1].rpartition(":")[2]
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


@dataclass(frozen=True)
class Endpoint:
    """A resolved endpoint: ``base_url`` (as given, credentials included: only for sending),
    ``public`` (:func:`public_endpoint` of it), the key, and where each came from
    (``argument``, ``environment``, a ``.env`` path, ``default`` or ``placeholder``)."""

    base_url: str
    api_key: str = field(repr=False)
    base_url_source: str = "default"
    api_key_source: str = "placeholder"

    @property
    def public(self) -> str:
        return public_endpoint(self.base_url)

    @property
    def is_openai(self) -> bool:
        return self.public == DEFAULT_BASE_URL


def resolve_endpoint(base_url: Optional[str] = None, api_key: Optional[str] = None, *,
                     directory: "str | os.PathLike[str] | None" = None, require_key: bool = True) -> Endpoint:
    """The endpoint to call, by the precedence in the module docstring.

    :raises InputError: the base URL is not an ``http(s)://host...`` URL (naming where it came
        from), or no key was found for the OpenAI API (with ``require_key=False`` the endpoint comes back
        with an empty key whose source is ``missing``).
    """
    from ragexam.llm.dotenv import lookup

    url, url_source = lookup("OPENAI_BASE_URL", base_url, directory=directory)
    if url is None:
        url, url_source = DEFAULT_BASE_URL, "default"
    url = url.strip().rstrip("/")
    if not is_http_url(url):
        where = {"argument": _source("base_url"), "environment": "OPENAI_BASE_URL"}.get(url_source, url_source)
        raise InputError(f"received {public_endpoint(url) or url!r}; expected an http(s) URL of an "
                         "OpenAI-compatible endpoint, e.g. http://localhost:11434/v1", source=where, field="base_url")
    key, key_source = lookup("OPENAI_API_KEY", api_key, directory=directory)
    if key is None:
        if public_endpoint(url) == DEFAULT_BASE_URL:
            if require_key:
                raise InputError(no_key(), source=_source("api_key"), field="api_key")
            return Endpoint(url, "", url_source or "default", "missing")
        key, key_source = _PLACEHOLDER_KEY, "placeholder"
    return Endpoint(url, key, url_source or "default", key_source)


@dataclass(frozen=True)
class LLMSettings:
    """Settings of one LLM endpoint and of the calls made to it (see the module docstring).

    Validated on construction; :meth:`replace` returns a validated copy.  ``api_key`` is not
    shown by ``repr`` and not returned by :meth:`to_dict`.
    """

    model: str
    base_url: Optional[str] = None
    api_key: Optional[str] = field(default=None, repr=False)
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 60.0
    concurrency: int = 4
    cache: bool = True
    cache_dir: Union[str, "os.PathLike[str]", None] = None
    price: Optional[Tuple[float, float]] = None
    temperature: float = 0.0
    max_tokens: Optional[int] = None
    seed: Optional[int] = None
    response_format: str = "auto"
    claim_wait: Optional[float] = None
    scoring: str = "auto"
    reasoning: bool = True
    quoted: bool = True
    max_response_bytes: Optional[int] = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise _bad("model", self.model, "a model name")
        for name in ("base_url", "api_key"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, str):
                raise InputError(f"received a {type(v).__name__}; expected a string", source=_source(name),
                                 field=name)
        _number("timeout", self.timeout, low=0.0, strict=True, what="a number of seconds")
        _integer("max_retries", self.max_retries, low=0)
        _number("backoff", self.backoff, low=0.0, what="a number of seconds")
        _number("max_backoff", self.max_backoff, low=0.0, what="a number of seconds")
        _integer("concurrency", self.concurrency, low=1)
        if not isinstance(self.cache, bool):
            raise _bad("cache", self.cache, "True or False")
        if self.price is not None:
            p = self.price
            if (not isinstance(p, (tuple, list)) or len(p) != 2
                    or not all(not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x) and x >= 0
                               for x in p)):
                raise _bad("price", p, "two numbers >= 0: USD per 1M input and output tokens")
            object.__setattr__(self, "price", (float(p[0]), float(p[1])))
        _number("temperature", self.temperature, low=0.0, high=2.0)
        if self.max_tokens is not None:
            _integer("max_tokens", self.max_tokens, low=1)
        if self.seed is not None:
            integer_in(self.seed, source=_source("seed"), field="seed")
        one_of(self.response_format, RESPONSE_FORMATS, source=_source("response_format"), field="response_format")
        if self.claim_wait is not None:
            _number("claim_wait", self.claim_wait, low=0.0, what="a number of seconds")
        one_of(self.scoring, SCORINGS, source=_source("scoring"), field="scoring")
        if not isinstance(self.reasoning, bool):
            raise InputError(f"received {self.reasoning!r}; expected True or False", source="--no-reasoning",
                             field="reasoning")
        if not isinstance(self.quoted, bool):
            raise InputError(f"received {self.quoted!r}; expected True or False", source="--judge-quoted",
                             field="quoted")
        if self.max_response_bytes is not None:
            _integer("max_response_bytes", self.max_response_bytes, low=1024)

    def replace(self, **changes: Any) -> "LLMSettings":
        """A validated copy with ``changes``."""
        return replace(self, **changes)

    @property
    def claim_wait_seconds(self) -> float:
        """:attr:`claim_wait`, or ``timeout * (max_retries + 1)`` (one request's longest life)."""
        return float(self.claim_wait) if self.claim_wait is not None else self.timeout * (self.max_retries + 1)

    def cache_path(self) -> Optional[Path]:
        """The cache directory (``None`` when the cache is off)."""
        if not self.cache:
            return None
        if self.cache_dir is not None:
            return Path(self.cache_dir).expanduser()
        from ragexam.storage.paths import cache_dir

        return cache_dir()

    def open_cache(self):
        """The :class:`~ragexam.llm.cache.LLMCache` in :meth:`cache_path` (``None`` when off)."""
        from ragexam.llm.cache import LLMCache

        path = self.cache_path()
        return LLMCache(path) if path is not None else None

    def resolve(self, *, require_key: bool = True) -> Endpoint:
        """:func:`resolve_endpoint` of :attr:`base_url` and :attr:`api_key`."""
        return resolve_endpoint(self.base_url, self.api_key, require_key=require_key)

    def to_dict(self) -> Dict[str, Any]:
        """The settings without the key (the base URL without credentials), for reports."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "api_key"}
        if out["base_url"] is not None:
            out["base_url"] = public_endpoint(out["base_url"])
        if out["cache_dir"] is not None:
            out["cache_dir"] = str(out["cache_dir"])
        if out["price"] is not None:
            out["price"] = list(out["price"])
        return out


def object_expected(value: Any, param: str, cls: str, example: str) -> InputError:
    """What is said when ``param`` receives ``value`` where an object of class ``cls`` (a settings object) is
    expected: the parameter, what was received and the fix, ``param=cls(example)``; for a dict, its keys are
    written as the keywords of the fix after ``example``'s first argument when ``cls`` needs one."""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    article = "an" if cls.startswith(("A", "E", "I", "O", "U", "LLM")) else "a"
    return InputError(f"received {type(value).__name__} {shown}; expected {article} {cls} object. Fix: pass "
                      f"{param}={cls}({example}).", source=param, field=param)


def dict_keywords(value: Any, first: str = "") -> Optional[str]:
    """The arguments that make a settings object of the dict ``value`` (``first`` unless the dict has it, then
    ``key=...`` per key), or ``None`` for anything but a dict of names."""
    if not (isinstance(value, Mapping) and all(isinstance(k, str) for k in value)):
        return None
    return ", ".join([*([first] if first else []), *(f"{k}=..." for k in value)])


def settings_object(value: Any, param: str, *, model: str = "'gpt-4o-mini'") -> "LLMSettings":
    """``value`` when it is an :class:`LLMSettings`; else the :func:`object_expected` error for ``param`` (a
    string is taken to be the model's name in the fix: ``judge=LLMSettings('gpt-4o-mini')``)."""
    if isinstance(value, LLMSettings):
        return value
    example = repr(value) if isinstance(value, str) else \
        dict_keywords(value, "" if isinstance(value, Mapping) and "model" in value else model) or \
        f"{model}, base_url=..., api_key=..."
    raise object_expected(value, param, "LLMSettings", example)
