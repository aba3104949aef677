"""A scripted OpenAI-compatible chat server on 127.0.0.1 for the judge tests (no tests here).

The handler recognizes the judge metric from the prompt and a scenario from a tag
``[[s:NAME]]`` in the question (or in an answer).  Scenarios:

=============== ===========================================================================
good            a valid reply (context relevance: 5 for the first context, 1 for the rest)
bad_json        prose without JSON, every time
bad_json_once   prose the first time, then a valid reply
truncated       a cut JSON with finish_reason "length", every time
loop            a reply that repeats "3, " until finish_reason "length", every time
range           scores out of range (7), every time
count           one score too few (context relevance, context precision), every time
refusal         message.refusal set, content null
text_refusal    "I'm sorry, I can't help with that."
r429_once       HTTP 429 (Retry-After: 0), then a valid reply
r500            HTTP 500, every time
r500_once       HTTP 500 once, then a valid reply
slow            sleeps ``stub.slow_seconds`` before a valid reply (timeout test)
mismatch        context relevance with a wrong "average"
echo_key        HTTP 400 whose message echoes the Authorization header
incorrect       answer_correctness verdict incorrect (1); abstention "answered"
not_json        HTTP 200 whose body is not JSON (a proxy's error page), every time
key_in_reply    a valid reply whose reasoning quotes the API key (from the Authorization header)
flip            answer_correctness 5 on the first call of a conversation, 3 on the second, ...;
                context relevance [5, 1, ...] then [4, 1, ..., 2]; answer_relevancy 5 then 3;
                context precision [T, F, ...] then [F, T, ...]; a custom rubric 4 then 2 (repeat tests)
flip3           like flip, but the verdict changes only on every third call (3 repeats: 2 vs 1)
declined        answer_relevancy "declined": true
unfaithful      faithfulness: every claim after the first unsupported
complete        context_recall with every statement supported
first           pairwise: always "1" (a judge with position bias)
tie             pairwise: always "tie"
=============== ===========================================================================

Pairwise without a scenario: the answer that contains ``[[good]]`` wins ("1" or "2" by where it
is), "tie" when neither or both do.  A custom rubric (``Grade the material below by the criteria``)
gets score 4, or 9 (outside any scale) with scenario ``range``.

``stub.reject_response_format = True`` makes every request with ``response_format`` fail with
HTTP 400 (like an endpoint that does not support it).  ``stub.block_after = N`` makes
request N+1 and later wait until ``stub.release`` is set (kill tests).  ``stub.gate_auths = N``
holds every request until requests with N different Authorization headers have arrived (so that
N client processes are surely running at once; 30 s at most).  ``stub.delay`` sleeps that many
seconds before each reply.  ``stub.requests`` keeps every request body, ``stub.auth`` every
Authorization header.  ``ragexam.llm.probe``'s request (the judge's ``scoring="auto"`` asks it once per
endpoint and cache) is answered as an endpoint that enforces JSON schemas and sends no log-probabilities,
and kept in ``stub.probes``, not in ``stub.requests``: those are the judge's calls.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler

API_KEY = "sk-test-JUDGE-SECRET-9f3a7c"

from ragexam.testing import stub as _stub  # noqa: E402 (the judge's prompts, recognized by the registry)
from ragexam.testing.stub import LoopbackHTTPServer  # noqa: E402


def metric_of(body: dict) -> str:
    """The judge metric of a request (the registry's rubrics), ``custom`` for a rubric file, else ``answer``."""
    return _stub.metric_of(body) or "answer"


def scenario_of(body: dict) -> str:
    user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    m = re.search(r"\[\[s:([a-z0-9_]+)\]\]", user)
    return m.group(1) if m else "good"


def n_contexts(body: dict) -> int:
    """The number of units the reply must hold values for: claims, statements, else contexts."""
    user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    inputs = _stub.read_prompt(user)
    return len(inputs.units)


def _pair_winner(user: str, scenario: str) -> str:
    if scenario == "first":
        return "1"
    if scenario == "tie":
        return "tie"
    m = re.search(r"## (?:답변|Answer) 1\n(.*?)\n\n## (?:답변|Answer) 2\n(.*?)\n\n## ", user, re.S)
    one, two = ("[[good]]" in m.group(1), "[[good]]" in m.group(2)) if m else (False, False)
    return "1" if one and not two else "2" if two and not one else "tie"


def good_reply(metric: str, n: int, scenario: str = "good", seen: int = 1, user: str = "") -> dict:
    flipped = (scenario == "flip" and seen % 2 == 0) or (scenario == "flip3" and seen % 3 == 0)
    if flipped:
        if metric == "answer_relevancy":
            return {"declined": False, "score": 3, "reasoning": "r"}
        if metric == "context_precision":
            return {"useful": [False] + [True] * (n - 1) if n > 1 else [False], "reasoning": "r"}
        if metric == "custom":
            return {"score": 2, "reasoning": "r"}
        if metric == "context_relevance":
            scores = [4] + [1] * (n - 2) + [2] if n > 1 else [4]
            return {"scores": scores, "average": round(sum(scores) / n, 2), "reasoning": "r"}
        if metric == "answer_correctness":
            return {"score": 3, "reasoning": "r"}
    if metric == "context_relevance":
        scores = [5] + [1] * (n - 1)
        avg = round(sum(scores) / len(scores), 2)
        if scenario == "mismatch":
            avg = 4.9
        return {"scores": scores, "average": avg, "reasoning": "컨텍스트 1이 직접 답합니다."}
    if metric == "faithfulness":
        return {"supported": [True] + [scenario != "unfaithful"] * (n - 1), "reasoning": "ok"}
    if metric == "answer_correctness":
        return {"score": 1 if scenario == "incorrect" else 5, "reasoning": "틀림" if scenario == "incorrect" else "맞음"}
    if metric == "abstention":
        return {"verdict": "answered" if scenario == "incorrect" else "abstained", "reasoning": "r"}
    if metric == "context_precision":
        return {"useful": [True] + [False] * (n - 1), "reasoning": "r"}
    if metric == "context_recall":
        return {"supported": [True] + [scenario == "complete"] * (n - 1), "reasoning": "r"}
    if metric == "answer_relevancy":
        if scenario == "declined":
            return {"declined": True, "score": 1, "reasoning": "거절"}
        return {"declined": False, "score": 1 if scenario == "incorrect" else 5, "reasoning": "r"}
    if metric == "pairwise":
        return {"winner": _pair_winner(user, scenario), "reasoning": "r"}
    if metric == "custom":
        return {"score": 9 if scenario == "range" else 4, "reasoning": "r"}
    return {}


class Stub:
    def __init__(self):
        self.requests: list[dict] = []
        self.probes: list[dict] = []
        self.probes_fail = False  # the probe gets HTTP 500
        self.auth: list[str | None] = []
        self.lock = threading.Lock()
        self.seen: Counter = Counter()  # (first user message) -> requests so far
        self.reject_response_format = False
        self.slow_seconds = 2.0
        self.block_after: int | None = None
        self.release = threading.Event()
        self.arrived = threading.Event()  # set when a request is blocked
        self.answer_text = None  # callable(body) -> str for plain (answer generation) requests
        self.gate_auths: int | None = None
        self.gated = threading.Condition(self.lock)
        self.delay = 0.0
        self.base_url = ""

    def count(self) -> int:
        with self.lock:
            return len(self.requests)

    def bodies(self, metric: str | None = None) -> list[dict]:
        with self.lock:
            return [b for b in self.requests if metric is None or metric_of(b) == metric]


def completion(content, *, finish_reason="stop", refusal=None, model="stub-judge"):
    return {"id": "chatcmpl-stub", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": content, "refusal": refusal}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}


def send_json(handler: BaseHTTPRequestHandler, status: int, body, headers=None) -> None:
    """Answer ``handler``'s request with ``body`` (JSON, or raw bytes) and ``headers``."""
    data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def serve(handler_class):
    """Start ``handler_class`` on 127.0.0.1 in a thread: ``(base address, shutdown)``."""
    httpd = LoopbackHTTPServer(("127.0.0.1", 0), handler_class)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def shutdown():
        httpd.shutdown()
        httpd.server_close()

    return f"http://127.0.0.1:{httpd.server_address[1]}", shutdown


def make_handler(stub: Stub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _reply(self, status, body, headers=None):
            send_json(self, status, body, headers)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if (body.get("response_format") or {}).get("json_schema", {}).get("name") == "ragexam_probe":
                with stub.lock:
                    stub.probes.append(body)
                if stub.probes_fail:
                    return self._reply(500, {"error": {"message": "down"}})
                return self._reply(200, completion('{"word": "alpha"}'))
            with stub.lock:
                stub.requests.append(body)
                stub.auth.append(self.headers.get("Authorization"))
                n = len(stub.requests)
                conv = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
                stub.seen[conv] += 1
                seen = stub.seen[conv]
                stub.gated.notify_all()
                if stub.gate_auths is not None:
                    stub.gated.wait_for(lambda: len(set(stub.auth)) >= stub.gate_auths, timeout=30)
            if stub.delay:
                time.sleep(stub.delay)
            if stub.block_after is not None and n > stub.block_after:
                stub.arrived.set()
                stub.release.wait(30)
                return self._reply(503, {"error": {"message": "released"}})
            if self.path != "/v1/chat/completions":
                return self._reply(404, {"error": {"message": "not found"}})
            metric = metric_of(body)
            scenario = scenario_of(body)
            if stub.reject_response_format and "response_format" in body:
                return self._reply(400, {"error": {"message": "response_format is not supported",
                                                   "type": "invalid_request_error"}})
            if metric == "answer" and scenario == "r500":
                return self._reply(500, {"error": {"message": "boom"}})
            if metric == "answer":
                text = stub.answer_text(body) if stub.answer_text else "문서에 따르면 답은 이렇습니다."
                return self._reply(200, completion(text))
            n_ctx = n_contexts(body)
            good = json.dumps(good_reply(metric, n_ctx, scenario, seen, conv), ensure_ascii=False)
            prose = "Sure! Here is my grading." if "response_format" in body else f"Sure! Here it is: {good} Hope it helps."
            if scenario == "bad_json" or (scenario == "bad_json_once" and seen == 1):
                return self._reply(200, completion("점수는 5점입니다. 아주 좋아요."))
            if scenario == "truncated":
                return self._reply(200, completion(good[: len(good) // 2], finish_reason="length"))
            if scenario == "loop":
                return self._reply(200, completion('{"scores": [' + "3, " * 120, finish_reason="length"))

            if scenario == "range" and metric == "context_relevance":
                return self._reply(200, completion(json.dumps({"scores": [7] * n_ctx, "average": 7,
                                                               "reasoning": "x"})))
            if scenario == "count" and metric == "context_relevance":
                return self._reply(200, completion(json.dumps({"scores": [3] * (n_ctx - 1), "average": 3,
                                                               "reasoning": "x"})))
            if scenario == "count" and metric == "context_precision":
                return self._reply(200, completion(json.dumps({"useful": [True] * (n_ctx - 1), "reasoning": "x"})))
            if scenario == "refusal":
                return self._reply(200, completion(None, refusal="I can't assist with that."))
            if scenario == "text_refusal":
                return self._reply(200, completion("I'm sorry, I can't help with that."))
            if scenario == "not_json":
                return self._reply(200, b"<html>502 Bad Gateway</html>")
            if scenario == "r429_once" and seen == 1:
                return self._reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
            if scenario == "r500" or (scenario == "r500_once" and seen == 1):
                return self._reply(500, {"error": {"message": "boom"}})
            if scenario == "slow":
                time.sleep(stub.slow_seconds)
            if scenario == "key_in_reply":
                key = (self.headers.get("Authorization") or "").split()[-1]
                reply = good_reply(metric, n_ctx, "good", seen)
                reply["reasoning"] = f"(the client sent the key {key}) " + str(reply.get("reasoning", ""))
                return self._reply(200, completion(json.dumps(reply, ensure_ascii=False)))
            if scenario == "echo_key":
                return self._reply(400, {"error": {"message": f"bad header {self.headers.get('Authorization')}"}})
            if "response_format" not in body:
                return self._reply(200, completion(prose))
            return self._reply(200, completion(good))

    return Handler


def start_server(stub, handler_class):
    """Serve ``handler_class`` for ``stub`` (anything with ``base_url`` and a ``release`` event):
    ``(stub, shutdown)``; ``shutdown`` releases held requests first."""
    address, stop = serve(handler_class)
    stub.base_url = address + "/v1"

    def shutdown():
        stub.release.set()
        stop()

    return stub, shutdown


def start_stub():
    """(stub, shutdown) with ``stub.base_url`` set."""
    stub = Stub()
    return start_server(stub, make_handler(stub))


def kill_when_held(cmd, env, stub, *, wait: float = 300):
    """Run ``cmd``; when ``stub`` holds a request (``stub.arrived``, see ``block_after``) kill it with SIGKILL.
    Returns the process's return code (``-SIGKILL``)."""
    import signal
    import subprocess

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert stub.arrived.wait(wait), "the run never reached the held request"
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    return proc.returncode
