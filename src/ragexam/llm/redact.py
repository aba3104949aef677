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
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor"]

#: secrets shorter than this are never looked for (see the module docstring).
MIN_SECRET_LENGTH = 8
REDACTED = "[redacted]"
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"',;]+")


class Redactor:
    """Replaces ``secrets`` (those of :data:`MIN_SECRET_LENGTH` or more characters) and bearer
    tokens in text that is about to be written out.  Holds the secrets in memory only."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[Optional[str]] = ()) -> None:
        keep = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
        self._secrets = tuple(sorted(keep, key=len, reverse=True))  # longest first: no partial leftovers

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
