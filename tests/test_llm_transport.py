"""The one HTTP transport and client: retry policy, failure kinds, any JSON POST (rerank-shaped),
chat completions and embeddings, against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import random
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler

import pytest

from test_judge_stub import send_json, serve

from ragexam.llm.client import LLMClient
from ragexam.llm.transport import FAILURE_KINDS, CallFailed, EndpointError, HTTPTransport, RetryPolicy

SECRET = "sk-transport-SECRET-77aa"


class Script:
    """Replies to POSTs in order: each item is (status, body bytes or JSON, headers); the last repeats."""

    def __init__(self):
        self.replies = []
        self.bodies = []
        self.paths = []
        self.auth = []

    def set(self, *replies):
        self.replies = list(replies)


class Quiet(BaseHTTPRequestHandler):
    """HTTP/1.1, no access log."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass


@pytest.fixture
def server():
    script = Script()

    class H(Quiet):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            script.paths.append(self.path)
            script.auth.append(self.headers.get("Authorization"))
            status, body, headers = script.replies.pop(0) if len(script.replies) > 1 else script.replies[0]
            send_json(self, status, body, headers)

    script.url, shutdown = serve(H)
    yield script
    shutdown()


def transport(slept, **kw):
    from ragexam.llm.redact import Redactor

    return HTTPTransport(timeout=5, retry=RetryPolicy(kw.pop("max_retries", 2), 1.0, 8.0),
                         headers={"Authorization": f"Bearer {SECRET}"}, redactor=Redactor([SECRET]),
                         sleep=slept.append, **kw)


