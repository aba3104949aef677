"""Asking again: one chat call whose reply must parse, with each problem fed back to the model.

:func:`ask` is the one loop every structured LLM task uses (the judge, the question generator).  It
sends ``messages`` (structured output with ``schema``, see :meth:`~ragexam.llm.client.LLMClient.complete`)
and looks at the reply:

* ``refusal`` set or ``finish_reason == "content_filter"``: problem ``refused``;
* ``finish_reason == "length"``: problem ``truncated``; the next attempt gets twice the
  ``max_tokens``, at most ``4 x`` the first;
* otherwise ``parse(content)``: a value is success; an exception of ``bad_reply`` (with ``kind`` and
  ``message``, e.g. :class:`ragexam.metrics.judge.replies.ReplyError`) is the problem ``kind`` -- an
  ``invalid_json`` reply without ``{`` that matches ``refusal`` (a text refusal such as "I'm sorry, I
  can't") counts as ``refused``; an exception of ``final`` ends the attempts at once and is returned
  (a valid reply that has no value, e.g. the judge's "no claims").

After a problem, while fewer than ``max_attempts`` replies were received, the reply (or ``(empty
reply)``) and ``feedback(kind, message)`` (``kind`` is ``invalid``, ``truncated`` or ``refused``) are
appended to the conversation and it is sent again.  A transport failure (:class:`CallFailed`) ends the
attempts and is returned.  Tokens and requests are summed over the attempts; replies are parsed as
they arrived (the caller redacts what it writes out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Pattern, Tuple, Type

from ragexam.llm.transport import CallFailed

__all__ = ["Attempted", "ask"]


@dataclass
class Attempted:
    """What :func:`ask` got: ``parsed`` and ``value`` on success; else ``reason``/``message`` of the last
    problem; ``final`` (an exception of ``final``) or ``failed`` (a :class:`CallFailed`) when the attempts
    ended early.  ``attempts``: replies received; ``requests``: HTTP requests; tokens as reported
    (``None``: never reported); ``errors``: one ``{attempt, reason, message, reply}`` per unusable reply
    (reply cut to 500 characters); ``last``: the last reply's text."""

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


def ask(client: Any, messages: List[Dict[str, str]], parse: Callable[[Optional[str]], Any], *,
        bad_reply: Tuple[Type[BaseException], ...], feedback: Callable[[str, str], str], max_attempts: int,
        max_tokens: int, temperature: Optional[float] = None, seed: Optional[int] = None,
        schema: Optional[Dict[str, Any]] = None, schema_name: str = "reply",
        final: Tuple[Type[BaseException], ...] = (), refusal: Optional[Pattern[str]] = None) -> Attempted:
    """Up to ``max_attempts`` replies until ``parse`` accepts one (see the module docstring)."""
    out = Attempted(reason="invalid_json")
    messages = [dict(m) for m in messages]
    limit = max_tokens
    while out.attempts < max_attempts:
        try:
            reply = client.complete(messages, max_tokens=limit, temperature=temperature, seed=seed, schema=schema,
                                    schema_name=schema_name)
        except CallFailed as err:
            out.requests += err.requests
            out.failed = err
            return out
        out.attempts += 1
        out.requests += reply.requests
        if reply.prompt_tokens is not None:
            out.prompt_tokens = (out.prompt_tokens or 0) + reply.prompt_tokens
        if reply.completion_tokens is not None:
            out.completion_tokens = (out.completion_tokens or 0) + reply.completion_tokens
        content = reply.content
        out.last = content or reply.refusal or ""
        kind = "invalid"
        if reply.refusal is not None or reply.finish_reason == "content_filter":
            out.reason, kind = "refused", "refused"
            out.message = "the model refused: " + (reply.refusal or "finish_reason content_filter")
        elif reply.finish_reason == "length":
            out.reason, kind = "truncated", "truncated"
            out.message = f"the reply was cut off at max_tokens={limit} (finish_reason length)"
            limit = min(limit * 2, max_tokens * 4)
        else:
            try:
                out.value = parse(content)
            except bad_reply as err:
                out.reason, out.message = getattr(err, "kind", "invalid_reply"), getattr(err, "message", str(err))
                if out.reason == "invalid_json" and refusal is not None and content and "{" not in content \
                        and refusal.match(content):
                    out.reason, kind = "refused", "refused"
                    out.message = "the model refused: " + content.strip()[:200]
            except final as err:
                out.final = err
                return out
            else:
                out.parsed = True
                out.reason, out.message = None, ""
                return out
        out.errors.append({"attempt": out.attempts, "reason": out.reason, "message": out.message,
                           "reply": (content or "")[:500]})
        if out.attempts < max_attempts:
            messages = messages + [{"role": "assistant", "content": out.last or "(empty reply)"},
                                   {"role": "user", "content": feedback(kind, out.message)}]
    return out


#: replies that decline in words instead of JSON (English and Korean)
TEXT_REFUSAL: Pattern[str] = re.compile(r"^\s*(i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i won'?t|as an ai|"
                                        r"죄송|평가할 수 없|도와드릴 수 없)", re.I)
