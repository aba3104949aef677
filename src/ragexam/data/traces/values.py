"""Reading the payloads a trace records: the question in an input, the answer in an output, the retrieved documents.

Tracing tools store a span's input and output as whatever the application passed: a plain string, a JSON string
(OpenInference's ``input.value`` with ``input.mime_type: application/json``, Langfuse's blob export), an object,
or a chat message list.  The rules, in order:

*Unwrapping*: a string that starts with ``{``, ``[`` or ``"`` is parsed as JSON (up to :data:`MAX_UNWRAP` times: a
JSON string holding JSON is unwrapped again); a string that does not parse is text.

*The question in an input* (:func:`question_of`): text is the question; in an object, the first of
:data:`QUESTION_KEYS` that holds text (``question``, ``query``, ``input``, ``user_input``, ...), else its chat
``messages``; in a message list, the content of the **last** ``user`` (or ``human``) message.  A message's content
is a string, or a list of parts whose ``text``/``content`` are joined (OpenAI's ``[{"type": "text", "text":
...}]``, the OpenTelemetry GenAI ``parts``).
*The answer in an output* (:func:`answer_of`): the same with :data:`ANSWER_KEYS` (``answer``, ``output``,
``response``, ``content``, ...), OpenAI's ``choices[0].message.content``, and the last ``assistant`` (or ``ai``)
message.
*A key path* (``--map question=PATH``): dot-separated keys and list indexes (``-1`` is the last), e.g.
``inputs.query`` or ``messages.-1.content``; it is tried before the rules above.

*Documents* (:func:`documents_of`): a list of items (or an object with one of :data:`DOCUMENT_LIST_KEYS`:
``documents``, ``docs``, ``results``, ``hits``, ``source_nodes``, ...).  An item is a string (a text without id)
or an object: a LlamaIndex ``{"node": {...}, "score": ...}`` is unwrapped; keys with a ``document.`` prefix
(OpenInference's flattened ``document.id``) lose it.  Its id is the first of :data:`DOC_ID_KEYS` (``id``,
``doc_id``, ``document_id``, ``id_``, ...; then the same inside ``metadata``, then ``metadata.source``), its text
the first of :data:`DOC_TEXT_KEYS` (``content``, ``page_content``, ``text``, ...), its score the first number of
:data:`DOC_SCORE_KEYS` (``score``, ``relevance_score``, ``similarity``, ...).  ``--map doc_id=KEY`` (and
``doc_text``, ``doc_score``) put a key first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, List, Optional, Sequence, Set, Tuple, Union

from ragexam.types import JsonValue

__all__ = ["unwrap", "path_get", "tags_of", "number_of", "question_of", "answer_of", "documents_of", "Doc",
           "describe",
           "QUESTION_KEYS", "ANSWER_KEYS", "DOC_ID_KEYS", "DOC_TEXT_KEYS", "DOC_SCORE_KEYS", "DOCUMENT_LIST_KEYS",
           "MAX_UNWRAP"]

MAX_UNWRAP = 3
#: a value of an exported trace record: parsed JSON, or the same shapes from a Parquet row (which adds timestamps
#: as ``datetime`` and a map column as a list of key-value pairs)
TraceValue = Union[JsonValue, datetime, Tuple[str, JsonValue]]
QUESTION_KEYS = ("question", "query", "input", "user_input", "user_query", "prompt", "text", "content", "message",
                 "question_text", "q")
ANSWER_KEYS = ("answer", "output", "response", "result", "completion", "generation", "text", "content", "message",
               "output_text", "final_answer")
DOC_ID_KEYS = ("id", "doc_id", "document_id", "docId", "documentId", "id_", "node_id", "chunk_id", "source_id")
DOC_TEXT_KEYS = ("content", "page_content", "text", "document", "chunk", "passage", "body", "contents")
DOC_SCORE_KEYS = ("score", "relevance_score", "similarity", "similarity_score", "rerank_score")
DOCUMENT_LIST_KEYS = ("documents", "docs", "results", "hits", "source_nodes", "nodes", "contexts", "context",
                      "retrieved", "retrieved_documents", "items", "matches", "chunks", "output")
_USER_ROLES = ("user", "human")
_ASSISTANT_ROLES = ("assistant", "ai", "model", "bot")
_MESSAGE_KEYS = ("messages", "chat_history", "history", "conversation")


@dataclass(frozen=True)
class Doc:
    """A retrieved document as the trace recorded it (any part may be missing)."""

    id: Optional[str]
    text: Optional[str]
    score: Optional[float]


def unwrap(value: TraceValue) -> TraceValue:
    """``value`` with JSON strings parsed (module docstring, "Unwrapping")."""
    for _ in range(MAX_UNWRAP):
        if not isinstance(value, str):
            return value
        s = value.lstrip()
        if not s or s[0] not in "{[\"":
            return value
        try:
            value = json.loads(s)
        except ValueError:  # not JSON after all (or nested too deep): text
            return value
        except RecursionError:
            return value
    return value


def path_get(value: TraceValue, path: str) -> TraceValue:
    """The value at the dot-separated ``path`` (keys, list indexes) inside ``value`` (unwrapped at each step);
    ``None`` when a step is missing."""
    cur = unwrap(value)
    for part in path.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list):
            try:
                i = int(part)
                cur = cur[i]
            except (ValueError, IndexError):
                return None
        else:
            return None
        cur = unwrap(cur)
    return cur


def tags_of(value: TraceValue) -> Tuple[Tuple[str, ...], bool]:
    """``(tags, readable)`` of a tags field: a list (or its JSON text: CSV exports) of texts and numbers; one text
    is one tag (``"prod"``); null or blank is none.  ``readable`` is false when something was left out: a value
    that is no list or text, or list items that are no text or number."""
    value = unwrap(value)
    if value is None:
        return (), True
    if isinstance(value, str):
        return ((value.strip(),) if value.strip() else ()), True
    if not isinstance(value, list):
        return (), False
    tags = tuple(str(t) for t in value if isinstance(t, (str, int, float)) and not isinstance(t, bool))
    return tags, len(tags) == len(value)


def _text(value: TraceValue) -> Optional[str]:
    """Text of a message content: a string, or a list of parts with ``text``/``content`` joined."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, list):
        parts = []
        for p in value:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict) and p.get("type", "text") in ("text", "input_text", "output_text"):
                t = p.get("text", p.get("content"))
                if isinstance(t, str):
                    parts.append(t)
        joined = "\n".join(x for x in parts if x.strip())
        return joined or None
    return None


