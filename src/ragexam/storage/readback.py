"""The one reader of the JSON ragexam reads back: run and score folders (``summary.json``, ``score.json``, the
JSON Lines beside them), the history's stored payloads, a question set's card and review sheet cells, settings
files.

These files are ragexam's own, but they sit on a disk where anything may replace them: a summary nested 50,000
arrays deep makes Python's ``json`` raise :class:`RecursionError` (not a ``ValueError``: every command that reads
the folder died with a traceback), and a multi-gigabyte file would be read into memory whole before failing.
Here both are an :class:`~ragexam.errors.InputError` naming the file (and line, and field), what was received,
what was expected and the fix:

* nesting: at most :data:`~ragexam.storage.safejson.MAX_DEPTH` levels of arrays/objects (the rule inputs and
  service replies already follow, :mod:`ragexam.storage.safejson`; ragexam's files nest fewer than 10);
* size: a JSON file of at most :data:`MAX_FILE_BYTES` (a summary of 5,000 questions is 12 MB).

::

    from ragexam.storage.readback import read_json, parse_json

    summary = read_json(folder / "summary.json")                    # InputError naming the file
    value = parse_json(cell, source="qa.review.csv", line=7, field="evidence")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional, Union

from ragexam.errors import InputError
from ragexam.storage import safejson

__all__ = ["read_json", "parse_json", "MAX_FILE_BYTES", "JSONValue"]

#: the largest JSON file read back whole (bytes)
MAX_FILE_BYTES = 512 << 20
#: what :func:`json.loads` returns
JSONValue = Union[dict, list, str, int, float, bool, None]
_FIX = "the file is damaged or was not written by ragexam; write it again with the command that made it"


def parse_json(text: Union[str, bytes], *, source: str, line: Optional[int] = None, field: Optional[str] = None,
               fix: str = _FIX) -> JSONValue:
    """``text`` parsed, nesting bounded; an :class:`InputError` at ``source`` (``line``, ``field``) for text that
    is not JSON or nests too deep.  ``line``: the line of ``text`` in its file (a JSON Lines line, a CSV row);
    ``None`` for a whole file (the parser's line is named then)."""
    try:
        return safejson.loads(text)
    except safejson.TooDeep as err:
        raise InputError(f"received a value {err}; {fix}", source=source, line=line, field=field) from None
    except json.JSONDecodeError as err:
        raise InputError(f"is not valid JSON ({safejson.describe_error(err)}); {fix}", source=source,
                         line=line if line is not None else err.lineno, field=field) from None
    except UnicodeDecodeError as err:
        raise InputError(f"is not valid UTF-8 (byte {err.start}); {fix}", source=source, line=line,
                         field=field) from None


def read_json(path: Union[str, Path], *, max_bytes: int = MAX_FILE_BYTES, fix: str = _FIX) -> JSONValue:
    """The JSON file at ``path`` parsed (:func:`parse_json`); an :class:`InputError` naming it when it cannot be
    read, is over ``max_bytes`` bytes, is not UTF-8 or is not JSON."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise InputError(f"has {size:,} bytes; expected a JSON file of at most {max_bytes:,} bytes (ragexam's "
                             f"own are far smaller); {fix}", source=str(p))
        data = p.read_bytes()
    except OSError as err:
        raise InputError(f"cannot be read ({err.strerror or err}).", source=str(p)) from None
    if len(data) > max_bytes:  # it grew between the two looks
        raise InputError(f"has more than {max_bytes:,} bytes; expected a smaller JSON file; {fix}", source=str(p))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"is not valid UTF-8 (byte {err.start}); {fix}", source=str(p)) from None
    return parse_json(text, source=str(p), fix=fix)
