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

Personal data (``ragexam traces import --redact``)
--------------------------------------------------
Production traces hold what users typed.  :class:`PiiRedactor` replaces personal data in written text by a
bracketed kind -- ``[email]``, ``[rrn]``, ``[card]``, ``[phone]``, ``[account]`` -- and counts what it replaced.
The patterns (:data:`PII_PATTERNS`, applied in this order, so a number is claimed by the first kind it fits):

* ``email``: ``local@domain.tld`` (ASCII local part and domain labels, a letter TLD of 2+ characters);
* ``rrn``: a Korean resident (or foreigner) registration number, ``YYMMDD-GNNNNNN`` with or without the
  hyphen: a valid month and day, the 7th digit 1-8 (no checksum: numbers issued since 2020-10 have none); the
  masked form ``900101-1******`` too;
* ``card``: 13-19 digits, in groups separated by spaces or hyphens or not, that pass the Luhn check; and the
  masked 4-4-4-4 form ``1234-56**-****-3456``;
* ``phone``: Korean mobile numbers ``010-1234-5678`` / ``01012345678`` / ``010 1234 5678``, ``+82 10-...``;
  landlines with a separator (``02-123-4567``, ``031)123-4567``, ``(02) 1234-5678``), ``070``/``050x``/``080``
  numbers; any ``+`` international number of 8-15 digits.  Company numbers ``1588-1234`` are not personal
  and stay;
* ``account``: a bank account number: 3 or 4 digit groups joined by hyphens with 10-14 digits in all
  (``110-123-456789``, ``3333-01-1234567``, ``123456-01-123456``); or a plain run of 10-14 digits within 15
  characters after a word that names an account (``계좌``, ``입금``, ``송금``, ``이체``, ``account``, ``acct``).
  Dates (``2024-01-15``: 8 digits) and error codes (``AUTH-LOCK-05``) are not touched.

The placeholders hold no digit, so no later pattern matches inside one.  Like keys, personal data is redacted
from what is written (and sent to a judge), never from what is parsed.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Callable, Iterable, Optional, Tuple

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "Redactor", "register", "configured_secrets", "scrub", "scrub_value",
           "redact_written", "holds_secret", "PII_KINDS", "PII_PATTERNS", "PiiRedactor", "redact_pii", "luhn_valid"]

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


def redact_written() -> Callable[[Any], Any]:
    """A function that returns a JSON-like value with every configured key and header value replaced in its
    strings (not the key-*shaped* values :func:`scrub` also catches: a written corpus text may hold such a shape
    legitimately): for run and score folders.  It works on values before they are serialized, never on the
    written text, so a secret that happens to look like a number or a JSON fragment cannot break a file."""
    secrets = configured_secrets()
    return Redactor(secrets, register=False).value if secrets else _same


def _same(value: Any) -> Any:
    return value


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


# -- personal data (module docstring, "Personal data") --------------------------------------------------------------
_RRN_BODY = r"\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])"
_DIGITS = re.compile(r"\d")
#: ``(kind, pattern)`` in the order they are applied
PII_PATTERNS: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    ("email", re.compile(r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+"
                         r"[A-Za-z]{2,}(?![A-Za-z0-9])")),
    ("rrn", re.compile(r"(?<![\d-])" + _RRN_BODY + r"(?:\s?[-\u2013]\s?)?[1-8](?:\d{6}|\*{6})(?![\d*])")),
    ("card", re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])|(?<![\d-])\d{4}[ -]\d{2}[\d*]{2}[ -][\d*]{4}[ -]\d{4}"
                        r"(?![\d-])")),
    ("phone", re.compile(
        r"(?<![\d+])\+82[ -.]?\(?0?\)?(?:1[016789]|2|[3-6][1-5]|70)[ -.)]{0,2}\d{3,4}[ -.]?\d{4}(?!\d)"
        r"|(?<![\d-])01[016789][ -.]?\d{3,4}[ -.]?\d{4}(?![\d-])"
        r"|(?<![\d-])(?:\(0(?:2|[3-6][1-5])\)\s?|0(?:2|[3-6][1-5]|70|50[2-8]|80)[-.)]\s?)\d{3,4}[-. ]\d{4}(?![\d-])"
        r"|(?<![\w+])\+[1-9]\d{0,2}(?:[ -.]?\(?\d{1,4}\)?){2,5}(?![\d-])")),
    ("account", re.compile(r"(?<![\d-])\d{2,6}(?:-\d{2,7}){2,3}(?![\d-])"
                           r"|(?i:계좌번호|계좌|입금|송금|이체|account|acct)[^\d\n]{0,15}\d{10,14}(?!\d)")),
)
PII_KINDS: Tuple[str, ...] = tuple(k for k, _ in PII_PATTERNS)
_KEYWORD_NUMBER = re.compile(r"\d{10,14}$")


