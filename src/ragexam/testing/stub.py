"""A deterministic OpenAI-compatible endpoint on 127.0.0.1, for tests, CI and offline examples.

:class:`StubEndpoint` serves ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` the way an
OpenAI-compatible server does, with no model behind it:

* **The judge's prompts** (every registered judge metric, custom rubrics included) are answered by the
  metric's *own* stub reply (:attr:`ragexam.metrics.judge.metric.JudgeMetric.stub`,
  :mod:`ragexam.metrics.judge.stubs`): the metric is known from the request's JSON-schema name, or from its
  rubric's first line, and its inputs and units are read back from the prompt by the headings the rubrics
  use.  The replies follow each contract, so everything downstream (validation, coverage, intervals, the
  gate) runs for real; the *numbers* only say how much the texts overlap, nothing about quality.  With
  ``logprobs: true`` the reply carries token log-probabilities (:func:`synthetic_logprobs`), so
  probability scoring runs too.
* **The question generator's prompts** (``ragexam generate``: questions, the reader, the critic) are answered
  by :func:`ragexam.questions.offline.stub_reply`, so a generation runs end to end.
* **Any other chat request** (answer generation: ragexam's ``ragexam answer``, LangChain's
  ``ChatOpenAI``...) is answered extractively: the sentence of the prompt's documents that shares
  the most with its question (a line after ``## 질문`` / ``## Question`` or starting with ``질문:`` /
  ``Question:``), or "제공된 문서에서 찾을 수 없습니다." / "I cannot find this in the documents." when
  nothing overlaps enough.  ``ragexam llm probe``'s request gets a reply valid under its schema.
* **Embeddings** are hashed bags of character bigrams (``dimensions``, default 256), L2-normalised;
  ``encoding_format: "base64"`` (what the ``openai`` package asks for) is honoured.

Every request is kept in ``requests`` (the parsed bodies) and counted per path in ``counts``.

    >>> with StubEndpoint() as ep:            # doctest: +SKIP
    ...     judge = Judge("stub", base_url=ep.base_url, api_key="unused")

From a shell, ``python -m ragexam.testing.stub [--port PORT]`` serves it until Ctrl+C (:func:`main`), printing its
``base_url`` first.

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
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from ragexam.metrics.judge.stubs import StubInputs, bigrams, overlap
from ragexam.types import JsonValue

if TYPE_CHECKING:
    from http.client import HTTPMessage

__all__ = ["StubEndpoint", "JSONEndpoint", "LoopbackHTTPServer", "overlap", "bigrams", "STUB_MODEL", "judge_reply", "read_prompt",
           "metric_of", "synthetic_logprobs"]

STUB_MODEL = "ragexam-stub"
_DECLINE = {"ko": "제공된 문서에서 찾을 수 없습니다.", "en": "I cannot find this in the documents."}
_CUSTOM = ("# 채점할 자료", "# Material to grade")


# --- reading the judge's prompt back ------------------------------------------------------------------------
def _first_lines() -> List[Tuple[str, str]]:
    """``(first line of a rubric's template, metric)`` for every registered metric and language."""
    from ragexam.metrics.judge.registry import registered

    return [(r.template.split("\n", 1)[0], name) for name, m in registered().items() for r in m.rubrics.values()]


def metric_of(body: Dict[str, Any]) -> Optional[str]:
    """The judge metric a chat request is about: the JSON-schema name when it is a registered metric, else the
    registered rubric whose first line starts the first user message, ``"custom"`` for a custom rubric's
    prompt, ``None`` for anything else."""
    from ragexam.metrics.judge.registry import registered

    user = next((m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "user"), "")
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name") if fmt.get("type") == "json_schema" else None
    if name in registered():
        return name
    if not isinstance(user, str):
        return None
    for line, metric in _first_lines():
        if user.startswith(line):
            return metric
    if any(marker in user for marker in _CUSTOM):
        return "custom"
    return None


def read_prompt(user: str, levels: Tuple[int, ...] = (1, 2, 3, 4, 5)) -> StubInputs:
    """The inputs of a judge prompt, read back by the headings and unit labels the rubrics render
    (:data:`ragexam.metrics.judge.prompts.HEADINGS`, :data:`~ragexam.metrics.judge.prompts.UNIT_LABELS`)."""
    from ragexam.metrics.judge.prompts import HEADINGS, UNIT_LABELS

    if any(m in user for m in _CUSTOM):  # a custom rubric: its inputs follow the marker
        user = re.split(r"\n# (?:채점할 자료|Material to grade)\n", user, maxsplit=1)[-1]
    sec: Dict[str, str] = {}
    for key, names in HEADINGS.items():
        for name in names:
            m = re.search(r"^## " + re.escape(name) + r"\n(.*?)(?=\n\n## |\n\n# |\Z)", user, re.S | re.M)
            if m:
                sec[key] = m.group(1).strip()
                break

    def blocks(key: str) -> Tuple[str, ...]:
        ko, en = UNIT_LABELS[key]
        parts = re.split(rf"(?:^|\n\n)\[(?:{ko}|{en}) \d+\] : ", "\n\n" + sec.get(key, ""))
        return tuple(p.strip() for p in parts[1:])

    contexts = blocks("contexts")
    units = blocks("claims") or blocks("statements") or contexts
    return StubInputs(sec.get("question", ""), contexts, sec.get("answer") or sec.get("answer_1", ""),
                      sec.get("ground_truth", ""), sec.get("answer_2", ""), units, levels)


def judge_reply(metric: str, user: str, schema: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The reply to one judge prompt: the metric's own stub reply (a custom rubric's levels come from
    ``schema``)."""
    from ragexam.metrics.judge import stubs
    from ragexam.metrics.judge.registry import registered

    levels = tuple(((schema or {}).get("properties", {}).get("score", {}).get("enum")) or (1, 2, 3, 4, 5))
    inputs = read_prompt(user, levels)
    m = registered().get(metric)
    return m.stub(inputs) if m is not None else stubs.custom(inputs)


def synthetic_logprobs(content: str, top: int = 5) -> List[Dict[str, Any]]:
    """Token log-probabilities for ``content`` as an endpoint would send them: a token per JSON literal,
    digit, quoted string or other character; at a digit the written one has probability 0.6, the next
    levels 0.15 each, the rest share what is left; at ``true``/``false`` the written one 0.8; any other token
    0.9 (a space the other 0.1)."""
    out = []
    for m in re.finditer(r'true|false|\d|"(?:[^"\\]|\\.)*"|\s+|.', content, re.S):
        tok = m.group(0)
        if tok.isdigit():
            d = int(tok)
            weights = {str(x): (0.6 if x == d else 0.15 if abs(x - d) == 1 else 0.05) for x in range(1, 6)}
            weights.setdefault(tok, 0.6)
        elif tok in ("true", "false"):
            weights = {tok: 0.8, ("false" if tok == "true" else "true"): 0.2}
        else:
            weights = {tok: 0.9, (" " if tok != " " else "\n"): 0.1}
        total = sum(weights.values())
        alts = sorted(weights.items(), key=lambda kv: -kv[1])[:top]
        entry = lambda t, w: {"token": t, "bytes": list(t.encode("utf-8")), "logprob": math.log(w / total)}  # noqa: E731
        out.append({**entry(tok, weights[tok]), "top_logprobs": [entry(t, w) for t, w in alts]})
    return out


def answer_reply(user: str) -> str:
    """An extractive answer to a generation prompt (see the module docstring)."""
    from ragexam.metrics.judge.units import split_sentences

    korean = bool(re.search(r"[가-힣]", user))
    m = re.search(r"^##\s*(?:질문|Question)\s*\n(.+?)(?:\n\n|\Z)", user, re.S | re.M) or \
        re.search(r"^(?:질문|Question)\s*[:：]\s*(.+)$", user, re.M)
    question = m.group(1).strip() if m else user.strip().splitlines()[-1] if user.strip() else ""
    rest = user.replace(question, " ")
    best, score = "", 0.0
    for s in split_sentences(rest):
        if s.startswith("#") or len(s) < 2:
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


class JSONEndpoint:
    """A JSON POST server on 127.0.0.1 (a thread per request): a subclass answers :meth:`handle`.  ``base_url`` is
    ``http://127.0.0.1:<port>/v1``; use it as a context manager or call :meth:`start` / :meth:`stop`; ``port`` 0
    picks a free one."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.lock = threading.Lock()
        self._httpd: Optional[ThreadingHTTPServer] = None
        self.base_url = ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle(self, path: str, body: JsonValue, headers: "HTTPMessage") -> Tuple[int, JsonValue]:  # pragma: no cover - overridden
        """``(HTTP status, JSON reply)`` for a POST of ``body`` (``None``: not JSON) to ``path``."""
        raise NotImplementedError

    def start(self):
        if self._httpd is not None:
            return self
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                except ValueError:
                    body = None
                status, reply = server.handle(self.path.split("?", 1)[0], body, self.headers)
                data = json.dumps(reply, ensure_ascii=False).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = LoopbackHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


class StubEndpoint(JSONEndpoint):
    """The loopback endpoint (see the module docstring).  ``base_url`` is ``http://127.0.0.1:<port>/v1``;
    use it as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(self, *, dimensions: int = 256, port: int = 0) -> None:
        super().__init__(port)
        self.dimensions = dimensions
        self.requests: List[Dict[str, Any]] = []
        self.counts: Counter = Counter()

    def __enter__(self) -> "StubEndpoint":
        return self.start()

    def handle(self, path: str, body: JsonValue, headers: "HTTPMessage") -> Tuple[int, JsonValue]:
        if not isinstance(body, dict):
            return 400, {"error": {"message": "the body is not JSON"}}
        with self.lock:
            self.requests.append(body)
            self.counts[path] += 1
        if path.endswith("/chat/completions"):
            return 200, self._chat(body)
        if path.endswith("/embeddings"):
            return 200, self._embeddings(body)
        return 404, {"error": {"message": f"no route {path}"}}

    def _chat(self, body: Dict[str, Any]) -> Dict[str, Any]:
        from ragexam.metrics.judge.contract import instance

        messages = body.get("messages") or []
        user = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), user)
        metric = metric_of(body)
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        from ragexam.questions.offline import stub_reply  # ragexam generate's prompts (their logic is there)

        own = stub_reply(body)
        if own is not None:
            content = own
        elif metric is not None:
            content = json.dumps(judge_reply(metric, first_user, schema), ensure_ascii=False)
        elif (fmt.get("json_schema") or {}).get("name") == "ragexam_probe":
            content = json.dumps(instance(schema), ensure_ascii=False)
        else:
            content = answer_reply(user if isinstance(user, str) else str(user))
        prompt = sum(len(str(m.get("content") or "")) for m in messages) // 3 + 1
        choice: Dict[str, Any] = {"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content, "refusal": None}}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": synthetic_logprobs(content, int(body.get("top_logprobs") or 5))}
        return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0,
                "model": body.get("model") or STUB_MODEL, "choices": [choice],
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
                emb: Union[str, List[float]] = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode("ascii")
            else:
                emb = vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(str(t)) for t in texts) // 3 + 1
        return {"object": "list", "data": data, "model": body.get("model") or STUB_MODEL,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m ragexam.testing.stub [--port PORT]``: serve the stub on 127.0.0.1 until Ctrl+C (exit 130) or
    SIGTERM, after one line with its address; a port that is taken or not a port is one line on stderr, exit 2."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(prog="python -m ragexam.testing.stub", description="The deterministic "
                                     "OpenAI-compatible stub endpoint on 127.0.0.1, until Ctrl+C (not a model: its "
                                     "numbers only measure word overlap).")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default 0: any free port)")
    port = parser.parse_args(argv).port
    try:
        stub = StubEndpoint(port=port).start()
    except (OSError, OverflowError) as err:
        print(f"error: --port {port}: cannot listen on 127.0.0.1:{port} ({getattr(err, 'strerror', None) or err}); "
              "expected a free port from 0 to 65535: choose another, or 0 for any free one", file=sys.stderr)
        return 2
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    print(f"ragexam stub endpoint: {stub.base_url}  (e.g. --base-url {stub.base_url}; any API key; Ctrl+C stops "
          "it)", flush=True)
    try:
        while not stopped.wait(0.5):
            pass
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        stub.stop()


if __name__ == "__main__":  # pragma: no cover - exercised as a child process by tests/test_testing_exam.py
    raise SystemExit(main())
