"""OpenAI-compatible embedder against a local stub server (through ragexam.llm, real HTTP)."""

from __future__ import annotations

import base64
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest

from test_judge_stub import send_json, serve

from ragexam.errors import InputError, RagexamError
from ragexam.retrieval.dense import DenseRetriever
from ragexam.retrieval.embedders import OpenAIEmbedder
from ragexam.retrieval.spec import parse_retriever

API_KEY = "sk-test-DO-NOT-LEAK-4b1d"
DIM = 24


def embed_text(text: str) -> list[float]:
    """Bag of characters: texts sharing characters get similar vectors."""
    v = [0.0] * DIM
    for ch in text:
        v[ord(ch) % DIM] += 1.0
    return v


class Stub:
    def __init__(self):
        self.requests: list[dict] = []
        self.auth: list[str | None] = []
        self.fail_first: list[tuple[int, dict]] = []  # (status, headers) to answer before succeeding


@pytest.fixture
def server():
    stub = Stub()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _reply(self, status, body, headers=None):
            send_json(self, status, body, headers)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.auth.append(self.headers.get("Authorization"))
            stub.requests.append(body)
            if self.path != "/v1/embeddings":
                return self._reply(404, {"error": {"message": "not found"}})
            if stub.fail_first:
                status, headers = stub.fail_first.pop(0)
                return self._reply(status, {"error": {"message": f"stub says {status}", "type": "x"}}, headers)
            inputs = body["input"]
            if any(not t for t in inputs):
                return self._reply(400, {"error": {"message": "empty input"}})
            data = []
            for i, t in enumerate(inputs):
                vec = embed_text(t)
                if body.get("encoding_format") == "base64":
                    vec = base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode()
                data.append({"object": "embedding", "index": i, "embedding": vec})
            data.reverse()  # servers may answer out of order; 'index' says where each goes
            self._reply(200, {"object": "list", "data": data, "model": body["model"],
                              "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    address, shutdown = serve(Handler)
    stub.base_url = address + "/v1"
    yield stub
    shutdown()


def no_sleep(_seconds):
    pass


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


def test_retrieval_through_local_endpoint_and_key_never_written(server, tmp_path):
    emb = OpenAIEmbedder("stub-embed", base_url=server.base_url, api_key=API_KEY, batch_size=2)
    r = DenseRetriever(emb, cache_dir=tmp_path)
    texts = ["apple banana", "zebra yak", "kiwi lemon", "car bus", "계정 잠금"]
    r.index([f"c{i}" for i in range(5)], texts)
    hits = r.search(["zebra yak", "계정 잠금"], top_n=2)
    assert hits[0][0][0] == "c1" and hits[1][0][0] == "c4"
    assert hits[0][0][1] == pytest.approx(1.0, abs=1e-6)
    # batching: 5 passages in batches of 2 -> 3 requests, then 1 for the 2 queries
    assert [len(b["input"]) for b in server.requests] == [2, 2, 1, 2]
    assert all(b["model"] == "stub-embed" for b in server.requests)
    assert set(server.auth) == {f"Bearer {API_KEY}"}
    assert emb.dim == DIM
    # the key is nowhere on disk or in what ragexam reports
    files = files_under(tmp_path)
    assert files
    for f in files:
        assert API_KEY.encode() not in f.read_bytes(), f
    for text in (r.spec, r.signature, repr(emb), emb.identity):
        assert API_KEY not in text
    assert r.signature.startswith(f"dense:openai:stub-embed|endpoint:{server.base_url}|dim:native|")

    # a second run is served from the cache: no request
    before = len(server.requests)
    emb2 = OpenAIEmbedder("stub-embed", base_url=server.base_url, api_key=API_KEY)
    DenseRetriever(emb2, cache_dir=tmp_path).index([f"c{i}" for i in range(5)], texts).search(["zebra yak"], 1)
    assert len(server.requests) == before


def test_429_then_success_retries_with_retry_after(server, tmp_path):
    server.fail_first = [(429, {"Retry-After": "0"}), (503, {})]
    slept = []
    emb = OpenAIEmbedder("stub-embed", base_url=server.base_url, api_key=API_KEY, backoff=0.25,
                         sleep=slept.append)
    vecs = emb.embed_passages(["hello", "world"])
    assert vecs.shape == (2, DIM)
    np.testing.assert_allclose(vecs[0], embed_text("hello"))
    assert emb.requests == 3
    # Retry-After honoured, then the layer's backoff with jitter: d = backoff * 2**1, wait in [d/2, d]
    assert slept[0] == 0.0 and len(slept) == 2 and 0.25 <= slept[1] <= 0.5


def test_retries_exhausted_and_client_errors_fail_clearly(server):
    server.fail_first = [(500, {})] * 3
    emb = OpenAIEmbedder("stub-embed", base_url=server.base_url, api_key=API_KEY, max_retries=2,
                         sleep=no_sleep)
    with pytest.raises(RagexamError, match="failed: HTTP 500 after 3 attempts: stub says 500") as err:
        emb.embed_queries(["x"])
    assert API_KEY not in str(err.value)
    server.fail_first = [(401, {})]
    emb = OpenAIEmbedder("stub-embed", base_url=server.base_url, api_key=API_KEY, sleep=no_sleep)
    with pytest.raises(RagexamError, match="HTTP 401.*OPENAI_API_KEY") as err:
        emb.embed_queries(["x"])
    assert emb.requests == 1 and API_KEY not in str(err.value)


def test_empty_texts_are_not_sent_and_get_zero_vectors(server):
    emb = OpenAIEmbedder("stub-embed", base_url=server.base_url, api_key=API_KEY)
    vecs = emb.embed_queries(["", "abc", "  "])
    assert [b["input"] for b in server.requests] == [["abc"]]
    assert not vecs[0].any() and not vecs[2].any() and vecs[1].any()


def test_env_vars_and_spec(server, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    r = parse_retriever("dense:openai:stub-embed?dimensions=24", cache_dir=tmp_path, progress=False)
    assert r.spec == "dense:openai:stub-embed?dimensions=24"
    r.index(["a", "b"], ["abc", "xyz"])
    assert server.requests[0]["dimensions"] == 24
    assert server.auth[0] == f"Bearer {API_KEY}"
    assert r.search(["xyz"], 1)[0][0][0] == "b"


def test_missing_key_for_the_openai_api_is_an_input_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        OpenAIEmbedder("text-embedding-3-small")
    # a local server needs no key
    assert OpenAIEmbedder("m", base_url="http://127.0.0.1:9/v1").endpoint == "http://127.0.0.1:9/v1"


def test_credentials_in_base_url_stay_out_of_identity():
    emb = OpenAIEmbedder("m", base_url="https://user:secret@example.invalid:8443/v1/?token=abc", api_key="k")
    assert emb.identity == "openai:https://example.invalid:8443/v1:m:dim=native"
    assert "secret" not in repr(emb) and "token" not in emb.identity
