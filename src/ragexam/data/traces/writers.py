"""Answers written as each vendor's export: the other half of the import's round trip, and the benchmark's traffic.

:func:`langfuse_records`, :func:`phoenix_spans` and :func:`otlp_request` write a :class:`~.mapping.MappedTrace`
(whose ``meta.user`` and ``meta.session`` hold the ids as the application knew them) as the records the vendor's
export holds, in the shapes the readers document (:mod:`.langfuse`, :mod:`.phoenix`, :mod:`.otel`): a trace with a
retrieval span named ``retrieve`` and a generation span named ``generate`` under a root span ``rag``.  Importing
what they write gives back the trace's question, answer, contexts, ids, ranks, scores, model, tokens, timestamp,
latency, tags, feedback and hashed user and session ids.

What a format cannot carry: OTLP and Phoenix trace ids are 32 hex digits (:func:`hex_trace_id` makes one from any
id, so the imported ``query_id`` is that); OTLP's evaluation events have no source (read back as
``evaluation``); OTLP records no total token count (read back as input + output).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional, Tuple

from ragexam.data.traces.mapping import MappedTrace
from ragexam.data.traces.spans import to_ns
from ragexam.types import JsonValue

__all__ = ["langfuse_records", "phoenix_spans", "otlp_request", "hex_trace_id", "span_times"]


def hex_trace_id(query_id: str) -> str:
    """A 32-hex-digit trace id for ``query_id`` (itself when it already is one)."""
    if len(query_id) == 32 and all(c in "0123456789abcdef" for c in query_id):
        return query_id
    return hashlib.md5(query_id.encode("utf-8")).hexdigest()


def _span_id(trace: str, name: str) -> str:
    return hashlib.md5(f"{trace}/{name}".encode("utf-8")).hexdigest()[:16]


def span_times(m: MappedTrace) -> Dict[str, Tuple[int, int]]:
    """``{span: (start_ns, end_ns)}`` of ``rag``, ``retrieve`` and ``generate``: the root spans the trace's latency,
    retrieval its first fifth, generation the rest."""
    start = to_ns(m.meta.timestamp) or 0
    total = round((m.meta.latency_ms or 0.0) * 1e6)
    cut = start + total // 5
    return {"rag": (start, start + total), "retrieve": (start, cut), "generate": (cut, start + total)}


def _docs(m: MappedTrace) -> List[Dict[str, Any]]:
    out = []
    for i, d in enumerate(m.meta.documents):
        doc: Dict[str, Any] = {"id": d.id, "score": d.score}
        if m.contexts is not None:
            doc["content"] = m.contexts[i]
        out.append({k: v for k, v in doc.items() if v is not None})
    return out


def _ls_time(ns: int) -> str:
    from ragexam.data.traces.spans import iso_of_ns

    return iso_of_ns(ns)[:-1].replace("T", " ")


def langfuse_records(m: MappedTrace, *, style: str = "api") -> List[Dict[str, Any]]:
    """The Langfuse records of ``m``: ``style="api"`` one trace with its observations and scores (camelCase, as the
    public API returns it); ``"blob"`` a trace row, its observation rows and score rows (snake_case, as the
    blob-storage export writes them)."""
    t = span_times(m)
    meta = m.meta
    tid = m.query_id
    usage = {k: v for k, v in (("input", meta.input_tokens), ("output", meta.output_tokens),
                               ("total", meta.total_tokens)) if v is not None}
    failed = m.answer is None
    obs = [
        {"id": f"{tid}-r", "traceId": tid, "type": "RETRIEVER", "name": "retrieve", "startTime": t["retrieve"][0],
         "endTime": t["retrieve"][1], "input": {"query": m.question}, "output": {"documents": _docs(m)}},
        {"id": f"{tid}-g", "traceId": tid, "type": "GENERATION", "name": "generate", "startTime": t["generate"][0],
         "endTime": t["generate"][1], "model": meta.model, "usageDetails": usage,
         "input": [{"role": "system", "content": "Answer from the documents."},
                   {"role": "user", "content": m.question}],
         "output": None if failed else {"role": "assistant", "content": m.answer},
         "level": "ERROR" if failed else "DEFAULT", "statusMessage": m.error if failed else None}]
    scores = []
    for i, f in enumerate(meta.feedback):
        dtype = "BOOLEAN" if f.value is not None and f.label is not None else (
            "NUMERIC" if f.value is not None else "CATEGORICAL")
        scores.append({"id": f"{tid}-s{i}", "traceId": tid, "name": f.name, "value": f.value if f.value is not None
                       else 0, "stringValue": f.label, "dataType": dtype, "source": f.source, "comment": f.comment})
    trace = {"id": tid, "timestamp": t["rag"][0], "name": "rag", "input": m.question,
             "output": m.answer, "userId": meta.user, "sessionId": meta.session, "tags": list(meta.tags)}
    if style == "api":
        trace["timestamp"] = _iso(t["rag"][0])
        for o in obs:
            o["startTime"], o["endTime"] = _iso(o["startTime"]), _iso(o["endTime"])
        return [dict(trace, latency=(meta.latency_ms or 0.0) / 1000.0, observations=obs, scores=scores)]
    snake = {"traceId": "trace_id", "startTime": "start_time", "endTime": "end_time", "usageDetails": "usage_details",
             "statusMessage": "status_message", "userId": "user_id", "sessionId": "session_id",
             "stringValue": "string_value", "dataType": "data_type", "model": "provided_model_name"}

    def blob(rec: Dict[str, Any]) -> Dict[str, Any]:
        out = {snake.get(k, k): v for k, v in rec.items()}
        for k in ("timestamp", "start_time", "end_time"):
            if isinstance(out.get(k), int):
                out[k] = _ls_time(out[k])
        for k in ("input", "output"):  # the blob export writes payloads as JSON text
            if out.get(k) is not None and not isinstance(out[k], str):
                out[k] = json.dumps(out[k], ensure_ascii=False)
        return out

    return [blob(trace)] + [blob(o) for o in obs] + [blob(s) for s in scores]


def _iso(ns: int) -> str:
    from ragexam.data.traces.spans import iso_of_ns

    return iso_of_ns(ns)


def phoenix_spans(m: MappedTrace, *, flat: bool = False) -> List[Dict[str, Any]]:
    """The Phoenix records of ``m``: its three OpenInference spans and one span annotation per feedback; ``flat``
    gives the spans as rows of Phoenix's spans data frame (``context.trace_id``, ``attributes.input.value``, ...),
    else in its JSON form with flattened ``retrieval.documents.N.document.*`` attributes."""
    tid = hex_trace_id(m.query_id)
    t = span_times(m)
    meta = m.meta
    ids = {name: _span_id(tid, name) for name in t}
    root_attrs: Dict[str, Any] = {"openinference.span.kind": "CHAIN", "input.value": m.question,
                                  "output.value": m.answer, "tag.tags": list(meta.tags)}
    if meta.user is not None:
        root_attrs["user.id"] = meta.user
    if meta.session is not None:
        root_attrs["session.id"] = meta.session
    ret_attrs: Dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": m.question}
    docs = [{f"document.{k}": v for k, v in d.items()} for d in _docs(m)]
    if flat:
        ret_attrs["retrieval.documents"] = docs
    else:
        for i, d in enumerate(docs):
            ret_attrs.update({f"retrieval.documents.{i}.{k}": v for k, v in d.items()})
    gen_attrs: Dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": meta.model,
                                 "llm.input_messages.0.message.role": "user",
                                 "llm.input_messages.0.message.content": m.question}
    if m.answer is not None:
        gen_attrs.update({"llm.output_messages.0.message.role": "assistant",
                          "llm.output_messages.0.message.content": m.answer, "output.value": m.answer})
    for key, v in (("prompt", meta.input_tokens), ("completion", meta.output_tokens), ("total", meta.total_tokens)):
        if v is not None:
            gen_attrs[f"llm.token_count.{key}"] = v
    kinds = {"rag": "CHAIN", "retrieve": "RETRIEVER", "generate": "LLM"}
    attrs = {"rag": root_attrs, "retrieve": ret_attrs, "generate": gen_attrs}
    out = []
    for name in ("rag", "retrieve", "generate"):
        failed = name != "retrieve" and m.answer is None
        span = {"name": name, "span_kind": kinds[name], "parent_id": None if name == "rag" else ids["rag"],
                "start_time": _iso(t[name][0]), "end_time": _iso(t[name][1]),
                "status_code": "ERROR" if failed else "OK", "status_message": (m.error or "") if failed else ""}
        a = {k: v for k, v in attrs[name].items() if v is not None}
        if flat:
            span.update({"context.trace_id": tid, "context.span_id": ids[name]})
            span.update({f"attributes.{k}": v for k, v in a.items()})
        else:
            span.update({"context": {"trace_id": tid, "span_id": ids[name]}, "attributes": a, "events": []})
        out.append(span)
    for f in meta.feedback:
        out.append({"span_id": ids["rag"], "name": f.name, "annotator_kind": f.source,
                    "result": {"label": f.label, "score": f.value, "explanation": f.comment}})
    return out


def _any(v: JsonValue) -> Dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_any(x) for x in v]}}
    return {"stringValue": str(v)}


def _attrs(d: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [{"key": k, "value": _any(v)} for k, v in d.items() if v is not None]


def _otlp_spans(m: MappedTrace) -> List[Dict[str, Any]]:
    tid = hex_trace_id(m.query_id)
    t = span_times(m)
    meta = m.meta
    ids = {name: _span_id(tid, name) for name in t}
    docs = json.dumps(_docs(m), ensure_ascii=False)
    failed = m.answer is None
    out_msgs = None if failed else json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": m.answer}],
                                                "finish_reason": "stop"}], ensure_ascii=False)
    attrs = {
        "rag": {"enduser.id": meta.user, "gen_ai.conversation.id": meta.session,
                "tag.tags": list(meta.tags) or None},
        "retrieve": {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": m.question,
                     "gen_ai.retrieval.documents": docs},
        "generate": {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                     "gen_ai.request.model": meta.model, "gen_ai.response.model": meta.model,
                     "gen_ai.usage.input_tokens": meta.input_tokens, "gen_ai.usage.output_tokens": meta.output_tokens,
                     "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                         {"type": "text", "content": m.question}]}], ensure_ascii=False),
                     "gen_ai.output.messages": out_msgs}}
    events = [{"timeUnixNano": str(t["rag"][1]), "name": "gen_ai.evaluation.result", "attributes": _attrs({
        "gen_ai.evaluation.name": f.name, "gen_ai.evaluation.score.value": f.value,
        "gen_ai.evaluation.score.label": f.label, "gen_ai.evaluation.explanation": f.comment})}
        for f in meta.feedback]
    spans = []
    for name, kind in (("rag", 1), ("retrieve", 1), ("generate", 3)):
        error = failed and name == "generate"
        spans.append({"traceId": tid, "spanId": ids[name], "parentSpanId": "" if name == "rag" else ids["rag"],
                      "name": name, "kind": kind, "startTimeUnixNano": str(t[name][0]),
                      "endTimeUnixNano": str(t[name][1]), "attributes": _attrs(attrs[name]),
                      "events": events if name == "rag" else [],
                      "status": {"code": 2, "message": m.error or ""} if error else {}})
    return spans


def otlp_request(traces: List[MappedTrace], *, service: Optional[str] = "rag-service") -> Dict[str, Any]:
    """One OTLP ``ExportTraceServiceRequest`` (JSON encoding) holding ``traces``' spans (GenAI conventions)."""
    spans = [s for m in traces for s in _otlp_spans(m)]
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": service})},
                               "scopeSpans": [{"scope": {"name": "ragexam.writers", "version": "1"},
                                               "spans": spans}]}]}
