"""Spans described by attributes: OpenInference (Phoenix) and the OpenTelemetry GenAI conventions, in one place.

Phoenix exports OpenInference spans; an OTLP export carries the same attributes when the application was
instrumented with OpenInference, or the GenAI conventions' ``gen_ai.*`` attributes.  :func:`span_from_attributes`
reads both, whichever the span has (OpenInference first, then GenAI):

* role: ``openinference.span.kind`` RETRIEVER or RERANKER, or ``gen_ai.operation.name`` ``retrieval`` -> retrieval;
  LLM, or ``chat`` / ``text_completion`` / ``generate_content`` -> generation;
* question, input: ``input.value``, ``llm.input_messages.N.*``; ``gen_ai.retrieval.query.text``,
  ``gen_ai.input.messages``, ``gen_ai.prompt.N.*``, events ``gen_ai.user.message``;
* answer, output: ``output.value``, ``llm.output_messages.N.*``; ``gen_ai.output.messages``,
  ``gen_ai.completion.N.*``, events ``gen_ai.choice``;
* documents: ``retrieval.documents.N.document.{id,content,score}``, ``reranker.output_documents``;
  ``gen_ai.retrieval.documents`` (``[{"id", "score", ...}]``, a JSON string or a list);
* model: ``llm.model_name``; ``gen_ai.response.model``, ``gen_ai.request.model``;
* tokens: ``llm.token_count.{prompt,completion,total}``; ``gen_ai.usage.{input,output}_tokens``;
* user, session, tags: ``user.id``, ``session.id``, ``tag.tags``; ``enduser.id``, ``gen_ai.conversation.id``;
* feedback: Phoenix's span annotations (:mod:`.phoenix`); events ``gen_ai.evaluation.result``.

An attribute is found under its flat name (``retrieval.documents.0.document.id``, as OTLP and Phoenix's REST
export write it) or nested (``{"retrieval": {"documents": [...]}}``, as a data frame written to JSON may hold it);
a list attribute as a list or as flattened ``NAME.N.KEY`` entries.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ragexam.data.traces.meta import Feedback
from ragexam.data.traces.spans import Span, pick_int, pick_str, shown
from ragexam.data.traces.values import TraceValue, tags_of, unwrap

__all__ = ["attr", "attr_list", "flat_attributes", "span_from_attributes", "GENERATION_OPERATIONS"]

GENERATION_OPERATIONS = ("chat", "text_completion", "generate_content")
_INDEXED = re.compile(r"^(\d+)\.(.+)$")


def flat_attributes(attrs: Mapping[str, TraceValue]) -> Dict[str, Any]:
    """``attrs`` with nested objects spelled out as flat names (``{"input": {"value": x}}`` also gives
    ``input.value``); the same mapping when nothing is nested."""
    if not any(isinstance(v, dict) for v in attrs.values()):
        return attrs if isinstance(attrs, dict) else dict(attrs)
    out: Dict[str, Any] = {}
    stack = [("", attrs)]
    while stack:
        prefix, d = stack.pop()
        for k, v in d.items():
            name = f"{prefix}{k}"
            out.setdefault(name, v)
            if isinstance(v, dict) and len(prefix) < 200:
                stack.append((name + ".", v))
    return out


def attr(attrs: Mapping[str, TraceValue], key: str) -> TraceValue:
    """The attribute ``key`` of flat attributes (:func:`flat_attributes`); ``None`` when absent."""
    return attrs.get(key)


def attr_list(attrs: Mapping[str, TraceValue], prefix: str) -> Optional[List[TraceValue]]:
    """A list attribute: the value when it is a list (or a JSON string of one), else the flattened
    ``PREFIX.N.REST`` entries as a list of ``{REST: value}`` in index order; ``None`` when there are none."""
    v = unwrap(attr(attrs, prefix))
    if isinstance(v, list):
        return v
    found: Dict[int, Dict[str, Any]] = {}
    head = prefix + "."
    for k, value in attrs.items():  # flattened entries (a dict of them is rare: it was flattened too)
        if k.startswith(head):
            m = _INDEXED.match(k[len(head):])
            if m:
                found.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [found[i] for i in sorted(found)] if found else None


def _messages(attrs: Mapping[str, TraceValue], prefix: str) -> Optional[List[Dict[str, Any]]]:
    """OpenInference / OpenLLMetry flattened messages as ``[{"role", "content"}]``."""
    items = attr_list(attrs, prefix)
    if not items:
        return None
    out = []
    for m in items:
        if not isinstance(m, dict):
            continue
        flat = {k[len("message."):] if k.startswith("message.") else k: v for k, v in m.items()}
        if isinstance(flat.get("message"), dict):
            flat.update(flat.pop("message"))
        content = flat.get("content")
        if content is None:
            parts = attr_list(flat, "contents")
            if parts:
                content = "\n".join(str(p.get("message_content.text") or p.get("text") or "")
                                    for p in parts if isinstance(p, dict))
        out.append({"role": flat.get("role"), "content": content})
    return out or None


def _event_messages(events: Sequence[Mapping[str, TraceValue]], name: str, role: str) -> Optional[List[Dict[str, Any]]]:
    out = []
    for e in events:
        if e.get("name") != name:
            continue
        a = e.get("attributes") or {}
        content = a.get("content")
        msg = unwrap(a.get("message"))
        if content is None and isinstance(msg, dict):
            content = msg.get("content")
        if content is not None:
            out.append({"role": role, "content": content})
    return out or None


def _feedback(events: Sequence[Mapping[str, TraceValue]]) -> tuple:
    out = []
    for e in events:
        if e.get("name") != "gen_ai.evaluation.result":
            continue
        a = e.get("attributes") or {}
        value = a.get("gen_ai.evaluation.score.value")
        out.append(Feedback(str(a.get("gen_ai.evaluation.name") or "evaluation"),
                            float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None,
                            pick_str(a.get("gen_ai.evaluation.score.label")), "evaluation",
                            pick_str(a.get("gen_ai.evaluation.explanation"))))
    return tuple(out)


def _role(attrs: Mapping[str, TraceValue], span_kind: Optional[str]) -> tuple:
    oi = str(attr(attrs, "openinference.span.kind") or span_kind or "").upper()
    op = str(attr(attrs, "gen_ai.operation.name") or "")
    kind = oi or (f"gen_ai:{op}" if op else "")
    if oi in ("RETRIEVER", "RERANKER") or op == "retrieval":
        return "retrieval", kind
    if oi == "LLM" or op in GENERATION_OPERATIONS:
        return "generation", kind
    return "span", kind


def span_from_attributes(trace_id: str, span_id: str, *, name: str, parent_id: Optional[str],
                         start_ns: Optional[int], end_ns: Optional[int], attrs: Mapping[str, TraceValue],
                         events: Sequence[Mapping[str, TraceValue]] = (), span_kind: Optional[str] = None,
                         error: Optional[str] = None, where: str = "") -> Span:
    """A :class:`Span` from a span's attributes and events (module docstring).  ``span_kind``: Phoenix's
    ``span_kind`` column (used when the attributes do not say); ``error``: the status message of a failed span."""
    attrs = flat_attributes(attrs)
    role, kind = _role(attrs, span_kind)
    documents = None
    query = pick_str(attr(attrs, "gen_ai.retrieval.query.text"))
    if role == "retrieval":
        if kind == "RERANKER":
            documents = attr_list(attrs, "reranker.output_documents")
            query = query or pick_str(attr(attrs, "reranker.query"))
        else:
            documents = attr_list(attrs, "retrieval.documents")
        if documents is None:
            documents = unwrap(attr(attrs, "gen_ai.retrieval.documents"))
    inp = attr(attrs, "input.value")
    out = attr(attrs, "output.value")
    if role == "generation":
        if inp is None:
            inp = (_messages(attrs, "llm.input_messages") or unwrap(attr(attrs, "gen_ai.input.messages"))
                   or _messages(attrs, "gen_ai.prompt") or _event_messages(events, "gen_ai.user.message", "user"))
        if out is None:
            out = (_messages(attrs, "llm.output_messages") or unwrap(attr(attrs, "gen_ai.output.messages"))
                   or _messages(attrs, "gen_ai.completion") or _event_messages(events, "gen_ai.choice", "assistant"))
    prompt = pick_int(attr(attrs, "llm.token_count.prompt"), attr(attrs, "gen_ai.usage.input_tokens"),
                      attr(attrs, "gen_ai.usage.prompt_tokens"))
    completion = pick_int(attr(attrs, "llm.token_count.completion"), attr(attrs, "gen_ai.usage.output_tokens"),
                          attr(attrs, "gen_ai.usage.completion_tokens"))
    total = pick_int(attr(attrs, "llm.token_count.total"), attr(attrs, "gen_ai.usage.total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    tags, readable = tags_of(attr(attrs, "tag.tags"))
    span = Span(trace_id, span_id, role, kind, name, parent_id or None, start_ns, end_ns, inp, out, query, documents,
                pick_str(attr(attrs, "llm.model_name"), attr(attrs, "gen_ai.response.model"),
                         attr(attrs, "gen_ai.request.model")),
                (prompt, completion, total) if role == "generation" else (None, None, None),
                pick_str(attr(attrs, "user.id"), attr(attrs, "enduser.id")),
                pick_str(attr(attrs, "session.id"), attr(attrs, "gen_ai.conversation.id")),
                tags, _feedback(events), error, where=where)
    if not readable:
        span.notes = (("tags_unreadable", f"tag.tags {shown(attr(attrs, 'tag.tags'))}"),)
    return span
