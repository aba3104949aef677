"""A deterministic OpenAI-compatible endpoint on 127.0.0.1, for tests, CI and offline examples.

:class:`StubEndpoint` serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` the way an
OpenAI-compatible server does, with no model behind it:

* **The judge's prompts** (every rubric of :mod:`ragexam.metrics.judge`, custom rubrics included)
  are answered with a *valid* reply computed from word overlap -- character bigrams of the words, so
  Korean works -- between the texts the prompt holds: a context that shares much of the question is
  relevant, an answer sentence found in a context is a supported claim, an answer close to the
  reference is correct, an answer with a declining phrase abstains.  The replies follow each
  rubric's contract, so everything downstream (validation, coverage, intervals, the gate) runs for
  real; the *numbers* only say how much the texts overlap, nothing about quality.
* **The question generator's prompts** (``ragexam generate``: questions, the reader, the critic) are answered
  by :func:`ragexam.analysis.generate.offline.stub_reply`, so a generation runs end to end.
* **Any other chat request** (answer generation: ragexam's ``ragexam answer``, LangChain's
  ``ChatOpenAI``...) is answered extractively: the sentence of the prompt's documents that shares
  the most with its question (a line after ``## 질문`` / ``## Question`` or starting with ``질문:`` /
  ``Question:``), or "제공된 문서에서 찾을 수 없습니다." / "I cannot find this in the documents." when
  nothing overlaps enough.
* **Embeddings** are hashed bags of character bigrams (``dimensions``, default 256), L2-normalised;
  ``encoding_format: "base64"`` (what the ``openai`` package asks for) is honoured.

Every request is kept in ``requests`` (the parsed bodies) and counted per path in ``counts``.

    >>> with StubEndpoint() as ep:            # doctest: +SKIP
    ...     judge = Judge("stub", base_url=ep.base_url, api_key="unused")

Not a grader: never report numbers from it as a model's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["StubEndpoint", "LoopbackHTTPServer", "overlap", "bigrams", "STUB_MODEL"]

STUB_MODEL = "ragexam-stub"
_WORD = re.compile(r"\w+", re.UNICODE)
_SENT = re.compile(r"(?<=[.!?。])\s+|\n+")
_DECLINE = {"ko": "제공된 문서에서 찾을 수 없습니다.", "en": "I cannot find this in the documents."}


def bigrams(text: str) -> Counter:
    """Character bigrams of each word of ``text`` (lowercased; a one-letter word counts as itself)."""
    out: Counter = Counter()
    for w in _WORD.findall((text or "").lower()):
        if len(w) == 1:
            out[w] += 1
        else:
            out.update(w[i:i + 2] for i in range(len(w) - 1))
    return out


def overlap(a: str, b: str) -> float:
    """Share of ``a``'s bigrams found in ``b`` (0 when ``a`` has none)."""
    ga, gb = bigrams(a), bigrams(b)
    total = sum(ga.values())
    return sum(min(c, gb[g]) for g, c in ga.items()) / total if total else 0.0


def _f1(a: str, b: str) -> float:
    p, r = overlap(a, b), overlap(b, a)
    return 2 * p * r / (p + r) if p + r else 0.0


def _sentences(text: str) -> List[str]:
    return [s.strip() for s in _SENT.split(text or "") if len(s.strip()) > 1]


def _declines(text: str) -> bool:
    from ragexam.analysis.verdicts import is_abstention

    return is_abstention(text) is not None


def _band(x: float, cuts: Sequence[float]) -> int:
    """5 when ``x >= cuts[0]``, 4 when ``>= cuts[1]``, ... 1 below the last cut."""
    for i, c in enumerate(cuts):
        if x >= c:
            return 5 - i
    return 1


# --- reading the judge's prompt ------------------------------------------------------------------------
_HEADS = {"question": ("질문", "Question"), "ground_truth": ("정답", "Reference answer"),
          "answer": ("답변", "Answer"), "answer_1": ("답변 1", "Answer 1"), "answer_2": ("답변 2", "Answer 2"),
          "contexts": ("검색된 컨텍스트", "Retrieved contexts")}
