"""Typed records that read and write JSON: the base of :mod:`ragexam.storage.summary`.

A :class:`Record` is a dataclass whose fields are JSON values, other records, or lists and string-keyed dicts of
them.  :meth:`Record.from_dict` builds one from parsed JSON, checking every field's type and naming the path of
the first wrong value (``results["bm25 | paragraphs:400"].ci95["hit@5"]``); :meth:`Record.to_dict` writes it back
in field order.  Three rules keep old and new files readable:

* a field absent from the JSON takes its default (every field has one), so an older format reads;
* a key the record does not know is kept in ``extra`` and written back after the known ones, so a newer
  format (or a key a user added) survives a read and a write;
* a field declared with ``omit=True`` in its metadata (see :func:`opt`) is left out of the JSON when it is
  ``None`` or empty, as the writers always did for keys that appear only sometimes;
* a field the JSON did not have is not written back while it still holds its default, so a file of an older
  format reads and writes back unchanged.

This module imports nothing of ragexam but :mod:`ragexam.errors`.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from collections.abc import Mapping as MappingABC
from typing import Any, Callable, ClassVar, Dict, Iterator, Mapping, Optional, Tuple, Type, TypeVar, Union

from ragexam.errors import InputError
from ragexam.types import JsonValue

__all__ = ["Record", "JsonView", "opt"]

R = TypeVar("R", bound="Record")
#: a declared type: a class or a typing construct (``Optional[float]``, ``List[Foo]``, ``Dict[str, int]``)
Hint = object
#: what reads a value of parsed JSON as one declared type (``where``: its path, for the message)
Reader = Callable[[JsonValue, str], object]
_HINTS: Dict[type, Dict[str, Hint]] = {}


def opt(default: None = None, *, factory: Optional[Callable[[], object]] = None) -> Any:
    """A field left out of the JSON when it is ``None`` or empty (``factory`` for a mutable default)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"omit": True})
    return field(default=default, metadata={"omit": True})


def _hints(cls: type) -> Dict[str, Hint]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _type_name(tp: Hint) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


class _Bad(Exception):
    def __init__(self, where: str, value: JsonValue, expected: str) -> None:
        super().__init__(where)
        self.where, self.value, self.expected = where, value, expected


_READERS: Dict[Hint, Reader] = {}


def _read(tp: Hint, value: JsonValue, where: str) -> object:
    """``value`` (parsed JSON) as type ``tp``; raises :class:`_Bad` naming the path of a wrong value."""
    reader = _READERS.get(tp)
    if reader is None:
        reader = _READERS[tp] = _make_reader(tp)
    return reader(value, where)


def _scalar(check: Callable[[JsonValue], bool], expected: str,
            convert: Callable[[JsonValue], object] = lambda v: v) -> Reader:
    def read(value: JsonValue, where: str) -> object:
        if not check(value):
            raise _Bad(where, value, expected)
        return convert(value)
    return read


