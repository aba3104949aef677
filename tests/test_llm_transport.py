"""The one HTTP transport and client: retry policy, failure kinds, any JSON POST (rerank-shaped),
chat completions and embeddings, against a scripted server on 127.0.0.1."""

from __future__ import annotations

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


@pytest.fixture
def server():
    script = Script()

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

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
