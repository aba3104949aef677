"""Langfuse exports: traces, observations and scores, as the public API and the blob-storage export write them.

Records are read in both spellings Langfuse uses -- the public API's camelCase (``traceId``, ``startTime``,
``usageDetails``; what ``GET /api/public/traces/{id}`` and the SDKs' ``fetch_traces`` return) and the blob-storage
export's snake_case (``trace_id``, ``start_time``, ``usage_details``; timestamps ``YYYY-MM-DD HH:MM:SS.ffffff`` in
UTC) -- one JSON object per line, or a JSON array (the UI's JSON export), or an API page ``{"data": [...]}``:

* a **trace with its observations** (``TraceWithFullDetails``: ``id``, ``timestamp``, ``input``, ``output``,
  ``userId``, ``sessionId``, ``tags``, ``latency`` in seconds, ``observations`` and ``scores`` as objects);
* a **trace row** (``id``, ``timestamp``, ``input``, ``output``, ``user_id``, ``session_id``, ``tags``, ...;
  the blob export's ``traces/`` file, the UI's traces table);
* an **observation** (``id``, ``trace_id``, ``type``, ``name``, ``start_time``, ``end_time``,
  ``parent_observation_id``, ``input``, ``output``, ``provided_model_name``/``model``, ``usage_details``/``usage``,
  ``level``, ``status_message``; the enriched ``observations_v2/`` rows also carry the trace's ``user_id``,
  ``session_id`` and ``tags``); object columns may be objects, JSON text (the CSV export) or key-value pairs (a
  Parquet map column, the blob export's default file type);
* a **score** (``trace_id``, ``name``, ``value``, ``string_value``, ``data_type``, ``source``, ``comment``).

Observation types: ``RETRIEVER`` is a retrieval, ``GENERATION`` a generation, the rest (``SPAN``, ``EVENT``,
``CHAIN``, ``TOOL``, ``AGENT``, ...) are other spans -- a ``SPAN`` whose name says retrieval is taken as one
when its output reads as documents (:func:`ragexam.data.traces.mapping.extract`).  A trace's question and answer
are its own ``input`` and ``output`` first (:mod:`.mapping`).
"""

from __future__ import annotations

from typing import Iterator, List, Mapping, Optional, Tuple

from ragexam.data.traces.meta import Feedback
from ragexam.data.traces.spans import Span, pick_int, pick_str, shown, time_of
from ragexam.data.traces.values import TraceValue, number_of, tags_of, unwrap

__all__ = ["detect", "read", "OBSERVATION_TYPES"]

OBSERVATION_TYPES = ("SPAN", "GENERATION", "EVENT", "AGENT", "TOOL", "CHAIN", "RETRIEVER", "EVALUATOR", "EMBEDDING",
                     "GUARDRAIL")
_TRACE_FIELDS = ("input", "output", "userId", "user_id", "sessionId", "session_id", "tags", "name")


def _g(obj: Mapping[str, TraceValue], camel: str, snake: str) -> TraceValue:
    v = obj.get(camel)
    return obj.get(snake) if v is None else v


def _trace_id(obj: Mapping[str, TraceValue]) -> Optional[str]:
    return pick_str(_g(obj, "traceId", "trace_id"))


def _kind(obj: Mapping[str, TraceValue]) -> str:
    if isinstance(obj.get("observations"), list) and pick_str(obj.get("id")):
        return "full"
    tid = _trace_id(obj)
    if tid is not None and str(obj.get("type") or "").upper() in OBSERVATION_TYPES:
        return "observation"
    if tid is not None and isinstance(obj.get("name"), str) and "type" not in obj and (
            "value" in obj or _g(obj, "stringValue", "string_value") is not None):
        return "score"
    if tid is None and pick_str(obj.get("id")) and obj.get("timestamp") is not None and any(
            k in obj for k in _TRACE_FIELDS):
        return "trace"
    return ""


def detect(obj: TraceValue) -> bool:
    """Whether ``obj`` is a Langfuse trace, observation or score."""
    return isinstance(obj, dict) and bool(_kind(obj))


def _object(value: TraceValue) -> dict:
    """An object column as exports hold it: an object (JSON), JSON text (CSV), or ``(key, value)`` pairs (a Parquet
    map column as pyarrow reads it)."""
    value = unwrap(value)
    if isinstance(value, dict):
        return value
    if isinstance(value, list) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        return {str(k): v for k, v in value}
    return {}


