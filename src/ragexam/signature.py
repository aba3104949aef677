"""``Signature``: the settings that produced a score, as ordered ``key:value`` fields.

Every score ragexam prints or stores travels with a signature, like sacrebleu's
``nrefs:1|case:mixed|tok:13a|smooth:exp|version:2.6.0``: a reader can see, and a later run can
compare, exactly what was computed.  Rendering rules:

* fields keep the order they were given; ``version:ragexam-X`` is always last (added unless
  ``version=False``);
* keys are lower-case words (``[a-z0-9_.-]+``); a value is rendered with :func:`render_value`
  (``None`` → ``none``, booleans → ``yes``/``no``, floats with ``%g``, sequences joined by ``,``);
* ``|`` separates fields, so a value may not contain one (a ``ValueError`` says which field);
* :meth:`Signature.parse` reads the text back (``str(Signature.parse(s)) == s``).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Mapping, Tuple, Union

__all__ = ["Signature", "render_value", "quote"]

_KEY = re.compile(r"^[a-z0-9_.-]+$")


def quote(text: str) -> str:
    """A free text (a pipeline name, a file name) made safe as a field value: ``%`` as ``%25`` and the field
    separator ``|`` as ``%7C`` (reversible; other text unchanged)."""
    return str(text).replace("%", "%25").replace("|", "%7C")


def render_value(value: Any) -> str:
    """A field value as signature text (see the module docstring)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ",".join(render_value(v) for v in value)
    return str(value)


class Signature:
    """Ordered ``key:value`` fields; ``str()`` renders them (see the module docstring).

    >>> str(Signature({"tok": "13a", "smooth": "exp"}, version=False))
    'tok:13a|smooth:exp'
    """

    __slots__ = ("_fields",)

    def __init__(self, fields: Union[Mapping[str, Any], Iterable[Tuple[str, Any]]] = (), *,
                 version: bool = True) -> None:
        items = list(fields.items()) if isinstance(fields, Mapping) else list(fields)
        out: dict = {}
        for key, value in items:
            if not isinstance(key, str) or not _KEY.match(key):
                raise ValueError(f"signature key {key!r}: expected lower-case letters, digits, '_', '.' or '-'")
            text = render_value(value)
            if "|" in text:
                raise ValueError(f"signature field {key!r}: the value {text!r} contains '|', which separates fields")
            if key == "version":
                continue
            out[key] = text
        if version:
            from ragexam import __version__

            out["version"] = f"ragexam-{__version__}"
        elif any(k == "version" for k, _ in items):
            out["version"] = render_value(dict(items)["version"])
        self._fields = out

    @classmethod
    def parse(cls, text: str) -> "Signature":
        """Read a rendered signature back; raises ``ValueError`` on a field without ``:``."""
        pairs = []
        for part in text.split("|") if text else []:
            key, sep, value = part.partition(":")
            if not sep:
                raise ValueError(f"signature field {part!r} has no ':'")
            pairs.append((key, value))
        sig = cls(version=False)
        sig._fields = dict(pairs)
        return sig

    def extend(self, fields: Union[Mapping[str, Any], Iterable[Tuple[str, Any]]]) -> "Signature":
        """A new signature with ``fields`` added (or replaced) before ``version``."""
        items = [(k, v) for k, v in self._fields.items() if k != "version"]
        new = Signature(list(items) + list(fields.items() if isinstance(fields, Mapping) else fields),
                        version=False)
        if "version" in self._fields:
            new._fields["version"] = self._fields["version"]
        return new

    def __getitem__(self, key: str) -> str:
        return self._fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._fields.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def items(self):
        return self._fields.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Signature):
            return self._fields == other._fields
        if isinstance(other, str):
            return str(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __str__(self) -> str:
        return "|".join(f"{k}:{v}" for k, v in self._fields.items())

    def __repr__(self) -> str:
        return f"Signature({str(self)!r})"
