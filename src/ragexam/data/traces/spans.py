"""One span of a trace, as every export format is read into: :class:`Span`.

A reader (:mod:`.langfuse`, :mod:`.phoenix`, :mod:`.otel`) turns each record of an export into spans with their
vendor payloads (``input``, ``output``, ``documents``); :func:`ragexam.data.traces.mapping.extract` then takes
the question, answer and documents out of the payloads and drops them, so a span held or spilled to disk while its
trace is assembled carries only what the answers file needs.

Roles (``role``): ``retrieval`` (a retriever or reranker), ``generation`` (a model call), ``span`` (anything
else: chains, tools, agents), ``trace`` (a trace-level record: Langfuse's trace row), ``score`` (a feedback
record of the trace) and ``annotation`` (feedback about one span, Phoenix's span annotations: matched to its
trace by the span id).  ``kind`` is what the vendor called it (``RETRIEVER``, ``GENERATION``, ``gen_ai:chat``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import List, Optional, Tuple, Union

from ragexam.data.traces.meta import Feedback
from ragexam.data.traces.values import Doc, TraceValue

__all__ = ["Span", "Unreadable", "ROLES", "to_ns", "time_of", "shown", "iso_of_ns", "pick_int", "pick_str"]

ROLES = ("retrieval", "generation", "span", "trace", "score", "annotation")


@dataclass(slots=True)
class Span:
    """A span (module docstring); times are Unix nanoseconds."""

    trace_id: str
    span_id: str
    role: str
    kind: str = ""
    name: str = ""
    parent_id: Optional[str] = None
    start_ns: Optional[int] = None
    end_ns: Optional[int] = None
    input: TraceValue = None
    output: TraceValue = None
    query: Optional[str] = None
    documents: TraceValue = None
    model: Optional[str] = None
    tokens: Tuple[Optional[int], Optional[int], Optional[int]] = (None, None, None)
    user: Optional[str] = None
    session: Optional[str] = None
    tags: Tuple[str, ...] = ()
    feedback: Tuple[Feedback, ...] = ()
    error: Optional[str] = None
    latency_ms: Optional[float] = None
    where: str = ""
    bad_text: bool = False
    seq: int = 0
    source: str = ""
    # filled by mapping.extract (the payloads above are then dropped)
    question: Optional[str] = None
    question_from: str = ""
    answer: Optional[str] = None
    answer_from: str = ""
    docs: Optional[List[Doc]] = None
    docs_from: str = ""
    mapped: Tuple[str, ...] = ()  # the --map keys that took effect on this span (mapping.extract)
    #: fields the reader could not read: (a problem of ragexam.data.traces.meta.PROBLEMS, "FIELD RECEIVED")
    notes: Tuple[Tuple[str, str], ...] = ()
    extracted: bool = field(default=False, repr=False)

    @property
    def size(self) -> int:
        """Characters of text held (to bound what is kept in memory)."""
        n = len(self.question or "") + len(self.answer or "")
        for d in self.docs or ():
            n += len(d.text or "") + 16
        return n + 200


@dataclass(frozen=True)
class Unreadable:
    """A record of an export that holds no usable span: ``reason`` (a key of
    :data:`ragexam.data.traces.reading.LINE_REASONS`), where it is and what was found."""

    reason: str
    where: str
    detail: str = ""


#: Unix seconds of 2000-01-01 and 2100-01-01: a number of seconds, ms, µs or ns between them is a time (the four
#: ranges do not overlap, so the unit is never a guess)
_EPOCH_WINDOW = (946_684_800, 4_102_444_800)


def _epoch_ns(n: Union[int, float]) -> Optional[int]:
    """Nanoseconds of a Unix time given in s, ms, µs or ns, told apart by magnitude (:data:`_EPOCH_WINDOW`)."""
    lo, hi = _EPOCH_WINDOW
    for scale in (1, 1_000, 1_000_000, 1_000_000_000):  # the number's units per second
        if lo * scale <= n < hi * scale:
            factor = 1_000_000_000 // scale
            return n * factor if isinstance(n, int) else int(round(n * factor))
    return None


def to_ns(value: TraceValue) -> Optional[int]:
    """Unix nanoseconds of a timestamp as exports write them: an ISO 8601 string (``Z`` or an offset; no offset is
    UTC), Langfuse's ``YYYY-MM-DD HH:MM:SS.ffffff`` (UTC), a :class:`datetime`, or a number/digit string of Unix
    seconds, milliseconds, microseconds or nanoseconds (OTLP's ``startTimeUnixNano``; pandas' epoch milliseconds)
    of a time in 2000-2100, the unit told by its magnitude.  ``None`` for anything else (``12345`` is no time)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return _epoch_ns(value) if value == value else None
    if isinstance(value, datetime):
        dt = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        return _ns(dt)
    if isinstance(value, str):
        s = value.strip()
        if s.isdigit():
            return _epoch_ns(int(s))
        if not s:
            return None
        try:
            dt = datetime.fromisoformat(s.replace(" ", "T", 1) if len(s) > 10 and s[10] == " " else s)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return _ns(dt)
    if hasattr(value, "value") and isinstance(getattr(value, "value"), int):  # pandas Timestamp
        return int(value.value)
    return None


def time_of(value: TraceValue, name: str, notes: List[Tuple[str, str]]) -> Optional[int]:
    """:func:`to_ns` of the field ``name``; a value given that is no time adds ``("time_unreadable", "NAME
    VALUE")`` to ``notes`` (a blank or null one is just missing)."""
    ns = to_ns(value)
    if ns is None and value is not None and not (isinstance(value, str) and not value.strip()):
        notes.append(("time_unreadable", f"{name} {shown(value)}"))
    return ns


def shown(value: TraceValue) -> str:
    """A received value as a note shows it: its JSON, cut to 40 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _ns(dt: datetime) -> int:
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def iso_of_ns(ns: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (UTC, microseconds) of Unix nanoseconds."""
    sec, rest = divmod(ns, 1_000_000_000)
    dt = datetime.fromtimestamp(sec, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{rest // 1000:06d}Z"


def pick_int(*values: TraceValue) -> Optional[int]:
    """The first value that is a non-negative integer (or a digit string)."""
    for v in values:
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int) and v >= 0:
            return v
        if isinstance(v, float) and v.is_integer() and v >= 0:
            return int(v)
        if isinstance(v, str) and v.strip().isdigit():
            return int(v)
    return None


def pick_str(*values: TraceValue) -> Optional[str]:
    """The first value that is a non-blank string (numbers as text)."""
    for v in values:
        if isinstance(v, str) and v.strip():
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return str(v)
    return None
