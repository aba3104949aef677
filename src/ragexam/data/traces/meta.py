"""What an imported trace carries besides question, answer and contexts: the ``trace`` field of an answers file.

An answers file line written by ``ragexam traces import`` (docs/traces.md) has, beside ``query_id`` (the trace
id), ``question``, ``answer``, ``contexts`` and ``context_ids``, one object ``trace``::

    source        str, required: langfuse, phoenix or otel
    trace_id      str, required: the trace's id in the export
    timestamp     str: when the request started, ISO 8601 in UTC (``2025-03-04T05:06:07.123456Z``)
    latency_ms    number: how long the request took (the trace's own latency, else its root span's, else
                  first start to last end)
    model         str: the model of the generation that wrote the answer
    tokens        object: ``input``, ``output``, ``total`` (integers), summed over the trace's generations
    user          str: the end user's id, hashed (:func:`hash_id`); never the id itself
    session       str: the session (conversation) id, hashed
    tags          list of str
    feedback      list of objects: ``name``, ``value`` (number or null), ``label`` (str or null), ``source``,
                  ``comment`` -- scores, thumbs and evaluations recorded on the trace
    documents     list of objects: ``id`` (str or null), ``rank`` (1-based), ``score`` (number or null) -- what
                  the retrieval span returned, in its order (their texts are ``contexts`` when it recorded them)
    spans         object: ``retrieval`` and ``generation``: the names of the spans the answer was mapped from
    problems      list of str: what the import could not take from the trace (``no_retrieval_span``,
                  ``documents_without_ids``, ``documents_without_text``, ``documents_unreadable``), the fields it
                  could not read (``time_unreadable``, ``latency_unreadable``, ``tags_unreadable``), and each
                  ``--map`` override that took no effect in it (``map_question_unmatched``, ...: :data:`PROBLEMS`)
    redacted      object: kind -> how many personal data items ``--redact`` replaced in this line

Every field but ``source`` and ``trace_id`` may be missing.  :meth:`TraceMeta.from_dict` reads the object
strictly (an :class:`~ragexam.errors.InputError` naming the file, line and field); ``score --by model|day|tag``
read :attr:`TraceMeta.model`, :attr:`TraceMeta.day` and :attr:`TraceMeta.tags` (any other field by its name:
:mod:`ragexam.analysis.answers.segments`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from ragexam.errors import InputError, number_in
from ragexam.types import JsonValue

__all__ = ["TraceMeta", "Feedback", "RetrievedDoc", "hash_id", "SOURCES", "NEGATIVE_LABELS", "PROBLEMS"]

#: the export formats a trace can come from
SOURCES = ("langfuse", "phoenix", "otel")
#: labels that mark negative feedback (compared lower-cased, spaces and hyphens as ``_``)
NEGATIVE_LABELS = frozenset({"thumbs_down", "thumbsdown", "down", "bad", "negative", "no", "false", "incorrect",
                             "wrong", "unhelpful", "not_helpful", "dislike", "👎", "싫어요", "나쁨", "부정",
                             "틀림", "오답"})
#: what an imported trace may lack (``trace.problems``) -> (Korean, English) meaning
PROBLEMS: Dict[str, Tuple[str, str]] = {
    "no_retrieval_span": ("검색 스팬 없음: 컨텍스트 없이 가져옴", "no retrieval span: imported without contexts"),
    "documents_without_ids": ("문서 id 없음: context_ids 없이 가져옴",
                              "retrieved documents without ids: imported without context_ids"),
    "documents_without_text": ("문서 본문 없음: 문서 id만 가져옴 (contexts 없음)",
                               "retrieved documents without text: ids kept, no contexts"),
    "documents_unreadable": ("검색 결과를 문서 목록으로 읽을 수 없음",
                             "the retrieval output is not a list of documents ragexam can read"),
    # a field of the trace that could not be read (received -> done): the examples show what was received
    "time_unreadable": ("시각을 읽을 수 없음: 쓰지 않고 다른 시각으로 계산",
                        "a time of the trace or a span is no time (ISO 8601, or Unix s/ms/µs/ns of 2000-2100): not "
                        "used; timestamp and latency come from the other times, else none"),
    "latency_unreadable": ("latency가 초 단위 숫자가 아님: 스팬 시각으로 계산",
                           "the trace's latency is no number of seconds: taken from the span times, else none"),
    "tags_unreadable": ("태그를 읽을 수 없음: 읽은 태그만 가져옴",
                        "tags that are no text nor list of texts: imported without them"),
    # a --map override that took no effect in the trace (ragexam.data.traces.mapping): a mistyped one is counted
    "map_question_unmatched": ("--map question=PATH 경로가 없음: 기본 위치의 질문을 씀",
                               "--map question=PATH found nothing: the question came from the default place"),
    "map_answer_unmatched": ("--map answer=PATH 경로가 없음: 기본 위치의 답변을 씀",
                             "--map answer=PATH found nothing: the answer came from the default place"),
    "map_retrieval_unmatched": ("--map retrieval=NAME에 맞는 스팬 없음: 검색 스팬 없이 가져옴",
                                "no span matched --map retrieval=NAME: imported without a retrieval span"),
    "map_generation_unmatched": ("--map generation=NAME에 맞는 스팬 없음: 생성 스팬 없이 가져옴",
                                 "no span matched --map generation=NAME: imported without a generation span"),
    "map_doc_id_unmatched": ("--map doc_id=KEY를 가진 문서 없음: 기본 키를 씀",
                             "no retrieved document held --map doc_id=KEY: the default keys were used"),
    "map_doc_text_unmatched": ("--map doc_text=KEY를 가진 문서 없음: 기본 키를 씀",
                               "no retrieved document held --map doc_text=KEY: the default keys were used"),
    "map_doc_score_unmatched": ("--map doc_score=KEY를 가진 문서 없음: 기본 키를 씀",
                                "no retrieved document held --map doc_score=KEY: the default keys were used"),
}


def hash_id(value: str, salt: str = "") -> str:
    """The pseudonym written for a user or session id: ``h_`` + the first 16 hex digits of
    SHA-256(``salt`` NUL ``value``).  The same id gives the same pseudonym (segments by user still count), the id
    cannot be read back; without a secret ``salt`` a guessed id can be checked, so pass one
    (``--hash-salt``) when ids are guessable (e-mail addresses)."""
    return "h_" + hashlib.sha256(f"{salt}\0{value}".encode("utf-8")).hexdigest()[:16]


def _fail(msg: str, source: Optional[str], line: Optional[int], name: str) -> InputError:
    return InputError(msg, source=source, line=line, field=f"trace.{name}")


def _opt_str(obj: Mapping[str, JsonValue], name: str, source: Optional[str], line: Optional[int]) -> Optional[str]:
    v = obj.get(name)
    if v is not None and not isinstance(v, str):
        raise _fail(f"received {json.dumps(v, ensure_ascii=False)[:60]}; expected a string", source, line, name)
    return v


def _opt_number(v: JsonValue, source: Optional[str], line: Optional[int], name: str) -> Optional[float]:
    if v is None:
        return None
    return number_in(v, source=source, line=line, field=f"trace.{name}", what="a finite number (or null)")


def _opt_int(v: JsonValue, source: Optional[str], line: Optional[int], name: str) -> Optional[int]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise _fail(f"received {v!r}; expected an integer >= 0 (or null)", source, line, name)
    return v


def _opt_obj(obj: Mapping[str, JsonValue], name: str, source: Optional[str], line: Optional[int]) -> Dict[str, Any]:
    v = obj.get(name)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _fail("expected an object", source, line, name)
    return v


def _opt_list(obj: Mapping[str, JsonValue], name: str, source: Optional[str], line: Optional[int]) -> list:
    v = obj.get(name)
    if v is None:
        return []
    if not isinstance(v, list):
        raise _fail("expected a list", source, line, name)
    return v


@dataclass(frozen=True)
class Feedback:
    """A score, thumb or evaluation recorded on a trace."""

    name: str
    value: Optional[float] = None
    label: Optional[str] = None
    source: Optional[str] = None
    comment: Optional[str] = None

    @property
    def negative(self) -> bool:
        """Negative feedback: a label in :data:`NEGATIVE_LABELS`, a value below 0, or a value of 0 on a thumbs or
        boolean scale (a name with ``thumb``, ``feedback``, ``like`` or ``helpful``, or a label ``false``)."""
        label = (self.label or "").strip().lower().replace(" ", "_").replace("-", "_")
        if label in NEGATIVE_LABELS:
            return True
        if self.value is None:
            return False
        if self.value < 0:
            return True
        name = self.name.lower()
        return self.value == 0 and any(w in name for w in ("thumb", "feedback", "like", "helpful"))

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "value": self.value, "label": self.label, "source": self.source,
                "comment": self.comment}

    @classmethod
    def from_dict(cls, obj: JsonValue, source: Optional[str], line: Optional[int], where: str) -> "Feedback":
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            raise _fail('expected an object like {"name": "thumbs", "value": 1}', source, line, where)
        return cls(obj["name"], _opt_number(obj.get("value"), source, line, f"{where}.value"),
                   _opt_str(obj, "label", source, line), _opt_str(obj, "source", source, line),
                   _opt_str(obj, "comment", source, line))


@dataclass(frozen=True)
class RetrievedDoc:
    """One document the retrieval span returned: its ``id`` (``None`` when the trace gave none), ``rank``
    (1-based, in the span's order) and ``score`` (the retriever's own, when recorded)."""

    id: Optional[str]
    rank: int
    score: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "rank": self.rank, "score": self.score}


@dataclass(frozen=True)
class TraceMeta:
    """The ``trace`` field of an imported answer (module docstring)."""

    source: str
    trace_id: str
    timestamp: Optional[str] = None
    latency_ms: Optional[float] = None
    model: Optional[str] = None
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    total_tokens: Optional[int] = None
    user: Optional[str] = None
    session: Optional[str] = None
    tags: Tuple[str, ...] = ()
    feedback: Tuple[Feedback, ...] = ()
    documents: Tuple[RetrievedDoc, ...] = ()
    spans: Tuple[Tuple[str, str], ...] = ()
    problems: Tuple[str, ...] = ()
    redacted: Tuple[Tuple[str, int], ...] = field(default=(), compare=False)

    @property
    def day(self) -> Optional[str]:
        """``YYYY-MM-DD`` in UTC of :attr:`timestamp`: a time with an offset is converted to UTC
        (``2025-03-04T01:30:00+09:00`` is ``2025-03-03``), one without is taken as UTC (the import writes UTC);
        ``None`` when the trace has no timestamp or one that is not ISO 8601."""
        from datetime import datetime, timezone

        if not self.timestamp:
            return None
        try:
            t = datetime.fromisoformat(self.timestamp.strip())
        except ValueError:
            return None
        if t.tzinfo is not None:
            t = t.astimezone(timezone.utc)
        return t.strftime("%Y-%m-%d")

    @property
    def negative(self) -> bool:
        """Whether any feedback is negative (:attr:`Feedback.negative`)."""
        return any(f.negative for f in self.feedback)

    def to_dict(self) -> Dict[str, Any]:
        tokens = {k: v for k, v in (("input", self.input_tokens), ("output", self.output_tokens),
                                    ("total", self.total_tokens)) if v is not None}
        given = (("timestamp", self.timestamp), ("latency_ms", self.latency_ms), ("model", self.model),
                 ("tokens", tokens or None), ("user", self.user), ("session", self.session))
        filled = (("tags", list(self.tags)), ("feedback", [f.to_dict() for f in self.feedback]),
                  ("documents", [d.to_dict() for d in self.documents]), ("spans", dict(self.spans)),
                  ("problems", list(self.problems)), ("redacted", dict(self.redacted)))
        return {"source": self.source, "trace_id": self.trace_id, **{k: v for k, v in given if v is not None},
                **{k: v for k, v in filled if v}}

    @classmethod
    def from_dict(cls, obj: JsonValue, *, source: Optional[str] = None, line: Optional[int] = None) -> "TraceMeta":
        """The ``trace`` object of an answers file line, checked field by field."""
        if not isinstance(obj, dict):
            raise InputError('expected an object such as {"source": "langfuse", "trace_id": "..."}', source=source,
                             line=line, field="trace")
        src = obj.get("source")
        if src not in SOURCES:
            raise _fail(f"received {src!r}; expected one of {', '.join(SOURCES)}", source, line, "source")
        tid = obj.get("trace_id")
        if not isinstance(tid, str) or not tid:
            raise _fail(f"received {tid!r}; expected a non-empty string", source, line, "trace_id")
        tokens = _opt_obj(obj, "tokens", source, line)
        tags = _opt_list(obj, "tags", source, line)
        if not all(isinstance(t, str) for t in tags):
            raise _fail("expected a list of strings", source, line, "tags")
        docs = []
        for i, d in enumerate(_opt_list(obj, "documents", source, line)):
            where = f"documents[{i}]"
            if not isinstance(d, dict) or (d.get("id") is not None and not isinstance(d.get("id"), str)) or \
                    isinstance(d.get("rank"), bool) or not isinstance(d.get("rank"), int):
                raise _fail('expected {"id": str or null, "rank": int, "score": number or null}', source, line, where)
            docs.append(RetrievedDoc(d.get("id"), d["rank"], _opt_number(d.get("score"), source, line,
                                                                          f"{where}.score")))
        spans = _opt_obj(obj, "spans", source, line)
        problems = _opt_list(obj, "problems", source, line)
        redacted = _opt_obj(obj, "redacted", source, line)
        return cls(src, tid, _opt_str(obj, "timestamp", source, line),
                   _opt_number(obj.get("latency_ms"), source, line, "latency_ms"), _opt_str(obj, "model", source, line),
                   _opt_int(tokens.get("input"), source, line, "tokens.input"),
                   _opt_int(tokens.get("output"), source, line, "tokens.output"),
                   _opt_int(tokens.get("total"), source, line, "tokens.total"),
                   _opt_str(obj, "user", source, line), _opt_str(obj, "session", source, line), tuple(tags),
                   tuple(Feedback.from_dict(f, source, line, f"feedback[{i}]")
                         for i, f in enumerate(_opt_list(obj, "feedback", source, line))),
                   tuple(docs), tuple((str(k), str(v)) for k, v in spans.items()), tuple(str(p) for p in problems),
                   tuple((str(k), int(v)) for k, v in redacted.items() if isinstance(v, int)))
