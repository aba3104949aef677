"""Reading JSON that ragexam does not control -- HTTP replies, a model's reply, input files -- without letting
its shape crash the reader.

Python's ``json`` parser recurses once per nesting level, so a reply nested 50,000 deep (``[[[[...]]]]``)
raises :class:`RecursionError`, which is not a ``ValueError`` and kills a run; a value nested a few hundred
deep parses, and then crashes whatever walks it next (redaction, the cache's ``json.dumps``).  Here a value
nested deeper than :data:`MAX_DEPTH` levels is :class:`TooDeep` -- a ``ValueError``, so every caller that
already treats "not JSON" as a failure of that one reply or line treats this one the same way.  No real
search reply, rerank reply, chat completion or results-file line comes near the limit (they nest fewer than
ten levels).
"""

from __future__ import annotations

import json
from typing import Any, Tuple

__all__ = ["MAX_DEPTH", "TooDeep", "loads", "decode", "raw_decode", "check_depth"]

#: arrays and objects inside each other that a JSON value may hold (``[[1]]`` is 2).
MAX_DEPTH = 100


class TooDeep(ValueError):
    """A JSON value nested deeper than :data:`MAX_DEPTH` (or than the parser can follow)."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"nested deeper than {limit} levels of arrays/objects; expected a shallower value")
        self.limit = limit


def check_depth(value: Any, limit: int = MAX_DEPTH) -> Any:
    """``value`` itself when its arrays and objects nest at most ``limit`` deep; else :class:`TooDeep`.
    Walks containers only, without recursion."""
    if type(value) not in (dict, list):
        return value
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise TooDeep(limit)
        for child in (node.values() if type(node) is dict else node):
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return value


def loads(data: "str | bytes", *, limit: int = MAX_DEPTH, **kw: Any) -> Any:
    """``json.loads(data, **kw)`` that raises :class:`TooDeep` (a ``ValueError``) instead of
    :class:`RecursionError`, and for any value nested deeper than ``limit``."""
    try:
        value = json.loads(data, **kw)
    except RecursionError:
        raise TooDeep(limit) from None
    return check_depth(value, limit)


def decode(decoder: json.JSONDecoder, text: str, *, limit: int = MAX_DEPTH) -> Any:
    """``decoder.decode(text)`` with the depth rule of :func:`loads`."""
    try:
        value = decoder.decode(text)
    except RecursionError:
        raise TooDeep(limit) from None
    return check_depth(value, limit)


def raw_decode(decoder: json.JSONDecoder, text: str, start: int = 0, *, limit: int = MAX_DEPTH) -> Tuple[Any, int]:
    """``decoder.raw_decode(text, start)`` with the depth rule of :func:`loads`."""
    try:
        value, end = decoder.raw_decode(text, start)
    except RecursionError:
        raise TooDeep(limit) from None
    return check_depth(value, limit), end
