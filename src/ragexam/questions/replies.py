"""The generator's reply contract: from a model's raw text to candidate items, or a reason why not.

Contract (strict JSON, extra keys allowed)::

    {"questions": [{"question": str, "answer": str, "evidence": [str, ...], "type": str}, ...]}

:func:`parse_reply` reads the reply with the judge's :func:`~ragexam.metrics.judge.replies.extract_json`
(the whole text if it is one JSON object, else the first ``{...}`` that parses, after dropping
``<think>`` blocks and Markdown fences; ``NaN`` and duplicate keys are refused) and checks the
envelope: an object with a list ``questions``.  An empty list is a valid reply: the model found nothing
(more) to ask from the passage; the generator counts it (``no_questions``) and asks that passage for
that kind no more.  A reply that breaks the envelope is a
:class:`~ragexam.metrics.judge.replies.ReplyError` (``invalid_json`` or ``invalid_reply``), fed back to
the model for another attempt.  The items themselves are checked one by one
(:func:`item_fields`), so one bad item does not cost the others: an item that is not an object,
or whose ``question``/``answer`` is not a string, or whose ``evidence`` is not a string or a list of
strings, is rejected as ``malformed_item``.  A bare string as ``evidence`` is read as a list of one
(a common deviation of local models); ``type`` is optional and kept only for inspection (the type
is measured, never taken from the model).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ragexam.metrics.judge.replies import ReplyError, extract_json

__all__ = ["parse_reply", "parse_focus_reply", "item_fields", "ReplyError"]


def parse_reply(content: Optional[str]) -> List[Any]:
    """The ``questions`` list of a reply (possibly empty); :class:`ReplyError` when the envelope is broken."""
    obj = extract_json(content)
    if "questions" not in obj:
        keys = ", ".join(repr(k) for k in list(obj)[:5]) or "none"
        raise ReplyError("invalid_reply", f'the object has no "questions" key (keys: {keys}); expected '
                                          '{"questions": [{"question": ..., "answer": ..., "evidence": [...], '
                                          '"type": ...}]}')
    items = obj["questions"]
    if not isinstance(items, list):
        raise ReplyError("invalid_reply", f'"questions" is a {type(items).__name__}; expected a list of objects')
    return items


def parse_focus_reply(content: Optional[str]) -> List[Any]:
    """A ``--cite focus`` reply, ``{"question": ..., "answer": ...}``, as a list of one item (the evidence is the
    focus sentences: the generator fills it in).  A ``{"questions": [...]}`` envelope is read as well (its items
    beyond the first are ``over_count``); anything else is a :class:`ReplyError`."""
    obj = extract_json(content)
    if "question" in obj:
        return [obj]
    if isinstance(obj.get("questions"), list):
        return obj["questions"]
    keys = ", ".join(repr(k) for k in list(obj)[:5]) or "none"
    raise ReplyError("invalid_reply", f'the object has no "question" key (keys: {keys}); expected '
                                      '{"question": ..., "answer": ...}')


def item_fields(item: object, numbers: Optional[Mapping[int, str]] = None) -> Tuple[Optional[Dict[str, Any]],
                                                                                Optional[str]]:
    """``({"question", "answer", "evidence", "model_type", "cited"}, None)`` for a well-formed item, else
    ``(None, what is wrong)``.  With ``numbers`` (the ``sentences`` citation mode: number -> sentence shown),
    an evidence entry that is a sentence number (an integer, or a string such as ``"3"`` / ``"[3]"``) becomes
    that sentence's text and is listed in ``cited``; a number that was not shown is a problem; a text entry
    is kept as text (verified like a copied span)."""
    if not isinstance(item, dict):
        return None, f"the item is a {type(item).__name__}; expected an object"
    q = item.get("question")
    if not isinstance(q, str):
        return None, f'"question" is {_kind(q)}; expected a string'
    a = item.get("answer", "")
    if a is None:
        a = ""
    if not isinstance(a, str):
        return None, f'"answer" is {_kind(a)}; expected a string'
    ev = item.get("evidence", [])
    if ev is None:
        ev = []
    if isinstance(ev, str):
        ev = [ev]
    cited: List[int] = []
    if numbers is not None and isinstance(ev, list):
        ev, cited, problem = _cite(ev, numbers)
        if problem:
            return None, problem
    if not isinstance(ev, list) or not all(isinstance(e, str) for e in ev):
        return None, f'"evidence" is {_kind(ev)}; expected a list of strings'
    t = item.get("type")
    return {"question": q, "answer": a, "evidence": list(ev), "model_type": t if isinstance(t, str) else None,
            "cited": cited}, None


_NUMBER = re.compile(r"^\s*\[?\s*(\d{1,4})\s*\]?\s*$")


def _cite(entries: List[Any], numbers: Mapping[int, str]) -> Tuple[List[Any], List[int], Optional[str]]:
    """Sentence numbers -> sentence texts (see :func:`item_fields`)."""
    out: List[Any] = []
    cited: List[int] = []
    for e in entries:
        k: Optional[int] = None
        if isinstance(e, int) and not isinstance(e, bool):
            k = e
        elif isinstance(e, str) and _NUMBER.match(e):
            k = int(_NUMBER.match(e).group(1))  # type: ignore[union-attr]
        if k is None:
            out.append(e)
            continue
        if k not in numbers:
            return [], [], (f"evidence cites sentence {k}; the passages showed sentences "
                            f"{min(numbers)}-{max(numbers)}" if numbers else f"evidence cites sentence {k}; none shown")
        if k not in cited:
            cited.append(k)
            out.append(numbers[k])
    return out, cited, None


def _kind(v: object) -> str:
    """What a reply's field holds: ``missing`` when absent or null, else its JSON kind (:func:`ragexam.fmt.json_kind`)."""
    from ragexam.fmt import json_kind

    return "missing" if v is None else json_kind(v)
