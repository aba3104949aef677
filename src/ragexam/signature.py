"""``Signature``: the settings that produced a score, as ordered ``key:value`` fields.

Every score ragexam prints or stores travels with a signature, like sacrebleu's
``nrefs:1|case:mixed|tok:13a|smooth:exp|version:2.6.0``: a reader can see, and a later run can
compare, exactly what was computed.  Every signature ragexam writes is built here, and read back here.
Rendering rules:

* fields keep the order they were given; ``version:ragexam-X`` is always last (added unless
  ``version=False``); signatures written before every producer used this class may end in ``version:X``
  (the statistics of prediction-powered inference and of judge-check): they still parse;
* keys are lower-case words (``[a-z0-9_.-]+``); a value is rendered with :func:`render_value`
  (``None`` → ``none``, booleans → ``yes``/``no``, floats with ``%g``, sequences joined by ``,``);
* ``|`` separates fields, so a value may not contain one (a ``ValueError`` says which field); free texts go
  through :func:`quote`;
* a **compound** signature joins the signatures of the stages that produced a result: ``A||B`` (a pipeline's
  signature, then how it was graded: :meth:`Signature.then`), ``A>>B`` (a first stage, then the reranker over
  it: ``then(..., join=">>")``), and a field ``[A]+[B]`` lists member signatures (a fusion's retrievers:
  :meth:`Signature.with_members`); so a value may not contain ``>>`` either;
* :meth:`Signature.parse` reads any of them back (``Signature.parse(s) == s``; its fields and sections are
  those written).

A :class:`Signature` *is* its rendered text (a ``str``), so it goes into JSON, CSV and f-strings as it is.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, List, Mapping, Optional, Tuple, Union

__all__ = ["Signature", "render_value", "quote", "JOINS"]

_KEY = re.compile(r"^[a-z0-9_.-]+$")
#: how the sections of a compound signature are joined: a result graded after its pipeline, a reranker after
#: its first stage
JOINS = ("||", ">>")

Fields = Union[Mapping[str, Any], Iterable[Tuple[str, Any]]]
#: one entry of a section: a ``(key, value)`` field, the member signatures of a ``[A]+[B]`` field, or the text of
#: a component that does not sign itself with fields (:meth:`Signature.of`)
Entry = Union[Tuple[str, str], Tuple["Signature", ...], str]


def quote(text: str) -> str:
    """A free text (a pipeline name, a file name) made safe as a field value: ``%`` as ``%25`` and the field
    separator ``|`` as ``%7C`` (reversible; other text unchanged)."""
    return str(text).replace("%", "%25").replace("|", "%7C")


def render_value(value: object) -> str:
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


def _is_field(entry: Entry) -> bool:
    return isinstance(entry, tuple) and not isinstance(entry[0], Signature)


def _is_members(entry: Entry) -> bool:
    return isinstance(entry, tuple) and isinstance(entry[0], Signature)


def _render(sections: Tuple[Tuple[Entry, ...], ...], joins: Tuple[str, ...]) -> str:
    def entry(e: Entry) -> str:
        if isinstance(e, str):
            return e
        return f"{e[0]}:{e[1]}" if _is_field(e) else "+".join(f"[{m}]" for m in e)

    out = "|".join(entry(e) for e in sections[0]) if sections else ""
    for join, section in zip(joins, sections[1:]):
        out += join + "|".join(entry(e) for e in section)
    return out


def _checked(fields: Fields, version: bool) -> Tuple[Tuple[str, str], ...]:
    """The fields of a new section: keys checked, values rendered; a repeated key keeps its first place and its
    last value; ``version`` last."""
    items = list(fields.items()) if isinstance(fields, Mapping) else list(fields)
    out: dict = {}
    for key, value in items:
        if not isinstance(key, str) or not _KEY.match(key):
            raise ValueError(f"signature key {key!r}: expected lower-case letters, digits, '_', '.' or '-'")
        text = render_value(value)
        if "|" in text:
            raise ValueError(f"signature field {key!r}: the value {text!r} contains '|', which separates fields")
        if ">>" in text:
            raise ValueError(f"signature field {key!r}: the value {text!r} contains '>>', which joins a first "
                             "stage and its reranker")
        if key == "version":
            continue
        out[key] = text
    if version:
        from ragexam import __version__

        out["version"] = f"ragexam-{__version__}"
    elif any(k == "version" for k, _ in items):
        out["version"] = render_value(dict(items)["version"])
    return tuple(out.items())


class Signature(str):
    """Ordered ``key:value`` fields, rendered as text (see the module docstring).

    >>> Signature({"tok": "13a", "smooth": "exp"}, version=False)
    Signature('tok:13a|smooth:exp')
    """

    _sections: Tuple[Tuple[Entry, ...], ...]
    _joins: Tuple[str, ...]

    def __new__(cls, fields: Fields = (), *, version: bool = True) -> "Signature":
        return cls._of((_checked(fields, version),), ())

    @classmethod
    def _of(cls, sections: Tuple[Tuple[Entry, ...], ...], joins: Tuple[str, ...]) -> "Signature":
        sections = sections or ((),)
        sig = str.__new__(cls, _render(sections, joins))
        sig._sections, sig._joins = sections, joins
        return sig

    def __reduce__(self) -> Tuple[Any, Tuple[str]]:
        return (Signature.parse, (str(self),))

    # -- reading -------------------------------------------------------------------------------------------

    @classmethod
    def of(cls, text: str) -> "Signature":
        """``text`` as a signature: a :class:`Signature` as it is, a rendered one parsed, and a text that is not
        one (a user's component may sign itself ``"my retriever v2"``) kept as it is, with no fields."""
        if isinstance(text, Signature):
            return text
        try:
            return cls.parse(text)
        except ValueError:
            return cls._of(((str(text),),), ())

    @classmethod
    def parse(cls, text: str) -> "Signature":
        """Read a rendered signature back (a compound one too); raises ``ValueError`` on a field without ``:``
        or a member list without its closing ``]``."""
        return _Parser(str(text)).signature(0, top=True)[0]

    @property
    def sections(self) -> Tuple["Signature", ...]:
        """The signatures a compound one joins (``(self,)`` for a simple one)."""
        if len(self._sections) == 1:
            return (self,)
        return tuple(Signature._of((s,), ()) for s in self._sections)

    @property
    def joins(self) -> Tuple[str, ...]:
        """How the sections are joined (``"||"`` or ``">>"`` between each two)."""
        return self._joins

    @property
    def members(self) -> Tuple["Signature", ...]:
        """The member signatures of a ``[A]+[B]`` field (a fusion's retrievers), in order; empty when none."""
        return tuple(m for s in self._sections for e in s if _is_members(e) for m in e)

    def items(self) -> List[Tuple[str, str]]:
        """Every ``(key, value)`` field, section after section (member signatures are in :attr:`members`)."""
        return [e for s in self._sections for e in s if _is_field(e)]  # type: ignore[misc]

    def __getitem__(self, key: Union[str, int, slice]) -> str:  # type: ignore[override]
        """The value of field ``key`` (the last one of a compound signature); an index or slice reads the text."""
        if not isinstance(key, str):
            return str.__getitem__(self, key)
        for k, v in reversed(self.items()):
            if k == key:
                return v
        raise KeyError(key)

    def get(self, key: str, default: Optional[str] = None) -> Optional[str]:
        try:
            return self[key]
        except KeyError:
            return default

    # -- building ------------------------------------------------------------------------------------------

    def extend(self, fields: Fields) -> "Signature":
        """A new signature with ``fields`` added to (or replaced in, in place) its last section, before
        ``version``."""
        new = dict(_checked(fields, version=False))
        last = self._sections[-1]
        tail = [e for e in last if _is_field(e) and e[0] == "version"]
        body: List[Entry] = []
        for e in last:
            if e in tail:
                continue
            body.append((e[0], new.pop(e[0])) if _is_field(e) and e[0] in new else e)
        return Signature._of(self._sections[:-1] + (tuple(body + list(new.items()) + tail),), self._joins)

    def then(self, other: str, join: str = "||") -> "Signature":
        """The compound signature of this stage followed by ``other`` (a signature or its text): ``join`` ``||``
        for how a pipeline's result was graded, ``>>`` for a reranker over this first stage."""
        if join not in JOINS:
            raise ValueError(f"join {join!r}: expected one of {', '.join(JOINS)}")
        nxt = Signature.of(other)
        return Signature._of(self._sections + nxt._sections, self._joins + (join,) + nxt._joins)

    def with_members(self, members: Iterable[str]) -> "Signature":
        """A new signature whose last section ends with the field ``[A]+[B]...`` of ``members`` (signatures or
        their texts): the retrievers a fusion ranks from."""
        ms = tuple(Signature.of(m) for m in members)
        if not ms:
            return self
        return Signature._of(self._sections[:-1] + (self._sections[-1] + (ms,),), self._joins)

    def __repr__(self) -> str:
        return f"Signature({str(self)!r})"


class _Parser:
    """The reader of rendered signatures (entries split at ``|``, sections at ``||`` and ``>>``; a member list
    ``[..]+[..]`` read recursively)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def signature(self, pos: int, *, top: bool) -> Tuple[Signature, int]:
        t = self.text
        sections: List[List[Entry]] = [[]]
        joins: List[str] = []
        if pos >= len(t) or (not top and t[pos] == "]"):
            return Signature._of(((),), ()), pos
        while True:
            if t[pos] == "[":
                entry, pos = self.members(pos)
            else:
                end = self.entry_end(pos, top)
                part = t[pos:end]
                key, sep, value = part.partition(":")
                if not sep:
                    raise ValueError(f"signature field {part!r} has no ':'")
                entry, pos = (key, value), end
            sections[-1].append(entry)
            if pos >= len(t) or (not top and t[pos] == "]"):
                break
            if t.startswith("||", pos) or t.startswith(">>", pos):
                joins.append(t[pos:pos + 2])
                sections.append([])
                pos += 2
            elif t[pos] == "|":
                pos += 1
            else:
                raise ValueError(f"signature text {t[pos:pos + 20]!r}: expected '|', '||' or '>>' here")
            if pos >= len(t):
                raise ValueError(f"signature {t!r} ends with a separator")
        return Signature._of(tuple(tuple(s) for s in sections), tuple(joins)), pos

    def entry_end(self, pos: int, top: bool) -> int:
        """Where a ``key:value`` entry starting at ``pos`` ends (the next separator, or a member's ``]``)."""
        t = self.text
        i = pos
        depth = 0
        while i < len(t):
            c = t[i]
            if c == "|" or t.startswith(">>", i):
                return i
            if c == "[":
                depth += 1
            elif c == "]":
                if depth == 0 and not top:
                    return i
                depth = max(0, depth - 1)
            i += 1
        return i

    def members(self, pos: int) -> Tuple[Tuple[Signature, ...], int]:
        t = self.text
        out: List[Signature] = []
        while True:
            sig, pos = self.signature(pos + 1, top=False)
            if pos >= len(t) or t[pos] != "]":
                raise ValueError(f"signature {t!r}: a member list '[' without its ']'")
            out.append(sig)
            pos += 1
            if t.startswith("+[", pos):
                pos += 1
                continue
            return tuple(out), pos
