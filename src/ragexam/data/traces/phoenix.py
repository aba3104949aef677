"""Arize Phoenix exports: OpenInference spans as JSON lines or Parquet, and span annotations.

A span is read in any of the shapes Phoenix hands out:

* its REST/JSON form -- ``{"name", "context": {"trace_id", "span_id"}, "span_kind", "parent_id", "start_time",
  "end_time", "status_code", "status_message", "attributes": {...}, "events": [...]}``;
* a row of its spans data frame (``px.Client().get_spans_dataframe()``, written with ``to_json(orient="records",
  lines=True)`` or ``to_parquet``; a saved ``TraceDataset`` is such a Parquet file): flat columns
  ``context.trace_id``, ``context.span_id``, ``span_kind``, ``parent_id``, ``start_time``, ``end_time``,
  ``status_code`` and ``attributes.<name>`` (``attributes.input.value``, ``attributes.retrieval.documents``, ...).

The attributes are OpenInference's (:mod:`.attributes`).  A record with a ``span_id`` and a ``result`` (Phoenix's
span annotation: ``{"span_id", "name", "annotator_kind", "result": {"label", "score", "explanation"}}``) or a
``label``/``score`` (a row of an evaluations data frame) is feedback about that span.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ragexam.data.traces.attributes import span_from_attributes
from ragexam.data.traces.meta import Feedback
from ragexam.data.traces.spans import Span, pick_str, time_of
from ragexam.data.traces.values import TraceValue

__all__ = ["detect", "read"]


def _context(obj: Mapping[str, TraceValue]) -> Dict[str, Any]:
    ctx = obj.get("context")
    if isinstance(ctx, dict):
        return ctx
    return {"trace_id": obj.get("context.trace_id"), "span_id": obj.get("context.span_id")}


def _is_annotation(obj: Mapping[str, TraceValue]) -> bool:
    sid = obj.get("span_id", obj.get("context.span_id"))
    return isinstance(sid, str) and "span_kind" not in obj and "attributes" not in obj and (
        isinstance(obj.get("result"), dict) or "label" in obj or "score" in obj)


def detect(obj: TraceValue) -> bool:
    """Whether ``obj`` is a Phoenix span or span annotation."""
    if not isinstance(obj, dict):
        return False
    if _is_annotation(obj):
        return True
    ctx = _context(obj)
    return isinstance(ctx.get("span_id"), str) and ("span_kind" in obj or "attributes" in obj or any(
        k.startswith("attributes.") for k in obj))


def _attributes(obj: Mapping[str, TraceValue]) -> Dict[str, Any]:
    attrs = obj.get("attributes")
    if isinstance(attrs, dict):
        return attrs
    return {k[len("attributes."):]: v for k, v in obj.items() if k.startswith("attributes.") and v is not None}


def _events(obj: Mapping[str, TraceValue]) -> list:
    events = obj.get("events")
    if not isinstance(events, list):
        return []
    return [e for e in events if isinstance(e, dict)]


def _annotation(obj: Mapping[str, TraceValue], where: str) -> Span:
    result = obj.get("result") if isinstance(obj.get("result"), dict) else obj
    score = result.get("score")
    fb = Feedback(str(obj.get("name") or "annotation"),
                  float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                  pick_str(result.get("label")), pick_str(obj.get("annotator_kind")),
                  pick_str(result.get("explanation")))
    return Span("", str(obj.get("span_id", obj.get("context.span_id"))), "annotation", "annotation",
                feedback=(fb,), where=where)


def read(obj: TraceValue, where: str) -> Iterator[Span]:
    """The span (or annotation) in one Phoenix record."""
    if _is_annotation(obj):
        yield _annotation(obj, where)
        return
    ctx = _context(obj)
    attrs = _attributes(obj)
    status = str(obj.get("status_code") or "").upper()
    error: Optional[str] = (pick_str(obj.get("status_message")) or "error") if status == "ERROR" else None
    notes: List[Tuple[str, str]] = []
    start, end = time_of(obj.get("start_time"), "start_time", notes), time_of(obj.get("end_time"), "end_time", notes)
    span = span_from_attributes(str(ctx.get("trace_id") or ""), str(ctx["span_id"]), name=str(obj.get("name") or ""),
                                parent_id=pick_str(obj.get("parent_id")), start_ns=start, end_ns=end, attrs=attrs,
                                events=_events(obj), span_kind=pick_str(obj.get("span_kind")), error=error,
                                where=where)
    span.notes = tuple(notes) + span.notes
    yield span