def _is_messages(value: TraceValue) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) for m in value) and any(
        "role" in m or "type" in m and m.get("type") in ("human", "ai") for m in value)


def _role(m: dict) -> str:
    return str(m.get("role") or m.get("type") or "").lower()


def _last_message(messages: list, roles: Sequence[str]) -> Optional[str]:
    for m in reversed(messages):
        if _role(m) in roles:
            content = m.get("content", m.get("parts", m.get("text")))
            if isinstance(content, dict):
                content = content.get("text") or content.get("content")
            t = _text(unwrap(content))
            if t is not None:
                return t
    return None


def _find(value: TraceValue, keys: Sequence[str], roles: Sequence[str], depth: int = 0) -> Tuple[Optional[str], str]:
    """``(text, where)``: the text of ``value`` by the rules of the module docstring, and where it was found."""
    value = unwrap(value)
    if isinstance(value, str):
        return (value if value.strip() else None), "text"
    if _is_messages(value):
        return _last_message(value, roles), f"last {roles[0]} message"
    if depth > 3:
        return None, ""
    if isinstance(value, dict):
        if roles is _ASSISTANT_ROLES and isinstance(value.get("choices"), list) and value["choices"]:
            t, w = _find(value["choices"][0], ("message", "text"), roles, depth + 1)
            if t is not None:
                return t, f"choices[0].{w}"
        if "role" in value and _role(value) in roles:  # one message
            t = _text(unwrap(value.get("content", value.get("parts"))))
            if t is not None:
                return t, f"{_role(value)} message"
        for k in keys:
            if k in value:
                t, w = _find(value[k], keys, roles, depth + 1)
                if t is not None:
                    return t, f"key {k!r}" + (f" > {w}" if w != "text" else "")
        for k in _MESSAGE_KEYS:
            if _is_messages(unwrap(value.get(k))):
                t = _last_message(unwrap(value[k]), roles)
                if t is not None:
                    return t, f"key {k!r} > last {roles[0]} message"
    if isinstance(value, list) and len(value) == 1:
        return _find(value[0], keys, roles, depth + 1)
    return None, ""


def question_of(value: TraceValue, path: Optional[str] = None) -> Tuple[Optional[str], str]:
    """``(question, where)`` in an input value (module docstring); ``(None, why)`` when there is none."""
    return _of(value, path, QUESTION_KEYS, _USER_ROLES)


def answer_of(value: TraceValue, path: Optional[str] = None) -> Tuple[Optional[str], str]:
    """``(answer, where)`` in an output value (module docstring); ``(None, why)`` when there is none."""
    return _of(value, path, ANSWER_KEYS, _ASSISTANT_ROLES)


