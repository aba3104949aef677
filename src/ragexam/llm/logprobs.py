"""Token log-probabilities of a reply: which values the model weighed, and how much, where it wrote a JSON value.

OpenAI-compatible endpoints (OpenAI, llama.cpp, vLLM) return, with ``logprobs: true, top_logprobs: K``,
``choices[0].logprobs.content``: per generated token its text, bytes, log-probability and the ``K`` most
likely tokens at that position.  :func:`parse_logprobs` reads that list; :func:`value_offsets` finds where
each scalar value of the reply's JSON object starts; :func:`distribution_at` gives, at such a place, the
probability of each allowed value (e.g. ``"1"`` ... ``"5"``, ``true``/``false``, ``"abstained"``/
``"answered"``) -- G-Eval's idea: a 1-5 score becomes an expected value, a yes/no the probability of yes.

How a distribution is read.  Values are compared as UTF-8 bytes (a token may hold part of a character).  At
the token where the value begins, text of that token before the value (``:``, a space, ``[``) is a prefix
every alternative must share; from there the alternatives are read token by token until the first position
whose sampled token fits exactly one allowed value (``"a"`` fits both ``"abstained"`` and ``"answered"``;
the next token decides).  At that position each alternative that fits exactly one value adds its
probability to that value; the sums are normalised over the values.  ``mass`` (their total before
normalising) says how much of the model's probability the allowed values held there: llama.cpp reports
probabilities before its grammar removes forbidden tokens, so mass below 1 is normal.  The tokens may spell
more than the message's text (llama.cpp takes a Markdown fence the model wrote around the JSON off the
content, not off the tokens): the text is looked up in what the tokens spell.  Nothing is read (``None``)
when the tokens do not contain the reply's text, or no alternative fits a value.

One numeric guard reads every log-probability (:func:`logprob_value`): a log-probability is a number at most 0
(``-inf`` is probability 0; a rounding up to :data:`ROUNDING` above 0 is read as 0).  Anything else an
endpoint may send -- ``1000`` (``exp`` overflows), ``Infinity``, ``NaN``, a string -- is not one, and a reply
holding one has no readable log-probabilities: :func:`parse_logprobs` raises :class:`UnreadableLogprobs`
naming the token and the value, so its probability score is "unjudged, because ..." instead of a crash or a
number made of nonsense.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = ["TokenLogprob", "parse_logprobs", "value_offsets", "distribution_at", "Distribution", "logprob_value",
           "UnreadableLogprobs", "ROUNDING"]

#: how far above 0 a log-probability may be and still be read (as 0): servers round in float32
ROUNDING = 1e-4


class UnreadableLogprobs(ValueError):
    """A reply's ``logprobs`` hold a value that is not a log-probability (the message names it)."""

_DELIMITERS = (b"", b",", b"]", b"}", b" ", b"\n", b"\r", b"\t")


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: its bytes, log-probability, and the top alternatives ``(bytes, logprob)``."""

    data: bytes
    logprob: float
    top: Tuple[Tuple[bytes, float], ...] = ()

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


@dataclass(frozen=True)
class Distribution:
    """Probabilities of the allowed values at one place (normalised), and their ``mass`` before normalising."""

    probs: Dict[str, float]
    mass: float

    def expected(self, values: Dict[str, float]) -> float:
        return sum(p * values[o] for o, p in self.probs.items())


def _bytes(entry: Dict[str, Any]) -> Optional[bytes]:
    raw = entry.get("bytes")
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    tok = entry.get("token")
    return tok.encode("utf-8") if isinstance(tok, str) else None


def logprob_value(value: Any) -> Optional[float]:
    """``value`` as a log-probability: a number at most 0 (``-inf`` included; up to :data:`ROUNDING` above 0
    reads as 0), else ``None`` -- the one guard every log-probability ragexam reads goes through."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    x = float(value)
    if math.isnan(x) or x > ROUNDING:
        return None
    return min(x, 0.0)


def _logprob(entry: Dict[str, Any], where: str) -> float:
    raw = entry.get("logprob")
    lp = logprob_value(raw)
    if lp is None:
        shown = repr(raw) if not isinstance(raw, float) else (
            "Infinity" if raw == math.inf else "NaN" if math.isnan(raw) else repr(raw))
        raise UnreadableLogprobs(f"{where} has log-probability {shown}, which is not a log-probability (a number at "
                                 "most 0)")
    return lp


def parse_logprobs(choice: Any) -> Optional[List[TokenLogprob]]:
    """The tokens of ``choices[0]`` of a chat completion, or ``None`` when it carries no usable
    ``logprobs.content`` (none, or a token without text or log-probability).  :raises UnreadableLogprobs: a
    token or alternative whose log-probability is not one (:func:`logprob_value`)."""
    lp = choice.get("logprobs") if isinstance(choice, dict) else None
    content = lp.get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list) or not content:
        return None
    out: List[TokenLogprob] = []
    for i, entry in enumerate(content):
        if not isinstance(entry, dict):
            return None
        data = _bytes(entry)
        if data is None or entry.get("logprob") is None:
            return None
        where = f"token {i + 1} ({data.decode('utf-8', 'replace')!r})"
        logprob = _logprob(entry, where)
        top = []
        for alt in entry.get("top_logprobs") or []:
            if isinstance(alt, dict) and alt.get("logprob") is not None:
                ad = _bytes(alt)
                al = _logprob(alt, f"an alternative of {where}")
                if ad is not None:
                    top.append((ad, al))
        out.append(TokenLogprob(data, logprob, tuple(top)))
    return out