def test_delay_rules():
    p = RetryPolicy(max_retries=3, backoff=1.0, max_backoff=10.0)
    rng = random.Random(0)
    assert p.delay(0, {"retry-after-ms": "250"}, rng) == 0.25
    assert p.delay(0, {"retry-after": "3"}, rng) == 3.0
    assert p.delay(0, {"retry-after": "999"}, rng) == 10.0  # capped
    assert 0 <= p.delay(0, {"retry-after": formatdate(usegmt=True)}, rng) <= 1.0
    for attempt, d in ((0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (6, 10.0)):
        waits = [p.delay(attempt, None, rng) for _ in range(200)]
        assert all(d / 2 <= w <= d for w in waits) and max(waits) - min(waits) > d / 10  # jittered
    assert d / 2 <= p.delay(6, {"retry-after": "soon"}, rng) <= d  # unreadable header: backoff


@pytest.mark.parametrize("status, kind", [(429, "rate_limited"), (500, "server_error"), (503, "server_error"),
                                          (408, "timeout")])
def test_retryable_statuses_are_retried_then_fail_with_their_kind(server, status, kind):
    server.set((status, {"error": {"message": f"nope {SECRET}"}}, {}))
    slept = []
    with pytest.raises(CallFailed) as ei:
        transport(slept).post_json(server.url + "/x", {"a": 1})
    err = ei.value
    assert (err.kind, err.requests, err.status) == (kind, 3, status) and len(slept) == 2
    assert f"HTTP {status} after 3 attempts: nope [redacted]" == err.message and kind in FAILURE_KINDS


@pytest.mark.parametrize("status, kind", [(400, "bad_request"), (422, "bad_request"), (418, "http_error")])
def test_request_errors_fail_at_once(server, status, kind):
    server.set((status, {"detail": "bad field"}, {}))
    slept = []
    with pytest.raises(CallFailed) as ei:
        transport(slept).post_json(server.url + "/x", {})
    assert (ei.value.kind, ei.value.requests, ei.value.message) == (kind, 1, f"HTTP {status}: bad field")
    assert slept == []


@pytest.mark.parametrize("status", [401, 403, 404])
def test_configuration_errors_stop(server, status):
    server.set((status, {"error": f"Bearer {SECRET} refused"}, {}))
    t = transport([])
    with pytest.raises(EndpointError) as ei:
        t.post_json(server.url + "/v1/x?key=1", {}, what="for model 'm'", hints={401: "fix the key"})
    msg = str(ei.value)
    assert f"HTTP {status}" in msg and SECRET not in msg and "for model 'm'" in msg and "key=1" not in msg
    assert t.requests == 1 and (status != 401 or "fix the key" in msg)


def test_a_2xx_that_is_not_json_or_not_the_right_shape_is_retried(server):
    server.set((200, b"<html>502 Bad Gateway</html>", {}), (200, {"wrong": 1}, {}), (200, {"results": []}, {}))
    slept = []
    check = lambda body: None if "results" in body else "no results"  # noqa: E731
    body, n = transport(slept).post_json(server.url + "/rerank", {"q": 1}, check=check)
    assert body == {"results": []} and n == 3 and len(slept) == 2
    server.set((200, b"not json", {}))
    with pytest.raises(CallFailed) as ei:
        transport([], max_retries=0).post_json(server.url + "/rerank", {})
    assert ei.value.kind == "bad_response" and "not JSON" in ei.value.message


def test_retry_after_ms_is_honoured(server):
    server.set((429, {}, {"retry-after-ms": "10"}), (200, {"ok": True}, {}))
    slept = []
    assert transport(slept).post_json(server.url + "/x", {})[0] == {"ok": True}
    assert slept == [0.01]


def test_connection_refused_and_bad_scheme():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    slept = []
    with pytest.raises(CallFailed) as ei:
        transport(slept, max_retries=1).post_json(f"http://127.0.0.1:{port}/x", {})
    assert ei.value.kind == "connection_error" and ei.value.requests == 2 and len(slept) == 1
    with pytest.raises(EndpointError, match="scheme 'ftp'"):
        transport([]).post_json("ftp://127.0.0.1/x", {})


def test_client_posts_anywhere_under_its_base_url_with_its_key(server):
    """Room for rerank endpoints: the same client, key and retries for a Cohere/TEI-shaped /rerank."""
    server.set((503, {}, {"Retry-After": "0"}), (200, [{"index": 1, "score": 0.9}, {"index": 0, "score": 0.1}], {}))
    client = LLMClient("reranker", base_url=server.url + "/v1/", api_key=SECRET, sleep=lambda s: None)
    body, n = client.post_json("rerank", {"query": "q", "texts": ["a", "b"]},
                               check=lambda b: None if isinstance(b, list) else "not a list")
    assert body[0] == {"index": 1, "score": 0.9} and n == 2
    assert server.paths == ["/v1/rerank", "/v1/rerank"] and set(server.auth) == {f"Bearer {SECRET}"}
    assert client.url("http://other.invalid/rerank") == "http://other.invalid/rerank"


def test_chat_reply_fields_and_ladder(server):
    reply = {"model": "m-1", "choices": [{"finish_reason": "stop", "message": {"content": "{}", "refusal": None}}],
             "usage": {"prompt_tokens": 7, "completion_tokens": 2}}
    server.set((400, {"error": {"message": "response_format unsupported"}}, {}),
               (400, {"error": {"message": "maxItems unsupported"}}, {}),
               (422, {"error": {"message": "json_object unsupported"}}, {}), (200, reply, {}))
    client = LLMClient("m", base_url=server.url + "/v1", api_key=SECRET)
    r = client.complete([{"role": "user", "content": "hi"}], schema={"type": "object"}, max_tokens=5, seed=3)
    assert (r.content, r.finish_reason, r.prompt_tokens, r.completion_tokens, r.requests, r.model) == (
        "{}", "stop", 7, 2, 4, "m-1")
    assert r.response_format == "none" == client.response_format
    # without a schema a 400 is the request's own failure
    server.set((400, {"error": {"message": "too long"}}, {}))
    with pytest.raises(CallFailed) as ei:
        client.complete([{"role": "user", "content": "hi"}])
    assert ei.value.kind == "bad_request" and ei.value.requests == 1


def test_embeddings_in_index_order(server):
    server.set((200, {"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}],
                      "usage": {"prompt_tokens": 4}}, {}))
    client = LLMClient("e", base_url=server.url + "/v1", api_key=SECRET)
    r = client.embed(["a", "b"], dimensions=2)
    assert r.vectors == [[1.0, 0.0], [0.0, 1.0]] and r.prompt_tokens == 4 and r.requests == 1
    server.set((200, {"data": [{"index": 0, "embedding": "AAAA"}]}, {}))
    with pytest.raises(CallFailed) as ei:
        LLMClient("e", base_url=server.url + "/v1", api_key=SECRET, max_retries=0).embed(["a"])
    assert ei.value.kind == "bad_response" and "embedding list" in ei.value.message


# -- limits of every request (issue 19: deadline, size cap, depth, headers, Retry-After) --------------------------
class Trickle:
    """A server that sends its reply one byte at a time, ``gap`` seconds apart, and counts what it got out before
    the client hung up: the headers too (``where="headers"``) or only the body."""

    def __init__(self, where: str, gap: float = 0.05, size: int = 2000):
        self.where, self.gap, self.size, self.sent, self.done = where, gap, size, 0, None

    def handler(self):
        import threading
        import time

        trickle = self
        trickle.done = threading.Event()

        class H(Quiet):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = b'{"pad": "' + b"x" * trickle.size + b'"}'
                head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                        "X-Slow: " + "y" * trickle.size + "\r\n\r\n").encode()
                try:
                    if trickle.where == "body":
                        self.wfile.write(head)
                        self.wfile.flush()
                    for i in range(len(body) if trickle.where == "body" else len(head)):
                        data = body if trickle.where == "body" else head
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        trickle.sent += 1
                        time.sleep(trickle.gap)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    trickle.done.set()
                    self.close_connection = True

        return H


