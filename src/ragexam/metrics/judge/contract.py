"""Reply contracts: one declaration gives the JSON schema that constrains decoding *and* the parser.

A :class:`Contract` is an ordered list of :class:`Field` s.  From it come

* :meth:`Contract.schema` -- the JSON schema sent as ``response_format`` (``json_schema``).  It states
  everything the parser demands: every field ``required``, ``additionalProperties: false``, integer
  scores as an ``enum`` of the levels, per-unit arrays with ``minItems = maxItems =`` the number of
  units (contexts, claims, statements) of *this* item, ``maxLength`` on free text (a loop in the
  reasoning cannot run to ``max_tokens``).  An endpoint that enforces the schema (llama.cpp, vLLM,
  OpenAI structured outputs) therefore cannot return a reply the parser rejects.  An endpoint that
  refuses some of these keywords gets the schema without them (``minItems``, ``maxItems``,
  ``maxLength``: :func:`ragexam.llm.client.portable_schema`) before the client falls back to JSON mode;
* :meth:`Contract.check` -- the parser: the same rules, in the same order, each failure a
  :class:`ReplyError` whose message quotes the rule that was broken and what was received, so the
  retry feedback tells the model exactly what to fix;
* :meth:`Contract.options` -- for a scored field, the JSON texts of its values and their numbers
  (``"1"`` ... ``"5"``; ``true`` = 1, ``false`` = 0; ``"abstained"`` = 1), which probability scoring
  reads from the reply's token log-probabilities (:mod:`ragexam.llm.logprobs`).

Field kinds: :class:`Text` (a string, at most ``max_length`` characters in the schema), :class:`Number`,
:class:`Flag` (true/false), :class:`Levels` (one integer of a fixed set), :class:`Choice` (one string of a
fixed set) and :class:`PerUnit` (a list of exactly one :class:`Flag` / :class:`Levels` per unit).
Integers may be written ``4`` or ``4.0``; ``true`` is not an integer; strings are not numbers.  Keys the
contract does not name are ignored by the parser (the schema forbids them).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union

__all__ = ["ReplyError", "NotApplicable", "Text", "Number", "Flag", "Levels", "Choice", "PerUnit", "Field",
           "Contract", "UNIT_WORDS", "instance"]

#: unit -> (singular, plural) as the rules name them
UNIT_WORDS: Dict[str, Tuple[str, str]] = {"contexts": ("context", "contexts"), "claims": ("claim", "claims"),
                                          "statements": ("statement", "statements")}


class ReplyError(Exception):
    """An unusable reply.  ``kind`` is ``invalid_json`` (no JSON object could be read) or
    ``invalid_reply`` (JSON that breaks the contract); ``message`` says what, for the judge."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class NotApplicable(Exception):
    """A valid reply that yields no score (``answer_relevancy`` of an answer that declines)."""

    def __init__(self, reason: str, message: str, details: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.details = details or {}


def _int(v: Any) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


@dataclass(frozen=True)
class Text:
    """A string; ``max_length`` bounds it in the schema only (a long reasoning is not a reason to reject)."""

    max_length: Optional[int] = 400

    def schema(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"type": "string"}
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        return out

    def rule(self) -> str:
        return "a string"

    def read(self, v: Any) -> Any:
        return v if isinstance(v, str) else _BAD


@dataclass(frozen=True)
class Number:
    """A finite number."""

    def schema(self) -> Dict[str, Any]:
        return {"type": "number"}

    def rule(self) -> str:
        return "a number"

    def read(self, v: Any) -> Any:
        ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
        return float(v) if ok else _BAD


@dataclass(frozen=True)
class Flag:
    """``true`` or ``false``; as a score, true = 1."""

    def schema(self) -> Dict[str, Any]:
        return {"type": "boolean"}

    def rule(self) -> str:
        return "true or false"

    def read(self, v: Any) -> Any:
        return v if isinstance(v, bool) else _BAD

    def options(self) -> List[Tuple[str, float]]:
        return [("true", 1.0), ("false", 0.0)]


@dataclass(frozen=True)
class Levels:
    """One integer of ``levels`` (an ``enum`` in the schema)."""

    levels: Tuple[int, ...] = (1, 2, 3, 4, 5)

    def schema(self) -> Dict[str, Any]:
        return {"type": "integer", "enum": list(self.levels)}

    def rule(self) -> str:
        lv = self.levels
        consecutive = list(lv) == list(range(lv[0], lv[-1] + 1))
        return f"an integer from {lv[0]} to {lv[-1]}" if consecutive and len(lv) > 2 else \
            "one integer of " + ", ".join(map(str, lv))

    def read(self, v: Any) -> Any:
        iv = _int(v)
        return iv if iv is not None and iv in self.levels else _BAD

    def options(self) -> List[Tuple[str, float]]:
        return [(str(lv), float(lv)) for lv in self.levels]


@dataclass(frozen=True)
class Choice:
    """One string of ``values`` (an ``enum``); as a score, ``positive`` = 1 and every other value 0."""

    values: Tuple[str, ...]
    positive: Optional[str] = None

    def schema(self) -> Dict[str, Any]:
        return {"type": "string", "enum": list(self.values)}

    def rule(self) -> str:
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in self.values)

    def read(self, v: Any) -> Any:
        return v if isinstance(v, str) and v in self.values else _BAD

    def options(self) -> List[Tuple[str, float]]:
        """The values as JSON texts with 1 for ``positive``, 0 for the others; none without a ``positive`` (the
        values have no order: ``pairwise``'s winner)."""
        if self.positive is None:
            return []
        return [(json.dumps(v, ensure_ascii=False), 1.0 if v == self.positive else 0.0) for v in self.values]