# --- where the JSON values are --------------------------------------------------------------------------
class _Offsets:
    """A small JSON reader that records the character span of every scalar value by its path."""

    def __init__(self, text: str, start: int) -> None:
        self.s, self.i = text, start
        self.spans: Dict[Tuple[Any, ...], Tuple[int, int]] = {}

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def value(self, path: Tuple[Any, ...]) -> None:
        self.ws()
        c = self.s[self.i]
        if c == "{":
            self.members("}", lambda k: self.member(path))
        elif c == "[":
            self.members("]", lambda k: self.value(path + (k,)))
        else:
            start = self.i
            if c == '"':
                self.string()
            else:
                while self.i < len(self.s) and self.s[self.i] not in ",]} \t\r\n":
                    self.i += 1
            self.spans[path] = (start, self.i)

    def members(self, close: str, one: Callable[[int], None]) -> None:
        """An object's or an array's members, from its opening bracket to ``close``: ``one(k)`` reads the k-th."""
        self.i += 1
        self.ws()
        if self.s[self.i] == close:
            self.i += 1
            return
        k = 0
        while True:
            one(k)
            k += 1
            self.ws()
            c = self.s[self.i]
            self.i += 1
            if c == close:
                return
            assert c == ","

    def member(self, path: Tuple[Any, ...]) -> None:
        """One ``"key": value`` of an object at ``path``."""
        self.ws()
        key = self.string()
        self.ws()
        assert self.s[self.i] == ":"
        self.i += 1
        self.value(path + (key,))

    def string(self) -> str:
        assert self.s[self.i] == '"'
        j = self.i + 1
        while self.s[j] != '"':
            j += 2 if self.s[j] == "\\" else 1
        import json

        out = json.loads(self.s[self.i:j + 1])
        self.i = j + 1
        return out


def value_offsets(text: str) -> Dict[Tuple[Any, ...], Tuple[int, int]]:
    """``{path: (start, end)}`` character spans of the scalar values of the first JSON object in ``text``
    that parses (paths such as ``("score",)`` or ``("scores", 0)``); ``{}`` when there is none."""
    import json

    dec = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = dec.raw_decode(text, start)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            reader = _Offsets(text, start)
            try:
                reader.value(())
            except (AssertionError, IndexError, ValueError):
                return {}
            return reader.spans
        start = text.find("{", start + 1)
    return {}


# --- the distribution at one place ----------------------------------------------------------------------
def _fits(option: bytes, written: bytes) -> bool:
    """``written`` may still become ``option``, or is ``option`` followed by a delimiter."""
    if option.startswith(written):
        return True
    return written.startswith(option) and written[len(option):len(option) + 1] in _DELIMITERS


def distribution_at(tokens: Sequence[TokenLogprob], content: str, offset: int,
                    options: Sequence[str]) -> Optional[Distribution]:
    """The probabilities of ``options`` (JSON texts of the allowed values) where the value at character
    ``offset`` of ``content`` was written (see the module docstring); ``None`` when they cannot be read."""
    text = content.encode("utf-8")
    data = b"".join(t.data for t in tokens)
    base = data.find(text)  # the tokens may hold more than the content (a code fence the server took off)
    if base < 0:
        return None
    target = base + len(content[:offset].encode("utf-8"))
    opts = [o.encode("utf-8") for o in options]
    pos, i = 0, 0
    while i < len(tokens) and pos + len(tokens[i].data) <= target:
        pos += len(tokens[i].data)
        i += 1
    if i >= len(tokens):
        return None
    prefix, seen = data[pos:target], b""
    while i < len(tokens):
        tok = tokens[i]
        alts = list(tok.top)
        if all(a != tok.data for a, _ in alts):
            alts.append((tok.data, tok.logprob))
        mass: Dict[bytes, float] = {}
        for alt, lp in alts:
            if not alt.startswith(prefix):
                continue
            fits = [o for o in opts if _fits(o, seen + alt[len(prefix):])]
            if len(fits) == 1:
                mass[fits[0]] = mass.get(fits[0], 0.0) + math.exp(lp)
        fits = [o for o in opts if _fits(o, seen + tok.data[len(prefix):])]
        if len(fits) <= 1:
            total = sum(mass.values())
            if total <= 0:
                return None
            return Distribution({o.decode("utf-8"): m / total for o, m in mass.items()}, total)
        seen += tok.data[len(prefix):]
        prefix = b""
        i += 1
    return None