def _tags(obj: Mapping[str, TraceValue], notes: List[Tuple[str, str]]) -> tuple:
    tags, readable = tags_of(obj.get("tags"))  # a JSON text in CSV exports; one text is one tag
    if not readable:
        notes.append(("tags_unreadable", f"tags {shown(obj.get('tags'))}"))
    return tags


def _latency_ms(obj: Mapping[str, TraceValue], notes: List[Tuple[str, str]]) -> Optional[float]:
    """The trace's ``latency`` (seconds) in ms: a number or its text; anything else is noted."""
    latency = obj.get("latency")
    if latency is None:
        return None
    seconds = None if isinstance(latency, bool) else number_of(latency)
    if seconds is None or seconds < 0:
        notes.append(("latency_unreadable", f"latency {shown(latency)}"))
        return None
    return seconds * 1000.0


def _trace(obj: Mapping[str, TraceValue], where: str) -> Span:
    notes: List[Tuple[str, str]] = []
    ts = time_of(obj.get("timestamp"), "timestamp", notes)
    span = Span(str(obj["id"]), f"trace:{obj['id']}", "trace", "TRACE", str(obj.get("name") or ""), None, ts, None,
                obj.get("input"), obj.get("output"),
                user=pick_str(_g(obj, "userId", "user_id")), session=pick_str(_g(obj, "sessionId", "session_id")),
                tags=_tags(obj, notes), latency_ms=_latency_ms(obj, notes), where=where)
    span.notes = tuple(notes)
    return span


def _usage(obj: Mapping[str, TraceValue]) -> tuple:
    d = _object(_g(obj, "usageDetails", "usage_details"))
    u = _object(obj.get("usage"))
    prompt = pick_int(d.get("input"), u.get("input"), u.get("promptTokens"), obj.get("promptTokens"))
    completion = pick_int(d.get("output"), u.get("output"), u.get("completionTokens"), obj.get("completionTokens"))
    total = pick_int(d.get("total"), u.get("total"), u.get("totalTokens"), obj.get("totalTokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    return prompt, completion, total


def _observation(obj: Mapping[str, TraceValue], trace_id: str, where: str) -> Span:
    kind = str(obj.get("type") or "").upper()
    role = {"RETRIEVER": "retrieval", "GENERATION": "generation"}.get(kind, "span")
    level = str(obj.get("level") or "").upper()
    error = (pick_str(_g(obj, "statusMessage", "status_message")) or "error") if level == "ERROR" else None
    notes: List[Tuple[str, str]] = []
    span = Span(trace_id, str(obj.get("id") or ""), role, kind, str(obj.get("name") or ""),
                pick_str(_g(obj, "parentObservationId", "parent_observation_id")),
                time_of(_g(obj, "startTime", "start_time"), "startTime", notes),
                time_of(_g(obj, "endTime", "end_time"), "endTime", notes),
                obj.get("input"), obj.get("output"), documents=obj.get("output") if role == "retrieval" else None,
                model=pick_str(obj.get("model"), obj.get("provided_model_name"), obj.get("providedModelName")),
                tokens=_usage(obj) if role == "generation" else (None, None, None),
                user=pick_str(_g(obj, "userId", "user_id")), session=pick_str(_g(obj, "sessionId", "session_id")),
                tags=_tags(obj, notes), error=error, where=where)
    span.notes = tuple(notes)
    return span


def _score(obj: Mapping[str, TraceValue], trace_id: str, where: str) -> Span:
    dtype = str(_g(obj, "dataType", "data_type") or "").upper()
    value = obj.get("value")
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if dtype in ("CATEGORICAL", "TEXT"):
        number = None  # the value is a category index (or 0): the label is the score
    fb = Feedback(str(obj["name"]), number, pick_str(_g(obj, "stringValue", "string_value")),
                  pick_str(obj.get("source")), pick_str(obj.get("comment")))
    return Span(trace_id, f"score:{obj.get('id') or obj['name']}", "score", "SCORE", str(obj["name"]),
                feedback=(fb,), where=where)


def read(obj: Mapping[str, TraceValue], where: str) -> Iterator[Span]:
    """The spans of one Langfuse record (module docstring)."""
    kind = _kind(obj)
    if kind in ("full", "trace"):
        yield _trace(obj, where)
        tid = str(obj["id"])
        for o in obj.get("observations") or ():
            if isinstance(o, dict):
                yield _observation(o, tid, where)
        for s in obj.get("scores") or ():
            if isinstance(s, dict) and isinstance(s.get("name"), str):
                yield _score(s, tid, where)
    elif kind == "observation":
        yield _observation(obj, str(_trace_id(obj)), where)
    elif kind == "score":
        yield _score(obj, str(_trace_id(obj)), where)