_MARKERS = (
    ("context_relevance", ("질문과 검색된 컨텍스트의 관련성을", "Rate how relevant each retrieved context")),
    ("context_precision", ("검색된 각 컨텍스트가 정답에 이르는 데", "Decide for each retrieved context whether")),
    ("context_recall", ("정답의 내용이 검색된 컨텍스트에 들어 있는지", "Judge whether the content of the reference answer")),
    ("faithfulness", ("답변의 내용이 검색된 컨텍스트에 근거하는지", "Judge whether the answer is grounded")),
    ("answer_relevancy", ("답변이 질문이 물은 것에 답하는지", "Judge whether the answer addresses what the question")),
    ("answer_correctness", ("답변이 정답과 일치하는지", "Judge whether the answer agrees")),
    ("abstention", ("문서 밖 질문", "out-of-corpus question")),
    ("pairwise", ("두 답변 가운데", "Choose which of two answers")),
)


def _sections(user: str) -> Dict[str, str]:
    if "\n# 채점할 자료\n" in user or "\n# Material to grade\n" in user:  # a custom rubric: its inputs follow
        user = re.split(r"\n# (?:채점할 자료|Material to grade)\n", user, maxsplit=1)[1]
    out: Dict[str, str] = {}
    for key, names in _HEADS.items():
        for name in names:
            m = re.search(r"^## " + re.escape(name) + r"\n(.*?)(?=\n\n## |\n\n# |\Z)", user, re.S | re.M)
            if m:
                out[key] = m.group(1).strip()
                break
    return out


def _contexts(block: str) -> List[str]:
    parts = re.split(r"(?:^|\n\n)\[(?:컨텍스트|Context) \d+\] : ", "\n\n" + (block or ""))
    return [p.strip() for p in parts[1:]]


def _supported(sentences: Sequence[str], contexts: Sequence[str], key: str) -> List[Dict[str, Any]]:
    out = []
    for s in sentences:
        scores = [overlap(s, c) for c in contexts]
        best = max(range(len(scores)), key=scores.__getitem__) if scores else None
        ok = best is not None and scores[best] >= 0.5
        out.append({key: s, "supported": ok, "context": best + 1 if ok else None})
    return out


