"""OTLP JSON exports: ``ExportTraceServiceRequest`` objects, one per line (the OpenTelemetry Collector's file
exporter) or one per file.

The shape is OTLP's JSON encoding: ``{"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans":
[{"scope": {...}, "spans": [...]}]}]}``; a span has ``traceId`` and ``spanId`` (hex; base64 as protobuf's own JSON
printer writes bytes is accepted too), ``parentSpanId``, ``name``, ``kind``, ``startTimeUnixNano``,
``endTimeUnixNano`` (integers or digit strings), ``attributes`` (a list of ``{"key", "value": AnyValue}``),
``events`` and ``status`` (``{"code": 2}`` or ``"STATUS_CODE_ERROR"`` is an error).  Field names are accepted in
lowerCamelCase and snake_case; the older ``instrumentationLibrarySpans`` is read like ``scopeSpans``.  What the
attributes mean (OpenTelemetry GenAI or OpenInference) is :mod:`.attributes`.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from ragexam.data.traces.attributes import span_from_attributes
from ragexam.data.traces.spans import Span, Unreadable, pick_str, time_of
from ragexam.data.traces.values import TraceValue

__all__ = ["detect", "read", "any_value", "attributes_of", "hex_id"]

_HEX = re.compile(r"^[0-9a-fA-F]+$")


def _get(obj: Mapping[str, TraceValue], camel: str) -> TraceValue:
    v = obj.get(camel)
    if v is None:
        snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), camel)
        v = obj.get(snake)
    return v


def detect(obj: TraceValue) -> bool:
    """Whether ``obj`` is an OTLP ``ExportTraceServiceRequest``."""
    return isinstance(obj, dict) and isinstance(_get(obj, "resourceSpans"), list)


def any_value(v: TraceValue) -> TraceValue:
    """The Python value of an OTLP ``AnyValue`` object."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        x = _get(v, key)
        if x is not None:
            return x
    x = _get(v, "intValue")
    if x is not None:
        try:
            return int(x)
        except (TypeError, ValueError):
            return x
    arr = _get(v, "arrayValue")
    if isinstance(arr, dict):
        return [any_value(a) for a in arr.get("values") or []]
    kv = _get(v, "kvlistValue")
    if isinstance(kv, dict):
        return attributes_of(kv.get("values"))
    b = _get(v, "bytesValue")
    if isinstance(b, str):
        return b
    return None


def attributes_of(items: TraceValue) -> Dict[str, Any]:
    """``{key: value}`` of an OTLP attribute list."""
    out: Dict[str, Any] = {}
    if isinstance(items, list):
        for kv in items:
            if isinstance(kv, dict) and isinstance(kv.get("key"), str):
                out[kv["key"]] = any_value(kv.get("value"))
    elif isinstance(items, dict):  # already a mapping (a hand-written export)
        out.update(items)
    return out


def hex_id(v: TraceValue) -> Optional[str]:
    """A trace or span id as lower-case hex (OTLP JSON writes hex; base64 is decoded)."""
    if not isinstance(v, str) or not v:
        return None
    if _HEX.match(v) and len(v) in (16, 32):
        return v.lower()
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return v
    return raw.hex() if len(raw) in (8, 16) else v


def _status_error(status: TraceValue) -> Optional[str]:
    if not isinstance(status, dict):
        return None
    code = status.get("code")
    if code in (2, "2", "STATUS_CODE_ERROR", "ERROR"):
        return pick_str(status.get("message")) or "error"
    return None


def _events(items: TraceValue) -> List[Dict[str, Any]]:
    out = []
    for e in items if isinstance(items, list) else ():
        if isinstance(e, dict):
            out.append({"name": e.get("name"), "attributes": attributes_of(e.get("attributes"))})
    return out


def read(obj: Mapping[str, TraceValue], where: str) -> Iterator[Union[Span, Unreadable]]:
    """The spans of one ``ExportTraceServiceRequest``."""
    for rs in _get(obj, "resourceSpans") or ():
        if not isinstance(rs, dict):
            continue
        scopes = _get(rs, "scopeSpans") or _get(rs, "instrumentationLibrarySpans") or ()
        for ss in scopes:
            for sp in (ss.get("spans") or ()) if isinstance(ss, dict) else ():
                if not isinstance(sp, dict):
                    continue
                tid, sid = hex_id(_get(sp, "traceId")), hex_id(_get(sp, "spanId"))
                if tid is None or sid is None:
                    yield Unreadable("span_without_ids", where, f"span {sp.get('name')!r} has no traceId/spanId")
                    continue
                notes: List[Tuple[str, str]] = []
                span = span_from_attributes(
                    tid, sid, name=str(sp.get("name") or ""), parent_id=hex_id(_get(sp, "parentSpanId")),
                    start_ns=time_of(_get(sp, "startTimeUnixNano"), "startTimeUnixNano", notes),
                    end_ns=time_of(_get(sp, "endTimeUnixNano"), "endTimeUnixNano", notes),
                    attrs=attributes_of(sp.get("attributes")), events=_events(sp.get("events")),
                    error=_status_error(sp.get("status")), where=where)
                span.notes = tuple(notes) + span.notes
                yield span
