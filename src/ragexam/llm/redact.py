"""Keeping API keys out of everything ragexam writes.

The rule
--------
Redaction applies to text that is **written out** -- error messages, cached values, result
files, reports, anything printed -- and never to text that is **parsed** (a model's reply is
parsed as it arrived; only what is then stored or shown is redacted).  Within written text:

* every occurrence of a secret (the API key) is replaced by ``[redacted]``, but only a secret
  of at least :data:`MIN_SECRET_LENGTH` (8) characters: a shorter string cannot be told apart
  from ordinary text (with ``OPENAI_API_KEY=x`` every ``x`` would go), and a key that short
  protects nothing;
* whatever follows ``Bearer`` (an ``Authorization`` header an endpoint echoes back) is
  replaced whatever its length.

:class:`Redactor` applies the rule to a string (:meth:`Redactor.text`) or to every string
inside a JSON-like value (:meth:`Redactor.value`).

Every configured secret, everywhere
-----------------------------------
A :class:`Redactor` knows the secrets of its own client or service.  Text that can reach the user
from anywhere -- an error message that quotes a spec (``dense:openai:<KEY>?...``), a warning -- goes
through :func:`scrub`, which knows **every configured secret** of the process:

* every secret any :class:`Redactor` was built with (API keys of LLM clients and embedders, the
  header values of ``http:`` and ``rerank:http:`` services), registered when it is built;
* the API key configured for ragexam (``OPENAI_API_KEY``) in the environment or in ``.env`` in the
  current directory, even when no client was built yet;
* a value that has the shape of an API key (``sk-...``, ``hf_...``, 20 or more key characters after
  the prefix), configured or not.

Retriever specs may not hold a configured secret at all (:mod:`ragexam.retrieval.spec`): a spec is
printed, stored and part of signatures.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Iterable, Optional, Tuple

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor", "register", "configured_secrets", "scrub", "scrub_value",
           "redact_written", "holds_secret"]

#: secrets shorter than this are never looked for (see the module docstring).
MIN_SECRET_LENGTH = 8
REDACTED = "[redacted]"
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"',;]+")
#: API keys by their shape (OpenAI, Anthropic, DeepSeek... ``sk-``; Hugging Face ``hf_``).
_KEY_SHAPE = re.compile(r"\b(?:sk-[A-Za-z0-9_\-]{20,}|hf_[A-Za-z0-9]{20,})")
#: the environment / ``.env`` names whose values are ragexam's configured keys.
KEY_VARIABLES = ("OPENAI_API_KEY",)
_REGISTERED: set = set()
_LOCK = threading.Lock()


def register(secrets: Iterable[Optional[str]]) -> None:
    """Make ``secrets`` (those of :data:`MIN_SECRET_LENGTH` or more characters) known to :func:`scrub`."""
    _remember({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH})


def _remember(keep: set) -> None:
    if keep - _REGISTERED:
        with _LOCK:
            _REGISTERED.update(keep)


def configured_secrets() -> Tuple[str, ...]:
    """Every secret :func:`scrub` replaces: the registered ones and the configured key (environment, ``.env``
    in the current directory; an unreadable ``.env`` is skipped here: its reader reports it when it is used)."""
    found = set(_REGISTERED)
    for name in KEY_VARIABLES:
        found.add(os.environ.get(name) or "")
        try:
            from ragexam.llm.dotenv import DOTENV_NAME, read_dotenv

            found.add(read_dotenv(os.path.join(os.getcwd(), DOTENV_NAME)).get(name) or "")
        except Exception:  # a broken .env is reported where it is read for use, not while printing an error
            pass
    return tuple(s for s in found if len(s) >= MIN_SECRET_LENGTH)


def scrub(text: Optional[str]) -> Optional[str]:
    """``text`` with every configured secret (module docstring), bearer token and key-shaped value replaced:
    for anything shown or written that may quote what the user typed."""
    if text is None:
        return None
    return _KEY_SHAPE.sub(REDACTED, Redactor(configured_secrets(), register=False).text(text))


def scrub_value(value: Any) -> Any:
    """:func:`scrub` applied to every string of a JSON-like value (keys included)."""
    return Redactor(configured_secrets(), register=False).value(value) if not isinstance(value, str) \
        else scrub(value)


def redact_written(text: str) -> str:
    """``text`` with every configured key and header value replaced (not the key-*shaped* values :func:`scrub`
    also catches: a written corpus text may hold such a shape legitimately): for run and score folders."""
    return Redactor(configured_secrets(), register=False).text(text)


def holds_secret(text: str) -> bool:
    """True when ``text`` holds a configured secret or a key-shaped value (:func:`scrub` would change it,
    bearer tokens aside)."""
    return any(s in text for s in configured_secrets()) or _KEY_SHAPE.search(text) is not None


class Redactor:
    """Replaces ``secrets`` (those of :data:`MIN_SECRET_LENGTH` or more characters) and bearer
    tokens in text that is about to be written out.  Holds the secrets in memory only; ``register``
    makes them known to :func:`scrub` too."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[Optional[str]] = (), *, register: bool = True) -> None:
        keep = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
        self._secrets = tuple(sorted(keep, key=len, reverse=True))  # longest first: no partial leftovers
        if register:  # known to scrub() from now on (module docstring)
            _remember(keep)

    def __repr__(self) -> str:
        return f"Redactor({len(self._secrets)} secret(s))"

    def text(self, text: Optional[str]) -> Optional[str]:
        """``text`` with the secrets and bearer tokens replaced (``None`` stays ``None``)."""
        if text is None:
            return None
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return _BEARER.sub(r"\1" + REDACTED, text)

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like ``value`` (dicts, lists, tuples, strings, numbers) with every
        string, keys included, passed through :meth:`text`."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(v) for v in value)
        return value
