"""``-r http:URL``: a local search service (loopback) with good, slow, failing and malformed replies."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from test_grade_results import rank, recursive_split
from json_stub import json_server

import ragexam
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.errors import InputError
from ragexam.llm.transport import EndpointError
from ragexam.retrieval.http import HTTPRetriever
from ragexam.retrieval.spec import parse_retriever

SECRET = "tok-SEARCH-secret-0042"


class Search:
    """A search service over the helpdesk corpus split by a recursive splitter.

    Behaviour by question: ``fail`` ids get HTTP 500 every time, ``flaky`` ids get one 429 then an answer,
    ``slow`` ids sleep past the client's timeout, ``malformed`` ids get an object without a results list,
    ``notjson`` ids get a text body.  Counts requests per question and records the headers it saw."""

    def __init__(self):
        corpus = load_corpus("it_helpdesk")
        self.chunks = [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
                       for d in corpus for j, t in enumerate(recursive_split(d.content))]
        self.fail, self.flaky, self.slow, self.malformed, self.notjson = set(), set(), set(), set(), set()
        self.requests = {}
        self.auth = set()
        self.bodies = []
        self.lock = threading.Lock()
        self.shape = "results"

    def reply(self, body):
        q = body["q"]["text"]
        with self.lock:
            n = self.requests[q] = self.requests.get(q, 0) + 1
        if q in self.fail:
            return 500, {"error": {"message": "index shard down"}}
        if q in self.flaky and n == 1:
            return 429, {"error": "slow down"}
        if q in self.slow:
            time.sleep(2.5)  # past the 1 s deadline of the whole request
        if q in self.malformed:
            return 200, {"answer": "no list here"}
        if q in self.notjson:
            return 200, b"<html>proxy error</html>"
        hits = [{"page_content": c["text"], "metadata": {"doc_id": c["doc_id"], "id": c["id"]}, "score": round(s, 6)}
                for c, s in rank(q, self.chunks, body["limit"])]
        return 200, ({"data": {"hits": hits}} if self.shape == "results" else hits)


@pytest.fixture
def search():
    svc = Search()

    def handle(path, body, headers):
        with svc.lock:
            svc.auth.add(headers.get("Authorization"))
            svc.bodies.append(body)
        return svc.reply(body)

    svc.url, shutdown = json_server(handle)
    yield svc
    shutdown()


def spec(svc, path="/search", **extra):
    opts = {"query_field": "q.text", "top_k_field": "limit", "results_path": "data.hits",
            "text_field": "page_content", "doc_id_field": "metadata.doc_id", "id_field": "metadata.id",
            "timeout": "1", "max_retries": "1", "backoff": "0", "concurrency": "4", **extra}
    return f"http:{svc.url}{path}?" + "&".join(f"{k}={v}" for k, v in opts.items())


def test_service_is_graded_with_failures_counted_and_cached(search, tmp_path):
    qa = load_qa("it_helpdesk")
    qs = [q for q in qa if q.answerable]
    search.fail = {qs[0].question}
    search.flaky = {qs[1].question}
    search.slow = {qs[2].question}
    search.malformed = {qs[3].question}
    search.notjson = {qs[4].question}
    cache = tmp_path / "cache"
    res = ragexam.run(None, "it_helpdesk", [spec(search)], cache_dir=cache, progress=False,
                      headers={"Authorization": f"Bearer {SECRET}"}, n_resamples=100, n_permutations=100)
    name = res.pipelines[0].name
    assert name == spec(search) and res.pipelines[0].kind == "texts"  # named as written
    un = res.summary["results"][name]["unretrieved"]
    assert un["by_kind"] == {"bad_response": 1, "malformed": 1, "server_error": 1, "timeout": 1}
    reasons = {x["query_id"]: x["reason"] for x in un["questions"]}
    assert reasons[qs[0].query_id].startswith("server_error: HTTP 500 after 2 attempts: index shard down")
    assert reasons[qs[3].query_id].startswith("malformed: the reply has no 'data.hits'")
    assert qs[1].query_id not in reasons  # one 429, then an answer: retried
    rows = {r.query_id: r for r in res.per_question}
    for q in list(qs[:5]):
        assert rows[q.query_id].first_rank is None or q.query_id == qs[1].query_id
    # the good questions are graded exactly as the service ranked them
    first = {q.query_id: next((i for i, (c, _) in enumerate(rank(q.question, search.chunks, 100), 1)
                               if any(ev in c["text"] for ev in q.evidence)), None) for q in qs[5:]}
    assert all(rows[q].first_rank == r for q, r in first.items())
    assert rows[qs[5].query_id].top_ids[0] == rank(qs[5].question, search.chunks, 1)[0][0]["id"]
    assert search.bodies[0]["limit"] == 100  # top_k defaults to the run's depth
    assert search.auth == {f"Bearer {SECRET}"}
    lat = res.summary["results"][name]["latency"]
    assert lat["n"] == len(qa) - 4 and 0 < lat["median"] <= lat["p95"] <= lat["max"]
    # the key is nowhere in what ragexam writes
    out = res.save(tmp_path / "out")
    for f in list(out.rglob("*")) + list(cache.rglob("*")):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    # a second run sends requests only for the questions that failed
    before = dict(search.requests)
    search.fail, search.slow, search.malformed, search.notjson = set(), set(), set(), set()
    again = ragexam.run(None, "it_helpdesk", [spec(search)], cache_dir=cache, progress=False,
                        headers={"Authorization": f"Bearer {SECRET}"}, n_resamples=100, n_permutations=100)
    sent = {q: n - before.get(q, 0) for q, n in search.requests.items() if n != before.get(q, 0)}
    assert sorted(sent) == sorted(q.question for q in (qs[0], qs[2], qs[3], qs[4]))
    assert again.summary["results"][name]["unretrieved"]["n"] == 0
    con = sqlite3.connect(cache / "llm-cache.sqlite3")
    assert con.execute("select count(*) from results where kind='retrieve'").fetchone()[0] == len(qa)


def test_bare_url_auto_fields_and_top_k(search, tmp_path):
    search.shape = "list"
    r = parse_retriever(f"{search.url}/s?query_field=q.text&top_k_field=limit&top_k=3", cache=False,
                        progress=False)
    assert isinstance(r, HTTPRetriever) and r.spec == f"http:{search.url}/s"
    got = r.retrieve(["VPN 오류"], 10)
    assert len(got[0].items) == 3 and search.bodies[-1] == {"q": {"text": "VPN 오류"}, "limit": 3}
    it = got[0].items[0]
    # auto fields: page_content is the text, metadata.doc_id / metadata.id, score
    assert it.text == rank("VPN 오류", search.chunks, 1)[0][0]["text"] and it.doc_id and it.id and it.score
    assert "top_k:3" in r.signature and "results_path:auto" in r.signature


def test_credentials_in_a_url_never_name_a_pipeline(search, tmp_path):
    url = search.url.replace("http://", f"http://user:{SECRET}@")
    res = ragexam.run(None, "it_helpdesk", [f"http:{url}/search?query_field=q.text&top_k_field=limit&"
                                            "results_path=data.hits"], cache_dir=tmp_path, progress=False,
                      n_resamples=20, n_permutations=20)
    assert res.pipelines[0].name.startswith(f"http:{search.url}/search?")
    assert SECRET not in res.to_json()


def test_configuration_errors_stop(search):
    url, shutdown = json_server(lambda path, body, headers: (401, {"error": {"message": f"bad token {SECRET}"}}))
    try:
        r = HTTPRetriever(url + "/x", headers={"X-Api-Key": SECRET}, cache=False, progress=False)
        with pytest.raises(EndpointError) as err:
            r.retrieve(["q"], 5)
        assert "HTTP 401" in str(err.value) and SECRET not in str(err.value)
    finally:
        shutdown()


@pytest.mark.parametrize("bad, message", [
    ("http:ftp://x/y", "unknown retriever|http"),
    ("http:http://localhost:8000/s?timeout=0", "timeout"),
    ("http:http://localhost:8000/s?headers=x", "no option 'headers'"),
    ("hybrid:bm25+http:http://localhost/s", "cannot be a member of a hybrid"),
    ("http:http://localhost:8000/s?top_k=0", "top_k"),
])
def test_bad_specs(bad, message):
    with pytest.raises(InputError, match=message):
        parse_retriever(bad, cache=False)


# -- hostile services (issue 19) ---------------------------------------------------------------------------------
def test_a_hostile_reply_fails_its_question_only(search, tmp_path):
    """One question's reply nested 50,000 deep, one larger than max_response_bytes: those two questions fail with
    their reason (once: asking again fetches the same body), every other question is graded."""
    qs = [q for q in load_qa("it_helpdesk") if q.answerable]
    plain = search.reply
    hostile = {qs[0].question: b"[" * 50_000 + b"]" * 50_000,
               qs[1].question: {"data": {"hits": [{"page_content": "x" * 300_000}]}}}

    def reply(body):
        q = body["q"]["text"]
        if q not in hostile:
            return plain(body)
        with search.lock:
            search.requests[q] = search.requests.get(q, 0) + 1
        return 200, hostile[q]

    search.reply = reply
    res = ragexam.run(None, "it_helpdesk", [spec(search, max_response_bytes=131072)], cache_dir=tmp_path,
                      progress=False, n_resamples=20, n_permutations=20)
    un = res.summary["results"][res.pipelines[0].name]["unretrieved"]
    reasons = {x["query_id"]: x["reason"] for x in un["questions"]}
    assert un["n"] == 2 and un["by_kind"] == {"bad_response": 2}
    assert "nested deeper than 100 levels" in reasons[qs[0].query_id]
    assert "over the 128 KiB limit" in reasons[qs[1].query_id] and "max_response_bytes" in reasons[qs[1].query_id]
    assert search.requests[qs[0].question] == search.requests[qs[1].question] == 1, reasons  # not retried
    assert sum(1 for r in res.per_question if r.first_rank is not None) > 40  # the rest is graded


def test_a_trickling_service_stops_at_the_deadline():
    """`?timeout=0.5&max_retries=0` against a service sending a byte every 0.05 s: the question fails as a timeout
    after about 10 bytes (bounded on what the server got out, not on time)."""
    from test_llm_transport import Trickle
    from test_judge_stub import serve

    trickle = Trickle("body")
    url, shutdown = serve(trickle.handler())
    try:
        r = parse_retriever(f"http:{url}/search?timeout=0.5&max_retries=0", cache=False, progress=False)
        got = r.retrieve(["q"], 5)
        assert got[0].failure.startswith("timeout: ") and "within 0.5 s" in got[0].failure
        assert trickle.done.wait(30) and 0 < trickle.sent < 300
    finally:
        shutdown()


@pytest.mark.parametrize("headers", [{"X-A": "b\r\nX-Injected: 1"}, {"X-A": "b\nX-Injected: 1"},
                                     {"X A": "b"}, {"X-A:": "b"}])
def test_header_injection_is_refused_before_any_request(search, headers):
    with pytest.raises(InputError) as ei:
        parse_retriever(spec(search), headers=headers, cache=False, progress=False)
    assert "field 'headers'" in str(ei.value) and "Injected: 1" not in str(ei.value)
    with pytest.raises(InputError):
        parse_retriever(f"bm25>rerank:http:{search.url}/rerank", headers=headers, cache=False)
    with pytest.raises(InputError):
        ragexam.run(None, "it_helpdesk", [spec(search)], headers=headers, cache_dir=None, progress=False)
    assert search.bodies == []


def test_a_header_value_the_service_returns_in_a_text_is_redacted(search, tmp_path):
    """Texts a service returned are stored (chunks.jsonl), cached and shown: a header value in one is replaced."""
    plain = search.reply

    def leaky(body):
        status, reply = plain(body)
        for h in reply["data"]["hits"][:1]:
            h["page_content"] += f" (debug: Authorization was Bearer {SECRET})"
        return status, reply

    search.reply = leaky
    cache = tmp_path / "cache"
    res = ragexam.run(None, "it_helpdesk", [spec(search)], cache_dir=cache, progress=False,
                      headers={"Authorization": f"Bearer {SECRET}"}, n_resamples=20, n_permutations=20)
    out = res.save(tmp_path / "out")
    texts = (out / "chunks.jsonl").read_text(encoding="utf-8")
    assert "(debug: Authorization was [redacted])" in texts
    for f in list(out.rglob("*")) + list(cache.rglob("*")):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


@pytest.mark.parametrize("bad, message", [
    ("http:", "http needs the URL of your service: http:http://"),
    ("http:?timeout=2", "http needs the URL of your service"),
    ("https:", "http needs the URL of your service"),
    ("http:ftp://example.org/search", "the URL scheme 'ftp' is not supported; expected an http:// or https:// URL"),
    ("http:localhost:8000/search", "'localhost:8000/search' has no URL scheme; expected an http:// or https://"),
    ("bm25>rerank:http:", "rerank:http needs the URL of your service: rerank:http:http://"),
    ("bm25>rerank:http:ftp://x/rerank", "the URL scheme 'ftp' is not supported"),
    ("http:http://localhost:8000/s?max_response_bytes=10", "max_response_bytes"),
])
def test_what_is_wrong_with_a_service_url_is_said(bad, message):
    with pytest.raises(InputError) as ei:
        parse_retriever(bad, cache=False)
    assert message in str(ei.value) and "cannot be a member of a hybrid" not in str(ei.value)


def test_a_rerank_reply_nested_50000_deep_fails_that_question_only():
    from ragexam.retrieval.rerank.http import HTTPReranker

    def handle(path, body, headers):
        if body["query"] == "deep":
            return 200, b'{"results": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
        return 200, {"results": [{"index": i, "relevance_score": float(i)} for i in range(len(body["documents"]))]}

    url, shutdown = json_server(handle)
    try:
        rr = HTTPReranker(url + "/rerank", shape="cohere", cache=False, progress=False, max_retries=2, backoff=0)
        got = rr.rerank(["deep", "fine"], [["a", "b"], ["a", "b"]])
        assert got[0].scores is None and got[0].failure.startswith("bad_response: the response is nested deeper")
        assert got[1].scores == (0.0, 1.0) and got[1].failure is None
        assert rr.last_usage["requests"] == 2  # the deep one is not asked again
    finally:
        shutdown()


def test_retry_after_3600_costs_one_cut_wait_per_run_not_one_per_question():
    """Six questions against a service answering 429 with Retry-After: 3600: one wait cut to 30 s (said), then
    every question fails at once saying why (the waits are recorded, not slept)."""
    from ragexam.llm.transport import ServiceWarning
    from ragexam.retrieval.rerank.http import HTTPReranker

    from test_judge_stub import send_json, serve
    from test_llm_transport import Quiet

    class H(Quiet):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            send_json(self, 429, {"error": "quota"}, {"Retry-After": "3600"})

    url, shutdown = serve(H)
    slept = []
    try:
        r = HTTPRetriever(url + "/s", cache=False, progress=False, max_retries=2, concurrency=1, sleep=slept.append)
        with pytest.warns(ServiceWarning, match="asked to wait 3600 s"):
            got = r.retrieve([f"q{i}" for i in range(6)], 5)
        assert slept == [30.0] and r.last_usage.waits_cut == 1 and r.last_usage.requests == 2 + 5
        assert all(g.failure.startswith("rate_limited: HTTP 429") for g in got)
        assert all("asked to wait 3600 s (Retry-After)" in g.failure for g in got)
        rr = HTTPReranker(url + "/rerank", shape="cohere", cache=False, progress=False, sleep=slept.append)
        with pytest.warns(ServiceWarning):
            rr.rerank(["a", "b"], [["x", "y"], ["x", "y"]])
        assert rr.last_usage["waits_cut"] == 1 and rr.last_usage["failed"] == 2
    finally:
        shutdown()