@pytest.mark.parametrize("where", ["headers", "body"])
def test_timeout_is_the_deadline_of_the_whole_request_not_of_each_read(where):
    """A server trickling a byte every 0.05 s never trips a per-read timeout of 0.5 s; the deadline stops the
    request after about 0.5 s, i.e. after about 10 of its 2,000+ bytes (bounded on bytes, not on time)."""
    trickle = Trickle(where)
    url, shutdown = serve(trickle.handler())
    try:
        t = HTTPTransport(timeout=0.5, retry=RetryPolicy(max_retries=0), sleep=lambda s: None)
        with pytest.raises(CallFailed) as ei:
            t.post_json(url + "/search", {"query": "q"})
        assert ei.value.kind == "timeout" and ei.value.requests == 1
        assert "within 0.5 s" in ei.value.message and "deadline" in ei.value.message
        assert trickle.done.wait(30)  # the server noticed the hang-up (a generous bound against hanging)
        assert 0 < trickle.sent < 300, trickle.sent  # a per-read timeout would have let all 2,000+ bytes through
    finally:
        shutdown()


def test_every_connection_pool_is_bound_to_the_deadline(monkeypatch):
    """Also the pools of proxies from the environment."""
    import httpx

    from ragexam.llm.transport import _bind_deadlines

    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    client = httpx.Client()
    try:
        assert _bind_deadlines(client) == 1 + len([m for m in client._mounts.values() if m is not None]) >= 2
        assert _bind_deadlines(client) == 0  # once only
    finally:
        client.close()


def _bomb(size: int, coding: str = "gzip") -> bytes:
    """``size`` bytes of a JSON list of zeros, compressed."""
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 31 if coding == "gzip" else 15)
    unit = b"0," * 65536
    parts = [z.compress(b"[")]
    left = size - 2
    while left > 0:
        chunk = unit[:min(left, len(unit))]
        parts.append(z.compress(chunk))
        left -= len(chunk)
    parts.append(z.compress(b"0]") + z.flush())
    return b"".join(parts)


