"""Reading the JSON object in a model's reply: the one place every LLM task that asks for JSON reads it.

:func:`extract_json_object` takes the whole text if it is one JSON object, else the first ``{...}``
that parses, after dropping ``<think>...</think>`` blocks (reasoning models) and Markdown code fences.
``NaN``/``Infinity`` and duplicate keys are rejected.  A reply without a usable object raises
:class:`ReplyParseError` saying why.  (The judge's reader, :func:`ragexam.metrics.judge.replies.extract_json`,
applies the same rules.)
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Optional

from ragexam.fmt import json_kind
from ragexam.llm import safejson

__all__ = ["ReplyParseError", "extract_json_object"]

_THINK = re.compile(r"<think>.*?</think>", re.S | re.I)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


class ReplyParseError(ValueError):
    """No JSON object could be read from a reply; the message says why."""


def _reject_constant(name: str):
    raise ValueError(f"{name} is not allowed in JSON")


def _no_duplicates(pairs):
    obj: Dict[str, Any] = {}
    for k, v in pairs:
        if k in obj:
            raise ValueError(f"duplicate key {k!r}")
        obj[k] = v
    return obj


def extract_json_object(text: Optional[str]) -> Dict[str, Any]:
    """The JSON object in ``text`` (module docstring); :class:`ReplyParseError` if there is none."""
    if text is None or not text.strip():
        raise ReplyParseError("the reply is empty; expected one JSON object")
    body = _THINK.sub("", text).strip()
    if "<think>" in body.lower():  # an unterminated thinking block
        body = body[body.lower().rfind("</think>") + 8:] if "</think>" in body.lower() else ""
    if not body.strip():
        raise ReplyParseError("the reply is empty after removing its <think> block; expected one JSON object")
    dec = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    last_error = "no '{' found"
    for cand in [m.group(1).strip() for m in _FENCE.finditer(body)] + [body]:
        try:
            obj = safejson.decode(dec, cand)
        except ValueError as err:
            last_error = str(err)
        else:
            if isinstance(obj, dict):
                return obj
            last_error = f"the reply is {json_kind(obj)}, not an object"
        start = cand.find("{")
        while start != -1:
            try:
                obj, _ = safejson.raw_decode(dec, cand, start)
            except ValueError as err:
                last_error = str(err)
            else:
                if isinstance(obj, dict):
                    return obj
            start = cand.find("{", start + 1)
    raise ReplyParseError(f"no complete JSON object could be read ({last_error}); expected exactly one JSON object")
