"""Asking again: one chat call whose reply must parse, with each problem fed back to the model.

:func:`ask` is the one loop every structured LLM task uses (the judge, the question generator).  It
sends ``messages`` (structured output with ``schema``, see :meth:`~ragexam.llm.client.LLMClient.complete`)
and looks at the reply:

* ``refusal`` set or ``finish_reason == "content_filter"``: problem ``refused``;
* ``finish_reason == "length"``: problem ``truncated``.  A reply cut at the limit is almost always a
  degenerate loop, not a short budget: when the end of the text repeats itself (:func:`find_loop`: a piece
  repeated at least 3 times over at least 60 characters) the feedback (kind ``loop_kind``: ``loop`` for a
  caller that words it, else ``truncated``) quotes the repeated piece, the next attempt keeps the same ``max_tokens`` and is sent with ``frequency_penalty``
  :data:`LOOP_PENALTY`, which makes a repeated token less likely; only a reply cut without a loop gets
  twice the ``max_tokens`` next time, at most ``4 x`` the first;
* otherwise ``parse(content)``: a value is success; an exception of ``bad_reply`` (with ``kind`` and
  ``message``, e.g. :class:`ragexam.metrics.judge.replies.ReplyError`, whose message quotes the broken rule of
  the reply contract) is the problem ``kind`` -- an ``invalid_json`` reply without ``{`` that matches
  ``refusal`` (a text refusal such as "I'm sorry, I can't") counts as ``refused``; an exception of ``final``
  ends the attempts at once and is returned (a valid reply that has no value, e.g. "the answer declines").

After a problem, while fewer than ``max_attempts`` replies were received, the reply (or ``(empty
reply)``) and ``feedback(kind, message)`` (``kind`` is ``invalid``, ``truncated``, ``refused`` or
``loop_kind``) are appended to the conversation and it is sent again.  A transport failure
(:class:`CallFailed`) ends the attempts and is returned.  Tokens and requests are summed over the attempts;
replies are parsed as they arrived (the caller redacts what it writes out).  ``logprobs=K`` asks for token
log-probabilities; the accepted reply's are in :attr:`Attempted.logprobs` with its text in
:attr:`Attempted.content`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Pattern, Tuple, Type

from ragexam.llm.transport import CallFailed

__all__ = ["Attempted", "Reading", "ask", "find_loop", "LOOP_PENALTY", "TEXT_REFUSAL"]

#: ``frequency_penalty`` of the attempt after a loop
LOOP_PENALTY = 0.5


@dataclass(frozen=True)
class Reading:
    """How :func:`ask` reads a reply and answers a bad one (see the module docstring): ``parse(content)`` gives the
    value or raises one of ``bad_reply`` (a problem fed back) or of ``final`` (the attempts end, no value);
    ``refusal``: a text refusal in place of JSON; ``feedback(kind, message)``: the next user turn after a problem;
    ``loop_kind``: the kind a reply cut in a loop is fed back as (``loop`` for a caller that words it)."""

    parse: Callable[[Optional[str]], Any]
    bad_reply: Tuple[Type[BaseException], ...]
    feedback: Callable[[str, str], str]
    final: Tuple[Type[BaseException], ...] = ()
    refusal: Optional[Pattern[str]] = None
    loop_kind: str = "truncated"


@dataclass
class Attempted:
    """What :func:`ask` got: ``parsed`` and ``value`` on success; else ``reason``/``message`` of the last
    problem; ``final`` (an exception of ``final``) or ``failed`` (a :class:`CallFailed`) when the attempts
    ended early.  ``attempts``: replies received; ``requests``: HTTP requests; tokens as reported
    (``None``: never reported); ``errors``: one ``{attempt, reason, message, reply}`` per unusable reply
    (reply cut to 500 characters); ``loops``: replies cut in a loop; ``last``: the last reply's text;
    ``content`` and ``logprobs``: the accepted reply's text and token log-probabilities (``logprobs_error``: why
    they could not be read, when the reply held values that are not log-probabilities)."""

    parsed: bool = False
    value: Any = None
    reason: Optional[str] = None
    message: str = ""
    final: Optional[BaseException] = None
    failed: Optional[CallFailed] = None
    attempts: int = 0
    requests: int = 0
    prompt_tokens: Optional[int] = None
    completion_tokens: Optional[int] = None
    errors: List[Dict[str, Any]] = field(default_factory=list)
    last: str = ""
    loops: int = 0
    content: Optional[str] = None
    logprobs: Any = None
    logprobs_error: Optional[str] = None

    def count(self, reply: Any) -> None:
        self.attempts += 1
        self.requests += reply.requests
        if reply.prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + reply.prompt_tokens
        if reply.completion_tokens is not None:
            self.completion_tokens = (self.completion_tokens or 0) + reply.completion_tokens


def find_loop(text: Optional[str], *, min_repeats: int = 3, min_chars: int = 60,
              max_period: int = 300) -> Optional[Tuple[str, int]]:
    """``(piece, times)`` when ``text`` ends in ``piece`` repeated ``times >= min_repeats`` times back to back
    over at least ``min_chars`` characters (the shortest such piece), else ``None``.

    >>> find_loop('{"reasoning": "' + "VPN을 다시 연결합니다. " * 8)
    ('VPN을 다시 연결합니다. ', 8)
    >>> find_loop('{"scores": [3, 2, 1], "average": 2.0}') is None
    True
    """
    tail = (text or "")[-4 * max_period:]
    for p in range(1, min(max_period, len(tail) // min_repeats) + 1):
        unit = tail[-p:]
        k = 1
        while (k + 1) * p <= len(tail) and tail[-(k + 1) * p:-k * p] == unit:
            k += 1
        if k >= min_repeats and k * p >= min_chars and unit.strip():
            return _phase(tail, unit, k), k
    return None


def _phase(tail: str, unit: str, k: int) -> str:
    """The repeated piece as it started (``" 다시 연결합니다. VPN을"`` -> ``"VPN을 다시 연결합니다. "``)."""
    p = len(unit)
    start = len(tail) - k * p
    while start >= 1 and tail[start - 1] == tail[start - 1 + p]:
        start -= 1
    return tail[start:start + p]


def _problem(reply: Any, limit: int, reading: Reading) -> Tuple[Optional[str], str, str, Any]:
    """``(reason, feedback kind, message, value)`` of one reply; reason ``None`` when it parsed (``final``
    exceptions propagate)."""
    content = reply.content
    if reply.refusal is not None or reply.finish_reason == "content_filter":
        return "refused", "refused", "the model refused: " + (reply.refusal or "finish_reason content_filter"), None
    if reply.finish_reason == "length":
        loop = find_loop(content)
        if loop is not None:
            piece, times = loop
            return "truncated", "loop", (f"the reply was cut off at max_tokens={limit} in a loop: {piece.strip()!r} "
                                         f"repeated {times} times (finish_reason length)"), None
        return "truncated", "truncated", f"the reply was cut off at max_tokens={limit} (finish_reason length)", None
    try:
        return None, "", "", reading.parse(content)
    except reading.bad_reply as err:
        reason, message = getattr(err, "kind", "invalid_reply"), getattr(err, "message", str(err))
        if reason == "invalid_json" and reading.refusal is not None and content and "{" not in content \
                and reading.refusal.match(content):
            return "refused", "refused", "the model refused: " + content.strip()[:200], None
        return reason, "invalid", message, None


def ask(client: Any, messages: List[Dict[str, str]], reading: Reading, *, max_attempts: int, max_tokens: int,
        temperature: Optional[float] = None, seed: Optional[int] = None, schema: Optional[Dict[str, Any]] = None,
        schema_name: str = "reply", logprobs: Optional[int] = None) -> Attempted:
    """Up to ``max_attempts`` replies until ``reading.parse`` accepts one (see the module docstring)."""
    out = Attempted(reason="invalid_json")
    messages = [dict(m) for m in messages]
    limit, extra = max_tokens, None
    while out.attempts < max_attempts:
        kw: Dict[str, Any] = {"max_tokens": limit, "temperature": temperature, "seed": seed, "schema": schema,
                              "schema_name": schema_name}
        if logprobs is not None:
            kw["logprobs"] = logprobs
        if extra:
            kw["extra"] = extra
        try:
            reply = client.complete(messages, **kw)
        except CallFailed as err:
            out.requests += err.requests
            out.failed = err
            return out
        out.count(reply)
        out.last = reply.content or reply.refusal or ""
        try:
            reason, kind, message, value = _problem(reply, limit, reading)
        except reading.final as err:
            out.final = err
            return out
        if reason is None:
            out.parsed, out.value, out.reason, out.message = True, value, None, ""
            out.content, out.logprobs, out.logprobs_error = reply.content, reply.logprobs, reply.logprobs_error
            return out
        out.reason, out.message = reason, message
        if kind == "loop":
            out.loops += 1
            extra = {"frequency_penalty": LOOP_PENALTY}
        elif kind == "truncated":
            limit = min(limit * 2, max_tokens * 4)
        out.errors.append({"attempt": out.attempts, "reason": reason, "message": message,
                           "reply": (reply.content or "")[:500]})
        if out.attempts < max_attempts:
            messages = messages + [{"role": "assistant", "content": out.last or "(empty reply)"},
                                   {"role": "user", "content": reading.feedback(
                                       reading.loop_kind if kind == "loop" else kind, message)}]
    return out


#: replies that decline in words instead of JSON (English and Korean)
TEXT_REFUSAL: Pattern[str] = re.compile(r"^\s*(i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i won'?t|as an ai|"
                                        r"죄송|평가할 수 없|도와드릴 수 없)", re.I)
