"""Reading JSON that ragexam does not control -- HTTP replies, a model's reply, input files, and its own files
read back (:mod:`ragexam.storage.readback`) -- without letting its shape crash the reader.

Python's ``json`` parser recurses once per nesting level, so a reply nested 50,000 deep (``[[[[...]]]]``)
raises :class:`RecursionError`, which is not a ``ValueError`` and kills a run; a value nested a few hundred
deep parses, and then crashes whatever walks it next (redaction, the cache's ``json.dumps``).  Here a value
nested deeper than :data:`MAX_DEPTH` levels is :class:`TooDeep` -- a ``ValueError``, so every caller that
already treats "not JSON" as a failure of that one reply or line treats this one the same way.  No real
search reply, rerank reply, chat completion or results-file line comes near the limit (they nest fewer than
ten levels).

JSON can also carry text that is not text: an escape ``"\\ud800"`` decodes to half of a UTF-16 pair (a lone
surrogate), which no UTF-8 file can hold -- the first write of it fails.  :func:`unencodable` finds such a
string (key or value) and names where it is, so a reader can refuse it as an input error at load.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Optional, Tuple

from ragexam.types import JsonValue

__all__ = ["MAX_DEPTH", "TooDeep", "loads", "decode", "raw_decode", "check_depth", "unencodable",
           "may_hold_surrogates", "SURROGATE_HELP", "describe_error"]

#: arrays and objects inside each other that a JSON value may hold (``[[1]]`` is 2).
MAX_DEPTH = 100


class TooDeep(ValueError):
    """A JSON value nested deeper than :data:`MAX_DEPTH` (or than the parser can follow)."""

    def __init__(self, limit: int = MAX_DEPTH) -> None:
        super().__init__(f"nested deeper than {limit} levels of arrays/objects; expected a shallower value")
        self.limit = limit


def check_depth(value: JsonValue, limit: int = MAX_DEPTH) -> JsonValue:
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


def describe_error(err: json.JSONDecodeError) -> str:
    """What the parser said, with its column whole: ``Expecting value at column 1``, ``Unterminated string
    starting at column 3622`` (``json``'s own ``msg`` of that one ends in a bare "starting at").  The line is the
    caller's to name (``InputError(line=...)``)."""
    at = "" if err.msg.endswith(" at") else " at"
    return f"{err.msg}{at} column {err.colno}"


def loads(data: "str | bytes", *, limit: int = MAX_DEPTH, **hooks: Callable[..., object]) -> JsonValue:
    """``json.loads(data, **hooks)`` (``object_pairs_hook``, ``parse_constant``, ...) that raises :class:`TooDeep` (a ``ValueError``) instead of
    :class:`RecursionError`, and for any value nested deeper than ``limit``."""
    try:
        value = json.loads(data, **hooks)
    except RecursionError:
        raise TooDeep(limit) from None
    return check_depth(value, limit)


def decode(decoder: json.JSONDecoder, text: str, *, limit: int = MAX_DEPTH) -> JsonValue:
    """``decoder.decode(text)`` with the depth rule of :func:`loads`."""
    try:
        value = decoder.decode(text)
    except RecursionError:
        raise TooDeep(limit) from None
    return check_depth(value, limit)


def raw_decode(decoder: json.JSONDecoder, text: str, start: int = 0, *, limit: int = MAX_DEPTH) -> Tuple[JsonValue, int]:
    """``decoder.raw_decode(text, start)`` with the depth rule of :func:`loads`."""
    try:
        value, end = decoder.raw_decode(text, start)
    except RecursionError:
        raise TooDeep(limit) from None
    return check_depth(value, limit), end


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89abcdefABCDEF][0-9a-fA-F]{2}")
#: what to do about a lone surrogate, for messages.
SURROGATE_HELP = ("a lone surrogate (half of a UTF-16 pair, written as a JSON escape such as \\ud800) is not a "
                  "character and cannot be written as UTF-8; expected text; fix the program that wrote it (it cut a "
                  "UTF-16 pair in two) or remove the escape")


def may_hold_surrogates(raw: "str | bytes") -> bool:
    """False when the JSON text ``raw`` has no ``\\uD800``-``\\uDFFF`` escape (so no lone surrogate): a
    quick test before :func:`unencodable` walks a parsed value."""
    if isinstance(raw, bytes):
        return b"\\u" in raw and _SURROGATE_ESCAPE_BYTES.search(raw) is not None
    return "\\u" in raw and _SURROGATE_ESCAPE.search(raw) is not None


def _bad_text(text: str) -> Optional[str]:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"\\u{ord(text[err.start]):04x} at character {err.start + 1}"
    return None


def unencodable(value: object, path: str = "") -> Optional[Tuple[str, str]]:
    """``(where, what)`` of the first string in ``value`` (keys included) that cannot be written as UTF-8 --
    ``where`` a path like ``contexts[2].text`` (``path`` prefixed), ``what`` the character and its position --
    or ``None``.  Walks containers without recursion."""
    stack = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            bad = _bad_text(node)
            if bad is not None:
                return where or "(the value)", bad
        elif isinstance(node, dict):
            for k, v in reversed(list(node.items())):
                key = str(k)
                bad = _bad_text(key) if isinstance(k, str) else None
                if bad is not None:
                    return (f"{where}." if where else "") + "(a key)", bad
                stack.append((v, f"{where}.{key}" if where else key))
        elif isinstance(node, (list, tuple)):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], f"{where}[{i}]"))
    return None