def judge_reply(metric: str, user: str, schema: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The reply to one judge prompt (see the module docstring)."""
    sec = _sections(user)
    q, gt, ans = sec.get("question", ""), sec.get("ground_truth", ""), sec.get("answer", "")
    ctx = _contexts(sec.get("contexts", ""))
    why = "stub: word overlap"
    if metric == "context_relevance":
        scores = [_band(overlap(q, c), (0.5, 0.35, 0.2, 0.1)) for c in ctx]
        return {"scores": scores, "average": round(sum(scores) / len(scores), 2) if scores else 0, "reasoning": why}
    if metric == "context_precision":
        return {"reasoning": why, "useful": [overlap(gt, c) >= 0.3 for c in ctx]}
    if metric == "context_recall":
        return {"reasoning": why, "statements": _supported(_sentences(gt) or [gt], ctx, "statement")}
    if metric == "faithfulness":
        claims = [] if _declines(ans) else _supported(_sentences(ans), ctx, "claim")
        return {"reasoning": why, "claims": claims}
    if metric == "answer_relevancy":
        if _declines(ans):
            return {"reasoning": why, "verdict": "declined", "score": None}
        s = _band(overlap(q, ans) * 2, (0.8, 0.5, 0.3, 0.1))
        return {"reasoning": why, "verdict": "relevant" if s >= 4 else "partially_relevant" if s >= 2 else
                "irrelevant", "score": s}
    if metric == "answer_correctness":
        s = 1 if _declines(ans) else _band(_f1(ans, gt), (0.5, 0.35, 0.25, 0.12))
        return {"reasoning": why, "verdict": "correct" if s >= 4 else "partially_correct" if s >= 2 else "incorrect",
                "score": s}
    if metric == "abstention":
        return {"reasoning": why, "verdict": "abstained" if _declines(ans) else "answered"}
    if metric == "pairwise":
        a1, a2 = sec.get("answer_1", ""), sec.get("answer_2", "")
        if _declines(gt):
            v1, v2 = float(_declines(a1)), float(_declines(a2))
        else:
            v1, v2 = _f1(a1, gt), _f1(a2, gt)
        return {"reasoning": why, "winner": "tie" if abs(v1 - v2) < 0.05 else "1" if v1 > v2 else "2"}
    # a custom rubric: the levels come from its reply schema
    levels = ((schema or {}).get("properties", {}).get("score", {}).get("enum")) or [1, 2, 3, 4, 5]
    value = _f1(ans, gt) if gt and ans else overlap(q, ans or " ".join(ctx))
    idx = min(len(levels) - 1, int(round(min(1.0, value * 1.5) * (len(levels) - 1))))
    return {"reasoning": why, "score": levels[idx]}


def _metric_of(body: Dict[str, Any], user: str) -> Optional[str]:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("name")
    for metric, markers in _MARKERS:
        if any(m in user for m in markers):
            return metric
    if "# 채점할 자료" in user or "# Material to grade" in user:
        return "custom"
    return None


def answer_reply(user: str) -> str:
    """An extractive answer to a generation prompt (see the module docstring)."""
    korean = bool(re.search(r"[가-힣]", user))
    m = re.search(r"^##\s*(?:질문|Question)\s*\n(.+?)(?:\n\n|\Z)", user, re.S | re.M) or \
        re.search(r"^(?:질문|Question)\s*[:：]\s*(.+)$", user, re.M)
    question = m.group(1).strip() if m else user.strip().splitlines()[-1] if user.strip() else ""
    rest = user.replace(question, " ")
    best, score = "", 0.0
    for s in _sentences(rest):
        if s.startswith("#"):
            continue
        o = overlap(question, s)
        if o > score:
            best, score = s, o
    if score < 0.2:
        return _DECLINE["ko" if korean else "en"]
    return best


def embed(text: str, dimensions: int = 256) -> List[float]:
    """A hashed bag of character bigrams, L2-normalised (a text without letters gets a fixed unit vector)."""
    v = [0.0] * dimensions
    for g, c in bigrams(text).items():
        h = int.from_bytes(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest(), "little")
        v[h % dimensions] += c * (1.0 if (h >> 32) & 1 else -1.0)
    norm = math.sqrt(sum(x * x for x in v))
    if norm == 0:
        v[0] = 1.0
        return v
    return [x / norm for x in v]


# --- the server --------------------------------------------------------------------------------------
class LoopbackHTTPServer(ThreadingHTTPServer):
    """A thread per request, daemon threads, and a listen backlog of 128 connections: with the socketserver
    default of 5, a client opening 32 connections at once has most of its connection attempts dropped and
    retried by TCP a second later, which shows up as a slow start of every concurrent batch of calls."""

    daemon_threads = True
    request_queue_size = 128


class StubEndpoint:
    """The loopback endpoint (see the module docstring).  ``base_url`` is ``http://127.0.0.1:<port>/v1``;
    use it as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self, *, dimensions: int = 256) -> None:
        self.dimensions = dimensions
        self.requests: List[Dict[str, Any]] = []
        self.counts: Counter = Counter()
        self.lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self.base_url = ""

    def __enter__(self) -> "StubEndpoint":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> "StubEndpoint":
        if self._httpd is not None:
            return self
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body, ensure_ascii=False).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                except ValueError:
                    return self._send(400, {"error": {"message": "the body is not JSON"}})
                path = self.path.split("?", 1)[0]
                with stub.lock:
                    stub.requests.append(body)
                    stub.counts[path] += 1
                if path.endswith("/chat/completions"):
                    return self._send(200, stub._chat(body))
                if path.endswith("/embeddings"):
                    return self._send(200, stub._embeddings(body))
                return self._send(404, {"error": {"message": f"no route {path}"}})

        self._httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def _chat(self, body: Dict[str, Any]) -> Dict[str, Any]:
        messages = body.get("messages") or []
        user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), user)
        metric = _metric_of(body, first_user)
        from ragexam.analysis.generate.offline import stub_reply  # ragexam generate's prompts (their logic is there)

        own = stub_reply(body)
        if own is not None:
            content = own
        elif metric is None:
            content = answer_reply(user if isinstance(user, str) else str(user))
        else:
            schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
            content = json.dumps(judge_reply(metric, first_user, schema), ensure_ascii=False)
        prompt = sum(len(str(m.get("content") or "")) for m in messages) // 3 + 1
        return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
                "model": body.get("model") or STUB_MODEL,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content, "refusal": None}}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": len(content) // 3 + 1,
                          "total_tokens": prompt + len(content) // 3 + 1}}

    def _embeddings(self, body: Dict[str, Any]) -> Dict[str, Any]:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        dims = body.get("dimensions") or self.dimensions
        data = []
        for i, t in enumerate(texts):
            vec = embed(t if isinstance(t, str) else " ".join(map(str, t)), dims)
            if body.get("encoding_format") == "base64":
                emb: Any = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode("ascii")
            else:
                emb = vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(str(t)) for t in texts) // 3 + 1
        return {"object": "list", "data": data, "model": body.get("model") or STUB_MODEL,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