def luhn_valid(digits: str) -> bool:
    """The Luhn check of a card number (``digits``: the digits only)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _accept(kind: str, found: str) -> bool:
    """Whether a match of ``kind``'s pattern is that kind (the checks a regular expression cannot make)."""
    n = len(_DIGITS.findall(found))
    if kind == "card":
        if "*" in found:
            return n >= 8
        return 13 <= n <= 19 and luhn_valid("".join(_DIGITS.findall(found)))
    if kind == "phone" and found.startswith("+"):
        return 8 <= n <= 15
    if kind == "account" and found[0].isdigit():
        return 10 <= n <= 14
    return True


#: text that may hold personal data: an ``@``, or 7+ digits (with separators) in a row; other text is passed over
_MAY_HOLD = re.compile(r"@|\d[\d \-.()*]{5,}\d")
_MEMO_SIZE = 4096


class PiiRedactor:
    """Replaces personal data (:data:`PII_PATTERNS`) in text about to be written by ``[kind]``; ``counts`` says how
    many of each kind it replaced so far.  A text seen before (retrieved contexts repeat across traces) is not
    searched again: the result of the last :data:`_MEMO_SIZE` distinct long texts is kept, and counted again."""

    __slots__ = ("counts", "_memo")

    def __init__(self) -> None:
        self.counts: dict = {}
        self._memo: dict = {}

    def text(self, text: Optional[str]) -> Optional[str]:
        """``text`` with personal data replaced (``None`` stays ``None``)."""
        if not text or _MAY_HOLD.search(text) is None:
            return text
        hit = self._memo.get(text)
        if hit is None:
            found: dict = {}
            out = text
            for kind, pattern in PII_PATTERNS:
                out = pattern.sub(lambda m, k=kind: self._replace(k, m, found), out)
            hit = (out, found)
            if len(text) > 200:
                if len(self._memo) >= _MEMO_SIZE:
                    self._memo.pop(next(iter(self._memo)))
                self._memo[text] = hit
        for kind, n in hit[1].items():
            self.counts[kind] = self.counts.get(kind, 0) + n
        return hit[0]

    @staticmethod
    def _replace(kind: str, m: "re.Match[str]", found: dict) -> str:
        text = m.group(0)
        if not _accept(kind, text):
            return text
        found[kind] = found.get(kind, 0) + 1
        if kind == "account" and not text[0].isdigit():  # a keyword, then the number: keep the keyword
            number = _KEYWORD_NUMBER.search(text)
            return text[:number.start()] + "[account]" if number else text
        return f"[{kind}]"

    def value(self, value: Any) -> Any:
        """A copy of a JSON-like ``value`` with every string value (not the keys) passed through :meth:`text`."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(v) for v in value)
        return value


def redact_pii(text: Optional[str]) -> Optional[str]:
    """``text`` with personal data replaced (:class:`PiiRedactor`)."""
    return PiiRedactor().text(text)
