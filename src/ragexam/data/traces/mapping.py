"""How a trace becomes one answer: which span is the retrieval, which the generation, where question and answer are.

The rules (``ragexam traces import --explain`` shows them at work on the first traces):

*Retrieval span*: a span the format marks as one (Langfuse ``RETRIEVER``; OpenInference ``RETRIEVER`` or
``RERANKER``; GenAI ``gen_ai.operation.name = retrieval``), or a Langfuse span whose name says so
(``retriev``, ``search``, ``vector``, ``context``) and whose output reads as documents.  Of several, the last one
to end before the generation starts (a reranker after its retriever: the reranked list is what the model saw).
*Generation span*: a model call (Langfuse ``GENERATION``; OpenInference ``LLM``; GenAI ``chat``,
``text_completion``, ``generate_content``); of several, the last to end.
*Root*: the trace record (Langfuse) or the spans without a parent in the trace (the earliest first).
*Timestamp and latency*: the trace record's (Langfuse's ``timestamp`` and ``latency``); else the root span's start and
duration when there is one root span; else the first start and the last end of the trace's spans.
*Question*: the root's input (:func:`ragexam.data.traces.values.question_of`); else the retrieval's query
(``gen_ai.retrieval.query.text``, its input); else the last user message of the generation's input.
*Answer*: the root's output; else the generation's output (the last assistant message).
*Contexts*: the retrieval span's documents in their order (:func:`ragexam.data.traces.values.documents_of`).

``--map KEY=VALUE`` (repeatable) overrides them (:class:`Mapping`): ``retrieval=NAME`` and ``generation=NAME``
(span names, ``*`` and ``?`` as wildcards) choose the spans; ``question=PATH`` and ``answer=PATH`` a key path in
the inputs and outputs (``inputs.query``, ``messages.-1.content``); ``doc_id=KEY``, ``doc_text=KEY`` and
``doc_score=KEY`` the keys of a document.

A trace that gives no question, or no answer and no error, or that holds text that was not UTF-8, is **skipped**
and counted by its reason (:data:`SKIP_REASONS`); one imported without what it lacks says so in
``trace.problems`` (:data:`ragexam.data.traces.meta.PROBLEMS`).  A request that failed (an error status and no
answer) is imported with ``answer: null`` and its ``error``, as the answers format has it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from fnmatch import fnmatchcase
from typing import Callable, Dict, List, Mapping as TMapping, Optional, Sequence, Tuple

from ragexam.data.traces.meta import Feedback, RetrievedDoc, TraceMeta
from ragexam.data.traces.spans import Span, iso_of_ns
from ragexam.data.traces.values import Doc, answer_of, describe, documents_of, question_of

__all__ = ["Mapping", "extract", "assemble", "MappedTrace", "Skipped", "Explanation", "SKIP_REASONS"]

#: why a trace is not imported -> (Korean, English)
SKIP_REASONS: Dict[str, Tuple[str, str]] = {
    "no_question": ("질문을 찾을 수 없음", "no question found in the trace's inputs"),
    "no_answer": ("답변도 오류도 없음", "neither an answer nor an error in the trace's outputs"),
    "non_utf8_text": ("UTF-8이 아닌 텍스트", "holds text that is not valid UTF-8"),
}
_RETRIEVAL_NAME = re.compile(r"retriev|search|vector|context", re.I)


@dataclass(frozen=True)
class Mapping:
    """The ``--map`` overrides (module docstring); every field ``None`` is the default mapping."""

    retrieval: Optional[str] = None
    generation: Optional[str] = None
    question: Optional[str] = None
    answer: Optional[str] = None
    doc_id: Optional[str] = None
    doc_text: Optional[str] = None
    doc_score: Optional[str] = None

    @classmethod
    def parse(cls, items: Sequence[str]) -> "Mapping":
        """``KEY=VALUE`` items (``--map``); an :class:`~ragexam.errors.InputError` names a bad one."""
        from ragexam.errors import InputError

        keys = [f.name for f in fields(cls)]
        values: Dict[str, str] = {}
        for item in items:
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in keys or not value.strip():
                raise InputError(f"received {item!r}; expected KEY=VALUE with KEY one of {', '.join(keys)} (e.g. "
                                 "retrieval=vector_search or question=inputs.query)", source="--map", field="map")
            if key in values:
                raise InputError(f"{key} is given twice", source="--map", field="map")
            values[key] = value.strip()
        return cls(**values)

    def items(self) -> List[str]:
        """The overrides as ``KEY=VALUE`` strings."""
        return [f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name) is not None]


@dataclass(frozen=True)
class MappedTrace:
    """A trace mapped to an answer: what an answers-file line holds (:mod:`ragexam.data.traces.meta`)."""

    query_id: str
    question: str
    answer: Optional[str]
    error: Optional[str]
    contexts: Optional[Tuple[str, ...]]
    context_ids: Optional[Tuple[str, ...]]
    meta: TraceMeta
    #: the fields of the trace that could not be read, as ``(problem, "FIELD RECEIVED")`` (:attr:`Span.notes`)
    notes: Tuple[Tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Skipped:
    """A trace that was not imported: its ``reason`` (:data:`SKIP_REASONS`), where it is and what was found."""

    trace_id: str
    reason: str
    where: str
    detail: str = ""


@dataclass
class Explanation:
    """How one trace was mapped (``--explain``): its spans as ``(name, kind, role)``, the spans chosen, where the
    question and answer came from, what it lacked and the outcome."""

    trace_id: str
    spans: List[Tuple[str, str, str]] = field(default_factory=list)
    retrieval: Optional[str] = None
    generation: Optional[str] = None
    question_from: str = ""
    answer_from: str = ""
    documents: str = ""
    problems: List[str] = field(default_factory=list)
    outcome: str = ""


def _role_by_name(span: Span, mapping: Mapping) -> None:
    if mapping.retrieval is not None:
        if fnmatchcase(span.name, mapping.retrieval):
            span.role, span.kind = "retrieval", f"{span.kind} (--map)"
            span.mapped += ("retrieval",)
            if span.documents is None:
                span.documents = span.output
        elif span.role == "retrieval":
            span.role = "span"
    if mapping.generation is not None:
        if fnmatchcase(span.name, mapping.generation):
            span.role, span.kind = "generation", f"{span.kind} (--map)"
            span.mapped += ("generation",)
        elif span.role == "generation":
            span.role = "span"


def _documents(span: Span, mapping: Mapping) -> Optional[List[Doc]]:
    found: set = set()
    docs = documents_of(span.documents if span.documents is not None else span.output, id_key=mapping.doc_id,
                        text_key=mapping.doc_text, score_key=mapping.doc_score, found=found)
    span.mapped += tuple(sorted(found))
    return docs


def extract(span: Span, mapping: Mapping) -> Span:
    """Take the question, answer and documents out of ``span``'s payloads (module docstring) and drop the payloads;
    returns ``span``."""
    if span.extracted:
        return span
    _role_by_name(span, mapping)
    if span.role == "span" and mapping.retrieval is None and span.kind in ("SPAN", "CHAIN", "TOOL") and \
            _RETRIEVAL_NAME.search(span.name):
        docs = _documents(span, mapping)
        if docs:
            span.role, span.kind = "retrieval", f"{span.kind} (by name)"
            span.docs, span.docs_from = docs, "output"
    rootish = span.role == "trace" or span.parent_id is None
    if span.role in ("trace", "retrieval", "generation") or rootish:
        if span.role == "retrieval" and span.query:
            span.question, span.question_from = span.query, "retrieval query"
        else:
            span.question, span.question_from = question_of(span.input, mapping.question)
            if mapping.question is not None and span.question_from == f"path {mapping.question!r}":
                span.mapped += ("question",)
        if span.role != "retrieval":
            span.answer, span.answer_from = answer_of(span.output, mapping.answer)
            if mapping.answer is not None and span.answer_from == f"path {mapping.answer!r}":
                span.mapped += ("answer",)
    if span.role == "retrieval" and span.docs is None:
        span.docs = _documents(span, mapping)
        span.docs_from = "documents" if span.docs is not None else describe(
            span.documents if span.documents is not None else span.output)
    span.input = span.output = span.documents = None
    span.extracted = True
    return span


def _order(s: Span) -> Tuple[int, int]:
    t = s.end_ns if s.end_ns is not None else (s.start_ns if s.start_ns is not None else -1)
    return t, s.seq


def _pick(spans: List[Span], role: str, before: Optional[int] = None) -> Optional[Span]:
    cands = [s for s in spans if s.role == role]
    if before is not None:
        early = [s for s in cands if s.end_ns is not None and s.end_ns <= before]
        cands = early or cands
    return max(cands, key=_order) if cands else None


def _roots(spans: List[Span]) -> List[Span]:
    ids = {s.span_id for s in spans}
    traces = [s for s in spans if s.role == "trace"]
    tops = [s for s in spans if s.role not in ("trace", "score", "annotation") and (
        s.parent_id is None or s.parent_id not in ids)]
    tops.sort(key=lambda s: (s.start_ns if s.start_ns is not None else 1 << 62, s.seq))
    return traces + tops


def _first(spans: Sequence[Span], attr: str) -> Optional[str]:
    for s in spans:
        v = getattr(s, attr)
        if v:
            return v
    return None


def _times(spans: List[Span], roots: List[Span]) -> Tuple[Optional[str], Optional[float]]:
    starts = [s.start_ns for s in spans if s.start_ns is not None]
    ends = [s.end_ns for s in spans if s.end_ns is not None]
    ts = next((r.start_ns for r in roots if r.start_ns is not None), min(starts) if starts else None)
    latency = next((r.latency_ms for r in roots if r.latency_ms is not None), None)
    if latency is None:
        timed = [r for r in roots if r.role != "trace" and r.start_ns is not None and r.end_ns is not None]
        if len(timed) == 1 and len([r for r in roots if r.role != "trace"]) == 1:  # one root span: its duration
            latency = (timed[0].end_ns - timed[0].start_ns) / 1e6
        elif starts and ends:
            latency = (max(ends) - min(starts)) / 1e6
    return (iso_of_ns(ts) if ts is not None else None), (round(latency, 3) if latency is not None else None)


def _tokens(gens: List[Span]) -> Tuple[Optional[int], ...]:
    out = []
    for i in range(3):
        vals = [g.tokens[i] for g in gens if g.tokens[i] is not None]
        out.append(sum(vals) if vals else None)
    return tuple(out)


def _contexts(ret: Optional[Span], problems: List[str]) -> Tuple[Optional[Tuple[str, ...]], Optional[Tuple[str, ...]],
                                                                Tuple[RetrievedDoc, ...]]:
    if ret is None:
        problems.append("no_retrieval_span")
        return None, None, ()
    if ret.docs is None:
        problems.append("documents_unreadable")
        return None, None, ()
    docs = ret.docs
    listed = tuple(RetrievedDoc(d.id, i, d.score) for i, d in enumerate(docs, 1))
    texts = None
    if any(d.text is None for d in docs):
        problems.append("documents_without_text")
    else:
        texts = tuple(d.text for d in docs)
    ids = None
    if any(d.id is None for d in docs):
        problems.append("documents_without_ids")
    elif texts is not None:
        ids = tuple(d.id for d in docs)
    return texts, ids, listed


def _unmatched(mapping: Mapping, chosen: Dict[str, Optional[Span]]) -> List[str]:
    """The trace's problems ``map_KEY_unmatched`` (:data:`ragexam.data.traces.meta.PROBLEMS`): each ``--map``
    override that took no effect in it -- its question or answer came from the default place, no span had the
    name, the retrieved documents had no such key -- so a mistyped override is counted, never silently unused."""
    ret = chosen["retrieval"]
    out = []
    for key in (f.name for f in fields(mapping)):
        if getattr(mapping, key) is None:
            continue
        if key.startswith("doc_"):
            if ret is not None and ret.docs and key not in ret.mapped:
                out.append(f"map_{key}_unmatched")
        elif key == "answer" and chosen[key] is None:
            continue  # a failed request: no answer anywhere, counted as one
        elif chosen[key] is None or key not in chosen[key].mapped:
            out.append(f"map_{key}_unmatched")
    return out


def assemble(trace_id: str, spans: List[Span], *, source: str, mapping: Mapping,
             annotations: TMapping[str, Sequence[Feedback]], hasher: Callable[[str], str],
             explain: Optional[Explanation] = None) -> "MappedTrace | Skipped":
    """The answer a trace's spans (extracted, :func:`extract`) map to, or why it is skipped (module docstring)."""
    where = spans[0].where if spans else ""
    bad = next((s for s in spans if s.bad_text), None)
    if bad is not None:
        return Skipped(trace_id, "non_utf8_text", bad.where, f"span {bad.name or bad.span_id!r}")
    roots = _roots(spans)
    gen = _pick(spans, "generation")
    ret = _pick(spans, "retrieval", before=gen.start_ns if gen is not None else None)
    q_sources = [s for s in roots if s.role != "generation"] + ([ret] if ret is not None else [])
    q_sources += [s for s in spans if s.role == "retrieval" and s is not ret] + ([gen] if gen is not None else [])
    a_sources = roots + ([gen] if gen is not None else [])
    qspan = next((s for s in q_sources if "question" in s.mapped), None) or next(
        (s for s in q_sources if s.question and s.question.strip()), None)  # the --map path first, wherever it is
    aspan = next((s for s in a_sources if "answer" in s.mapped), None) or next(
        (s for s in a_sources if s.answer and s.answer.strip()), None)
    if explain is not None:
        explain.spans = [(s.name, s.kind, s.role) for s in spans]
        explain.retrieval = ret.name if ret is not None else None
        explain.generation = gen.name if gen is not None else None
        explain.question_from = (f"{qspan.name or qspan.role} ({qspan.question_from})" if qspan is not None else
                                 "; ".join(f"{s.name or s.role}: {s.question_from}" for s in q_sources[:3]))
        explain.answer_from = f"{aspan.name or aspan.role} ({aspan.answer_from})" if aspan is not None else ""
        explain.documents = ret.docs_from if ret is not None else ""
    if qspan is None:
        first = roots[0] if roots else None
        detail = f"root input: {first.question_from}" if first is not None else "no root span"
        return Skipped(trace_id, "no_question", where, detail)
    error = None
    if aspan is None:
        failed = next((s for s in ([gen] if gen is not None else []) + roots + spans if s.error), None)
        if failed is None:
            shown = gen if gen is not None else (roots[0] if roots else None)
            return Skipped(trace_id, "no_answer", where,
                           f"{shown.name or shown.role} output: {shown.answer_from}" if shown is not None else "")
        error = f"the traced request failed: {failed.error}"
    problems: List[str] = []
    texts, ids, listed = _contexts(ret, problems)
    problems += _unmatched(mapping, {"question": qspan, "answer": aspan, "retrieval": ret, "generation": gen})
    notes = tuple(dict.fromkeys(n for s in spans for n in s.notes))
    problems += dict.fromkeys(k for k, _ in notes)
    gens = [s for s in spans if s.role == "generation"]
    order = [s for s in roots] + spans
    ts, latency = _times(spans, roots)
    tokens = _tokens(gens)
    user, session = _first(order, "user"), _first(order, "session")
    tags = tuple(dict.fromkeys(t for s in order for t in s.tags))
    fb = [f for s in spans for f in s.feedback]
    fb += [f for s in spans for f in annotations.get(s.span_id, ())]
    model = (gen.model if gen is not None and gen.model else _first(gens, "model"))
    spans_used = tuple((k, v) for k, v in (("retrieval", ret.name if ret is not None else None),
                                           ("generation", gen.name if gen is not None else None)) if v)
    meta = TraceMeta(source, trace_id, ts, latency, model, tokens[0], tokens[1], tokens[2],
                     hasher(user) if user else None, hasher(session) if session else None, tags, tuple(fb), listed,
                     spans_used, tuple(problems))
    if explain is not None:
        explain.problems = list(problems)
    return MappedTrace(trace_id, qspan.question.strip(), aspan.answer if aspan is not None else None, error, texts,
                       ids, meta, notes)