def _make_reader(tp: Hint) -> Reader:
    """The reader of one declared type (built once per type: a summary holds many thousands of values)."""
    if tp is Any:
        return lambda value, where: value
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union:
        others = [a for a in args if a is not type(None)]
        nullable = len(others) < len(args)

        def read_union(value: JsonValue, where: str) -> object:
            if value is None and nullable:
                return None
            last: Optional[_Bad] = None
            for a in others:
                try:
                    return _read(a, value, where)
                except _Bad as bad:
                    last = bad
            raise last if last is not None else _Bad(where, value, " or ".join(map(_type_name, others)))
        return read_union
    if isinstance(tp, type) and issubclass(tp, Record):
        def read_record(value: JsonValue, where: str) -> object:
            if not isinstance(value, Mapping):
                raise _Bad(where, value, "an object")
            return tp._build(value, where)
        return read_record
    if origin in (list, tuple):
        item = args[0] if args else Any
        make = list if origin is list else tuple

        def read_list(value: JsonValue, where: str) -> object:
            if not isinstance(value, (list, tuple)):
                raise _Bad(where, value, "a list")
            return make(_read(item, v, f"{where}[{i}]") for i, v in enumerate(value))
        return read_list
    if origin is dict:
        item = args[1] if args else Any

        def read_dict(value: JsonValue, where: str) -> object:
            if not isinstance(value, Mapping):
                raise _Bad(where, value, "an object")
            return {str(k): _read(item, v, f"{where}[{str(k)!r}]") for k, v in value.items()}
        return read_dict
    if tp is float:
        return _scalar(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number")
    if tp is int:
        return _scalar(lambda v: (isinstance(v, int) and not isinstance(v, bool))
                       or (isinstance(v, float) and v.is_integer()), "an integer", int)
    if tp is bool:
        return _scalar(lambda v: isinstance(v, bool), "true or false")
    if tp is str:
        return _scalar(lambda v: isinstance(v, str), "a string")
    return lambda value, where: value


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def _write(value: object) -> JsonValue:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [_write(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _write(v) for k, v in value.items()}
    return value


@dataclass
class Record:
    """Base of the typed JSON records (module docstring).  ``extra`` holds the keys a record does not know."""

    #: JSON keys whose field has another name (``{"json key": "field name"}``)
    renamed: ClassVar[Dict[str, str]] = {}
    #: fields the JSON a record was read from did not have (not written back while they hold their default)
    _absent: ClassVar[frozenset] = frozenset()

    extra: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False, kw_only=True,
                                  metadata={"omit": True})

    @classmethod
    def _fields(cls) -> Tuple[dataclasses.Field, ...]:
        return tuple(f for f in dataclasses.fields(cls) if f.name != "extra")

    @classmethod
    def _build(cls: Type[R], data: Mapping[str, Any], where: str) -> R:
        hints = _hints(cls)
        by_key = {cls._key(f.name): f for f in cls._fields()}
        kwargs: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        for key, value in data.items():
            f = by_key.get(key)
            if f is None:
                extra[key] = value
                continue
            kwargs[f.name] = _read(hints[f.name], value, f"{where}.{key}" if where else key)
        obj = cls(**kwargs, extra=extra)
        obj._absent = frozenset(f.name for f in cls._fields() if f.name not in kwargs)
        return obj

    @classmethod
    def _key(cls, name: str) -> str:
        for key, fname in cls.renamed.items():
            if fname == name:
                return key
        return name

    @classmethod
    def from_dict(cls: Type[R], data: Union[R, JsonValue], *, source: str = "summary") -> R:
        """The record of parsed JSON ``data``; a wrong value raises :class:`~ragexam.errors.InputError` naming
        ``source`` and the path of the value (``results["bm25"].metrics["hit@5"]``)."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise InputError(f"received {type(data).__name__}; expected a JSON object.", source=source)
        try:
            return cls._build(data, "")
        except _Bad as bad:
            shown = repr(bad.value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise InputError(f"received {shown}; expected {bad.expected}.", source=source,
                             field=bad.where) from None

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object: fields in order (``omit`` fields only when set), then ``extra``."""
        out: Dict[str, Any] = {}
        for f in self._fields():
            value = getattr(self, f.name)
            if f.metadata.get("omit") and (value is None or (isinstance(value, (dict, list)) and not value)):
                continue
            if f.name in self._absent and value == _default(f):
                continue
            out[self._key(f.name)] = _write(value)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


class JsonView(MappingABC):
    """A record that is also a read-only mapping of its top-level keys to their JSON values (for code written
    against the JSON object: ``summary["results"]``), equal to another record of its class, or to a JSON object,
    with the same JSON.  Put it before :class:`Record` in the bases and declare the dataclass with ``eq=False``."""

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]  # type: ignore[attr-defined]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self.to_dict())  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, type(self)):
            return self.to_dict() == other.to_dict()  # type: ignore[attr-defined]
        if isinstance(other, MappingABC):
            return self.to_dict() == dict(other)  # type: ignore[attr-defined]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