def test_a_gzip_bomb_fails_at_the_size_cap_with_bounded_memory(server):
    """64 MiB of JSON in about 64 KiB of gzip; with a 1 MiB cap the reply fails at once (not retried) and the
    transport never holds much more than the cap."""
    import tracemalloc

    bomb = _bomb(64 << 20)
    assert len(bomb) < 200_000
    server.set((200, bomb, {"Content-Encoding": "gzip"}))
    t = HTTPTransport(timeout=30, retry=RetryPolicy(max_retries=3), sleep=lambda s: None,
                      max_response_bytes=1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(CallFailed) as ei:
            t.post_json(server.url + "/x", {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert ei.value.kind == "bad_response" and ei.value.requests == 1 and t.requests == 1
    assert "larger than 1 MiB" in ei.value.message and "gzip" in ei.value.message
    assert "max_response_bytes" in ei.value.message
    assert peak < 3 << 20, peak  # the cap plus one decompression step and read buffers, not 64 MiB


def test_content_length_over_the_cap_fails_before_the_body_is_read(server):
    server.set((200, b"[" + b"1," * 600_000 + b"1]", {}))
    t = HTTPTransport(timeout=30, retry=RetryPolicy(max_retries=2), sleep=lambda s: None,
                      max_response_bytes=1 << 20)
    with pytest.raises(CallFailed) as ei:
        t.post_json(server.url + "/x", {})
    assert ei.value.requests == 1 and "(Content-Length), over the 1 MiB limit" in ei.value.message
    assert HTTPTransport(max_response_bytes=2 << 20).post_json(server.url + "/x", {})[0][:2] == [1, 1]


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate", "gzip-2-members"])
def test_compressed_replies_are_read(server, coding):
    import gzip
    import zlib

    data = json.dumps({"results": ["가", "b"] * 1000}).encode()
    body = {"gzip": lambda: gzip.compress(data), "deflate": lambda: zlib.compress(data),
            "raw-deflate": lambda: zlib.compress(data)[2:-4],
            "gzip-2-members": lambda: gzip.compress(data[:100]) + gzip.compress(data[100:])}[coding]()
    server.set((200, body, {"Content-Encoding": coding.split("-")[0] if coding != "raw-deflate" else "deflate"}))
    got, n = HTTPTransport(max_response_bytes=1024 * 64).post_json(server.url + "/x", {})
    assert got == json.loads(data) and n == 1


def test_a_compression_ragexam_does_not_read_or_a_broken_one_is_a_bad_response(server):
    server.set((200, b"\x00\x01", {"Content-Encoding": "br"}))
    with pytest.raises(CallFailed, match="compressed as 'br'") as ei:
        HTTPTransport(retry=RetryPolicy(max_retries=2), sleep=lambda s: None).post_json(server.url + "/x", {})
    assert ei.value.kind == "bad_response" and ei.value.requests == 1
    server.set((200, b"not gzip at all", {"Content-Encoding": "gzip"}))
    with pytest.raises(CallFailed, match="cannot be decompressed") as ei:
        HTTPTransport(retry=RetryPolicy(max_retries=1), sleep=lambda s: None).post_json(server.url + "/x", {})
    assert ei.value.kind == "bad_response" and ei.value.requests == 2


def test_a_reply_nested_50000_deep_fails_that_request_with_a_reason(server):
    deep = b"[" * 50_000 + b"]" * 50_000
    server.set((200, deep, {}))
    t = HTTPTransport(retry=RetryPolicy(max_retries=2), sleep=lambda s: None)
    with pytest.raises(CallFailed) as ei:
        t.post_json(server.url + "/x", {})
    assert ei.value.kind == "bad_response" and ei.value.requests == 1
    assert "nested deeper than 100 levels" in ei.value.message
    server.set((500, b'{"error": ' * 50_000 + b"1" + b"}" * 50_000, {}))  # an error body too
    with pytest.raises(CallFailed) as ei:
        HTTPTransport(retry=RetryPolicy(max_retries=0)).post_json(server.url + "/x", {})
    assert ei.value.kind == "server_error"
    server.set((200, b"[" * 101 + b"]" * 101, {}), (200, b"[" * 100 + b"]" * 100, {}))
    with pytest.raises(CallFailed, match="deeper than 100"):
        t.post_json(server.url + "/x", {})
    assert t.post_json(server.url + "/x", {})[1] == 1  # 100 levels is fine


@pytest.mark.parametrize("name, value", [("X-A", "b\r\nX-Injected: 1"), ("X-A", "b\nc"), ("X-A", "b\rc"),
                                         ("X A", "b"), ("X-A:", "b"), ("", "b"), ("X-A", 3)])
def test_header_line_breaks_and_bad_names_are_refused_before_any_request(server, name, value):
    from ragexam.errors import InputError

    server.set((200, {"ok": 1}, {}))
    with pytest.raises(InputError) as ei:
        HTTPTransport(headers={name: value})
    assert "secret-ish" not in str(ei.value) and "field 'headers'" in str(ei.value)
    t = HTTPTransport()
    with pytest.raises(InputError):
        t.post_json(server.url + "/x", {}, headers={name: value})
    assert t.requests == 0 and server.paths == []
    if isinstance(value, str) and "\n" in value:
        assert "line break" in str(ei.value) and "Injected" not in str(ei.value)  # the value is not echoed


def test_a_cut_retry_after_is_said_and_all_cut_waits_are_bounded(server):
    """Retry-After: 3600 with max_backoff 2: the first wait is cut to 2 s (a ServiceWarning, the note in the
    message); the cut-wait budget (max_backoff) is then spent, so later requests asking for 3600 s fail at
    once instead of each waiting again."""
    from ragexam.llm.transport import ServiceWarning

    server.set((429, {"error": "slow down"}, {"Retry-After": "3600"}))
    slept = []
    t = HTTPTransport(retry=RetryPolicy(max_retries=3, backoff=0.1, max_backoff=2.0), sleep=slept.append)
    with pytest.warns(ServiceWarning, match=r"asked to wait 3600 s .*cut to 2 s"):
        with pytest.raises(CallFailed) as ei:
            t.post_json(server.url + "/x", {})
    assert slept == [2.0] and ei.value.requests == 2 and t.waits_cut == 1
    assert "the server asked to wait 3600 s (Retry-After)" in ei.value.message
    assert "cut_wait_budget" in ei.value.message and "not retried" in ei.value.message
    for _ in range(5):  # the next questions: no more waiting
        with pytest.raises(CallFailed) as ei:
            t.post_json(server.url + "/x", {})
        assert ei.value.requests == 1 and ei.value.kind == "rate_limited"
    assert slept == [2.0] and sum(slept) <= t.retry.cut_budget
    # waits the server asks within max_backoff are not cut and not counted
    server.set((503, {}, {"Retry-After": "1"}), (200, {"ok": 1}, {}))
    assert t.post_json(server.url + "/x", {})[0] == {"ok": 1} and slept[-1] == 1.0 and t.waits_cut == 1
    budget = HTTPTransport(retry=RetryPolicy(max_retries=9, max_backoff=2.0, cut_wait_budget=5.0), sleep=slept.append)
    server.set((429, {}, {"Retry-After": "3600"}))
    slept.clear()
    with pytest.warns(ServiceWarning):
        with pytest.raises(CallFailed):
            budget.post_json(server.url + "/x", {})
    assert slept == [2.0, 2.0, 1.0] and budget.cut_waited == 5.0


def test_an_llm_reply_nested_50000_deep_is_a_failure_of_that_call_not_a_crash(server):
    """The HTTP body of a chat completion, and the JSON a model writes in its message."""
    from ragexam.llm.replies import ReplyParseError, extract_json_object

    server.set((200, b'{"choices": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", {}))
    client = LLMClient("m", base_url=server.url + "/v1", api_key=SECRET, max_retries=2, sleep=lambda s: None)
    with pytest.raises(CallFailed) as ei:
        client.complete([{"role": "user", "content": "hi"}])
    assert ei.value.kind == "bad_response" and "nested deeper than 100 levels" in ei.value.message
    assert ei.value.requests == 1
    for text in ('{"score": ' + "[" * 50_000 + "]" * 50_000 + "}", "[" * 50_000 + "]" * 50_000):
        with pytest.raises(ReplyParseError, match="nested deeper than 100 levels"):
            extract_json_object(text)


def test_the_size_cap_is_settable_everywhere(server, monkeypatch):
    """An argument (LLMSettings.max_response_bytes, the service option), else $RAGEXAM_MAX_RESPONSE_BYTES, else
    32 MiB; a bad value names where it came from."""
    from ragexam.errors import InputError
    from ragexam.llm.settings import LLMSettings
    from ragexam.llm.transport import DEFAULT_MAX_RESPONSE_BYTES, MAX_RESPONSE_ENV

    assert HTTPTransport().max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 32 << 20
    monkeypatch.setenv(MAX_RESPONSE_ENV, "4096")
    assert HTTPTransport().max_response_bytes == 4096
    assert HTTPTransport(max_response_bytes=8192).max_response_bytes == 8192
    reply = {"model": "m", "choices": [{"finish_reason": "stop", "message": {"content": "x" * 5000}}]}
    server.set((200, reply, {}))
    with pytest.raises(CallFailed, match=r"over the 4 KiB limit \(max_response_bytes\)"):
        LLMClient("m", base_url=server.url + "/v1", api_key=SECRET).complete([{"role": "user", "content": "hi"}])
    got = LLMClient(LLMSettings("m", base_url=server.url + "/v1", api_key=SECRET, max_response_bytes=1 << 20))
    assert got.complete([{"role": "user", "content": "hi"}]).content == "x" * 5000
    monkeypatch.setenv(MAX_RESPONSE_ENV, "lots")
    with pytest.raises(InputError, match="RAGEXAM_MAX_RESPONSE_BYTES.*'lots'"):
        HTTPTransport()
    with pytest.raises(InputError, match="LLMSettings: field 'max_response_bytes': received 10"):
        LLMSettings("m", max_response_bytes=10)  # in Python, the keyword; on the command line, the flag
    from ragexam.errors import speaking_to

    with speaking_to("cli"), pytest.raises(InputError, match="--max-response-bytes: field 'max_response_bytes'"):
        LLMSettings("m", max_response_bytes=10)


def test_a_reply_holding_a_lone_surrogate_is_refused_before_anything_stores_it(server):
    """A model writing "\\ud800" (half of a UTF-16 pair) used to crash whatever wrote its reply to a file."""
    server.set((200, b'{"choices": [{"finish_reason": "stop", "message": {"content": "ok \\ud800"}}]}', {}))
    client = LLMClient("m", base_url=server.url + "/v1", api_key=SECRET, max_retries=2, sleep=lambda s: None)
    with pytest.raises(CallFailed) as ei:
        client.complete([{"role": "user", "content": "hi"}])
    assert ei.value.kind == "bad_response" and ei.value.requests == 1
    assert "choices[0].message.content holds \\ud800 at character 4" in ei.value.message
    server.set((200, b'{"choices": [{"finish_reason": "stop", "message": {"content": "ok \\ud83d\\ude00"}}]}', {}))
    assert client.complete([{"role": "user", "content": "hi"}]).content == "ok \U0001F600"  # a pair is text