def _of(value: TraceValue, path: Optional[str], keys: Sequence[str], roles: Sequence[str]) -> Tuple[Optional[str], str]:
    if value is None:
        return None, "empty"
    if path:
        t = _text(path_get(value, path))
        if t is not None:
            return t, f"path {path!r}"
    text, where = _find(value, keys, roles)
    if text is not None:
        return text, where
    return None, describe(value)


def describe(value: TraceValue) -> str:
    """A short description of a value that held no text (for ``--explain``)."""
    value = unwrap(value)
    if isinstance(value, dict):
        keys = list(value)[:8]
        return "JSON object with keys " + ", ".join(map(repr, keys)) + (" ..." if len(value) > 8 else "")
    if isinstance(value, list):
        return f"JSON list of {len(value)} item(s)"
    if isinstance(value, str):
        return "blank text"
    return f"a {type(value).__name__}"


def _first(obj: dict, keys: Iterable[str]) -> TraceValue:
    for k in keys:
        v = obj.get(k)
        if v is not None:
            return v
    return None


def _flat(item: dict) -> Tuple[dict, dict]:
    """A document object's own keys (a nested ``document`` merged in, the ``document.`` prefix dropped) and its
    ``metadata``."""
    if isinstance(item.get("document"), dict):
        item = dict(item["document"], **{k: v for k, v in item.items() if k != "document"})
    flat = {k[len("document."):] if k.startswith("document.") else k: v for k, v in item.items()}
    meta = unwrap(flat.get("metadata"))
    return flat, meta if isinstance(meta, dict) else {}


def _doc(item: TraceValue, id_keys: Sequence[str], text_keys: Sequence[str], score_keys: Sequence[str]) -> Doc:
    item = unwrap(item)
    if isinstance(item, str):
        return Doc(None, item, None)
    if not isinstance(item, dict):
        return Doc(None, None, None)
    node = item.get("node")
    if isinstance(node, dict) and not isinstance(node.get("node"), dict):  # LlamaIndex NodeWithScore
        inner = _doc(node, id_keys, text_keys, score_keys)
        score = number_of(item.get("score"))
        return Doc(inner.id, inner.text, score if score is not None else inner.score)
    flat, meta = _flat(item)
    did = _first(flat, id_keys)
    if did is None:
        did = _first(meta, id_keys)
    if did is None:
        did = meta.get("source")
    text = _first(flat, text_keys)
    score = number_of(_first(flat, score_keys))
    if score is None:
        score = number_of(_first(meta, score_keys))
    return Doc(None if did is None or isinstance(did, (dict, list)) else str(did),
               text if isinstance(text, str) else None, score)


def _holds(item: TraceValue, key: str) -> bool:
    """Whether a document item has a value at ``key`` (its own keys or its metadata, as :func:`_doc` reads them)."""
    item = unwrap(item)
    if not isinstance(item, dict):
        return False
    node = item.get("node")
    if isinstance(node, dict) and not isinstance(node.get("node"), dict):
        return item.get(key) is not None or _holds(node, key)
    flat, meta = _flat(item)
    return flat.get(key) is not None or meta.get(key) is not None


def number_of(v: TraceValue) -> Optional[float]:
    """A finite number, or the text of one; ``None`` otherwise (booleans too)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
        return f if f == f and f not in (float("inf"), float("-inf")) else None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
        return f if f == f and abs(f) != float("inf") else None
    return None


def documents_of(value: TraceValue, *, id_key: Optional[str] = None, text_key: Optional[str] = None,
                 score_key: Optional[str] = None, found: Optional[Set[str]] = None) -> Optional[List[Doc]]:
    """The documents in a retrieval output (module docstring), or ``None`` when it is not a list of documents.
    ``found``: a set that gets ``doc_id``, ``doc_text``, ``doc_score`` when a document holds that ``--map`` key."""
    value = unwrap(value)
    if isinstance(value, dict):
        for k in DOCUMENT_LIST_KEYS:
            inner = unwrap(value.get(k))
            if isinstance(inner, list):
                value = inner
                break
        else:
            return None
    if not isinstance(value, list):
        return None
    if any(not isinstance(unwrap(x), (dict, str)) for x in value):
        return None
    ids = ((id_key,) if id_key else ()) + DOC_ID_KEYS
    texts = ((text_key,) if text_key else ()) + DOC_TEXT_KEYS
    scores = ((score_key,) if score_key else ()) + DOC_SCORE_KEYS
    if found is not None:
        found.update(name for name, key in (("doc_id", id_key), ("doc_text", text_key), ("doc_score", score_key))
                     if key and any(_holds(x, key) for x in value))
    return [_doc(x, ids, texts, scores) for x in value]