@dataclass(frozen=True)
class PerUnit:
    """A list of exactly one ``item`` per unit of the item (its contexts, claims or statements), in order."""

    item: Union[Flag, Levels]
    unit: str = "contexts"

    def schema(self, n: Optional[int]) -> Dict[str, Any]:
        bound = n if n is not None else "{n}"
        return {"type": "array", "items": self.item.schema(), "minItems": bound, "maxItems": bound}

    def rule(self, n: int) -> str:
        one, many = UNIT_WORDS.get(self.unit, (self.unit, self.unit))
        what = self.item.rule()
        values = "value" if isinstance(self.item, Flag) else "integer"
        return (f"a list of exactly {n} {values}{'s' if n != 1 else ''} ({what}), one per {one} in order "
                f"from {one} 1 to {one} {n} (minItems {n}, maxItems {n})")


_BAD = object()
Kind = Union[Text, Number, Flag, Levels, Choice, PerUnit]


@dataclass(frozen=True)
class Field:
    """One key of the reply: its ``name`` and ``kind``."""

    name: str
    kind: Kind

    def rule(self, n: int) -> str:
        what = self.kind.rule(n) if isinstance(self.kind, PerUnit) else self.kind.rule()
        return f'"{self.name}" must be {what}'


@dataclass(frozen=True)
class Contract:
    """An ordered reply contract (see the module docstring).  ``score`` names the field that carries the
    score (its probabilities give the probability score)."""

    fields: Tuple[Field, ...]
    score: Optional[str] = None

    def field(self, name: str) -> Field:
        return next(f for f in self.fields if f.name == name)

    @property
    def unit(self) -> Optional[str]:
        """The unit of the per-unit field (``contexts``, ``claims``, ``statements``), or ``None``."""
        return next((f.kind.unit for f in self.fields if isinstance(f.kind, PerUnit)), None)

    def schema(self, n: Optional[int] = None) -> Dict[str, Any]:
        """The JSON schema of a reply about an item with ``n`` units (``None``: the template, ``"{n}"`` in the
        array bounds, which is what rubric hashes cover)."""
        props = {}
        for f in self.fields:
            props[f.name] = f.kind.schema(n) if isinstance(f.kind, PerUnit) else f.kind.schema()
        return {"type": "object", "properties": props, "required": [f.name for f in self.fields],
                "additionalProperties": False}

    def rules(self, n: int) -> List[str]:
        """Every rule in words, as :meth:`check` quotes them."""
        return [f.rule(n) for f in self.fields]

    def check(self, obj: Dict[str, Any], n: int = 0) -> Dict[str, Any]:
        """The checked reply: ``{field: value}`` (levels as ``int``, numbers as ``float``); :class:`ReplyError`
        quoting the first rule broken."""
        out: Dict[str, Any] = {}
        for f in self.fields:
            if f.name not in obj or obj[f.name] is None and not isinstance(f.kind, Text):
                got = "it is missing" if f.name not in obj else "it is null"
                raise ReplyError("invalid_reply", f"the reply broke the rule: {f.rule(n)}; {got}")
            v = obj[f.name]
            if isinstance(f.kind, PerUnit):
                out[f.name] = self._per_unit(f, v, n)
                continue
            r = f.kind.read(v)
            if r is _BAD:
                raise ReplyError("invalid_reply", f"the reply broke the rule: {f.rule(n)}; it is {_show(v)}")
            out[f.name] = r
        return out

    @staticmethod
    def _per_unit(f: Field, v: Any, n: int) -> List[Any]:
        kind = f.kind
        assert isinstance(kind, PerUnit)
        if not isinstance(v, list):
            raise ReplyError("invalid_reply", f"the reply broke the rule: {f.rule(n)}; it is {_show(v)}")
        if len(v) != n:
            raise ReplyError("invalid_reply", f"the reply broke the rule: {f.rule(n)}; it holds {len(v)}: {_show(v)}")
        vals = []
        for i, x in enumerate(v, 1):
            r = kind.item.read(x)
            if r is _BAD:
                raise ReplyError("invalid_reply", f"the reply broke the rule: {f.rule(n)}; value {i} is {_show(x)}")
            vals.append(r)
        return vals

    def options(self, name: Optional[str] = None) -> List[Tuple[str, float]]:
        """``[(JSON text, value)]`` of the scored field (or field ``name``); empty when it has no fixed values
        (free text, numbers) or a value needs more than one token to tell apart (levels of two digits)."""
        f = self.field(name or self.score) if (name or self.score) else None
        if f is None:
            return []
        kind = f.kind.item if isinstance(f.kind, PerUnit) else f.kind
        if not hasattr(kind, "options"):
            return []
        opts = kind.options()
        if isinstance(kind, Levels) and any(not 0 <= lv <= 9 for lv in kind.levels):
            return []
        return opts

    def per_unit(self, name: Optional[str] = None) -> bool:
        """Whether the scored field (or field ``name``) holds one value per unit."""
        key = name or self.score
        return key is not None and isinstance(self.field(key).kind, PerUnit)

    def describe(self) -> List[Any]:
        """A stable description for hashing (the template schema)."""
        return [self.schema(None), self.score]

    def example(self, n: int) -> Dict[str, Any]:
        """A valid reply (the first value of every field): how the stub endpoint answers an unknown schema."""
        return instance(self.schema(n))


def instance(schema: Any) -> Any:
    """The simplest value valid under ``schema`` (objects, arrays with ``minItems``, enums, scalars)."""
    if not isinstance(schema, dict):
        return None
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object":
        return {k: instance(v) for k, v in (schema.get("properties") or {}).items()}
    if t == "array":
        n = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
        return [instance(schema.get("items") or {}) for _ in range(n)]
    return {"string": "", "integer": 0, "number": 0, "boolean": False}.get(t)
