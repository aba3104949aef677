"""Rerankers as a pipeline stage: loopback rerank servers in both HTTP shapes (good, slow, 429/500, malformed,
wrong indexes), an LLM stub, the offline dense reranker, the st loader; the lift, the fixed and broken
questions and the first stage's recall ceiling in the summary, tables and report."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import types

import pytest

from json_stub import json_server
from test_judge_stub import completion

import ragexam
from ragexam.data.loaders import load_qa
from ragexam.data.normalization import normalize
from ragexam.errors import InputError
from ragexam.retrieval.rerank.base import RerankResult, rerank_order
from ragexam.retrieval.spec import parse_retriever

QA = load_qa("it_helpdesk")
EVIDENCE = {q.question: [normalize(e) for e in q.evidence] for q in QA}
OPTS = dict(progress=False, n_resamples=200, n_permutations=200, k=[1, 3, 5, 10])


def relevant(question: str, text: str) -> bool:
    """The oracle: the text contains an evidence string of the question (after normalization)."""
    nt = normalize(text)
    return any(e in nt for e in EVIDENCE.get(question, []))


class RerankServer:
    """Cohere/Jina/vLLM (``/cohere``) and TEI (``/tei``: 422 for a body without ``texts``) rerank endpoints
    that score by evidence containment.  ``faults[question] = kind``: ``r500`` (always), ``r429`` (once),
    ``slow``, ``malformed``, ``wrong_index``, ``dup_index``, ``partial`` (leaves the last candidate out)."""

    def __init__(self):
        self.faults = {}
        self.requests = []
        self.seen = {}
        self.lock = threading.Lock()

    def handle(self, path, body):
        with self.lock:
            self.requests.append((path, body))
        q = body.get("query")
        if path == "/tei" and "texts" not in body:
            return 422, {"error": "missing field `texts`"}
        texts = body.get("texts") if path == "/tei" else body.get("documents")
        with self.lock:
            self.seen[q] = self.seen.get(q, 0) + 1
            n = self.seen[q]
        fault = self.faults.get(q)
        if fault == "r500":
            return 500, {"error": {"message": "reranker crashed"}}
        if fault == "r429" and n == 1:
            return 429, {"error": "slow down"}
        if fault == "slow":
            time.sleep(0.6)
        scores = [(i, 1.0 if relevant(q, t) else 0.0) for i, t in enumerate(texts)]
        if fault == "wrong_index":
            scores[0] = (len(texts) + 3, 1.0)
        if fault == "dup_index":
            scores[1] = (0, 0.5)
        if fault == "partial":
            scores = scores[:-1]
        if fault == "malformed":
            return 200, {"ranking": "oops"}
        if path == "/tei":
            return 200, [{"index": i, "score": s} for i, s in scores]
        return 200, {"id": "r", "results": [{"index": i, "relevance_score": s} for i, s in scores]}


@pytest.fixture
def rerank_server():
    srv = RerankServer()
    srv.url, shutdown = json_server(lambda path, body, headers: srv.handle(path, body))
    yield srv
    shutdown()


def block(res, name):
    return res.summary["rerank"][name]


@pytest.mark.parametrize("path", ["/cohere", "/tei"])
def test_oracle_lifts_hit1_to_the_first_stage_ceiling(rerank_server, tmp_path, path):
    spec = f"bm25>rerank:http:{rerank_server.url}{path}?timeout=5&backoff=0"
    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25", spec], cache_dir=tmp_path,
                      **dict(OPTS, n_permutations=5000))
    name = f"{spec} | paragraphs:400"
    b = block(res, name)
    m = res.summary["results"][name]["metrics"]
    assert b["status"]["reranked"] == 71 and b["status"]["failed"] == 0
    # the oracle puts every candidate holding evidence first: hit@1 becomes the first stage's recall@top
    assert m["hit@1"] == pytest.approx(b["ceiling"]["recall_at_top"])
    assert b["ceiling"]["recall_at_top"] > b["first_stage_metrics"]["hit@1"]
    # and it cannot find what the first stage never returned in its top 20
    assert b["ceiling"]["misses"] == b["ceiling"]["misses_outside"] and b["ceiling"]["misses_inside"] == 0
    assert b["first_stage_metrics"] == res.summary["results"]["bm25 | paragraphs:400"]["metrics"]
    lift = {c["metric"]: c for c in b["comparisons"]}
    assert lift["hit@1"]["diff"] == pytest.approx(m["hit@1"] - b["first_stage_metrics"]["hit@1"])
    assert lift["hit@1"]["reading"] == "better" and lift["hit@1"]["p_holm"] < 0.05
    assert b["fixed"] and not b["broken"]
    assert set(b["by_type"]) == {"lexical", "meaning"}
    assert "shape:" + ("tei" if path == "/tei" else "cohere") in b["reranker_signature"]
    assert res.pipelines[1].signature.startswith("bm25:kiwi|") and ">>rerank:http:" in res.pipelines[1].signature
    # a second run makes no calls
    before = len(rerank_server.requests)
    again = ragexam.run("it_helpdesk", "it_helpdesk", [spec], cache_dir=tmp_path, **OPTS)
    assert len(rerank_server.requests) == before
    assert again.summary["results"][name]["metrics"] == m
    assert block(again, name)["usage"]["cached"] == 71 and block(again, name)["usage"]["calls"] == 0


def test_faults_are_counted_and_keep_the_first_stage_order(rerank_server, tmp_path):
    qs = [q for q in QA if q.answerable]
    kinds = ["r500", "r429", "slow", "malformed", "wrong_index", "dup_index", "partial"]
    faults = {qs[i].question: k for i, k in enumerate(kinds)}
    rerank_server.faults = faults
    spec = f"bm25>rerank:http:{rerank_server.url}/cohere?timeout=0.3&max_retries=1&backoff=0"
    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25", spec], cache_dir=tmp_path, **OPTS)
    name = f"{spec} | paragraphs:400"
    st = block(res, name)["status"]
    assert st["failed"] == 5 and st["partial"] == 1 and st["reranked"] == 71 - 6
    reasons = {x["query_id"]: x["reason"] for x in st["questions"]}
    assert reasons[qs[0].query_id].startswith("server_error: HTTP 500 after 2 attempts")
    assert reasons[qs[2].query_id].startswith("timeout")
    assert reasons[qs[3].query_id].startswith("malformed: the reply has no 'results' list")
    assert "outside the" in reasons[qs[4].query_id] and "given twice" in reasons[qs[5].query_id]
    assert qs[1].query_id not in reasons  # one 429, then reranked
    assert st["by_kind"] == {"malformed": 2 + 1, "server_error": 1, "timeout": 1}
    assert st["unjudged_candidates"] == 5 * 20 + 1
    # a failed question keeps the first stage's ranking exactly: never silently reordered
    first = {r.query_id: r for r in res.per_question if r.pipeline == "bm25 | paragraphs:400"}
    after = {r.query_id: r for r in res.per_question if r.pipeline == name}
    for i in (0, 2, 3, 4, 5):
        assert after[qs[i].query_id].top_ids == first[qs[i].query_id].top_ids
    # the partial one: the candidate the reply left out keeps its position (20th), the rest are reordered
    part = qs[6].query_id
    rankings = res.rankings[name][part]
    assert [c for c, _ in rankings][19] == [c for c, _ in res.rankings["bm25 | paragraphs:400"][part]][19]


def test_rerank_order_rule():
    assert rerank_order(4, RerankResult((0.1, 0.9, None, 0.5))) == ([1, 3, 2, 0], "partial")
    assert rerank_order(3, RerankResult((1.0, 1.0, 2.0))) == ([2, 0, 1], "reranked")  # ties: first-stage order
    assert rerank_order(3, RerankResult(None, "timeout: x")) == ([0, 1, 2], "failed")
    assert rerank_order(2, RerankResult((None, None))) == ([0, 1], "failed")


# -- the LLM reranker through an OpenAI-compatible stub ---------------------------------------------


class ChatStub:
    """Chat completions that rerank by evidence containment: listwise (``{"ranking": [...]}``) or pointwise
    (``{"relevance": g}``).  ``bad`` questions get prose; ``dup`` questions a ranking with a repeated number."""

    def __init__(self):
        self.requests = 0
        self.bad, self.dup = set(), set()
        self.lock = threading.Lock()

    def reply(self, body):
        with self.lock:
            self.requests += 1
        user = body["messages"][-1]["content"]
        question = re.search(r"Question: (.*?)\n\n", user, re.S).group(1)
        if question in self.bad:
            return completion("I think passage two is best.")
        if "Passages:" in user:
            passages = re.findall(r"^\[(\d+)\] (.*?)(?=\n\n\[\d+\] |\n\nRanking)", user, re.S | re.M)
            good = [int(i) for i, t in passages if relevant(question, t)]
            rest = [int(i) for i, t in passages if not relevant(question, t)]
            ranking = good + rest
            if question in self.dup:
                ranking = [1, 1]
            return completion(json.dumps({"ranking": ranking}))
        passage = re.search(r"Passage: (.*?)\n\nGrade", user, re.S).group(1)
        return completion(json.dumps({"relevance": 3 if relevant(question, passage) else 0}))


@pytest.fixture
def chat():
    stub = ChatStub()
    url, shutdown = json_server(lambda path, body, headers: (200, stub.reply(body)))
    stub.base_url = url + "/v1"
    yield stub
    shutdown()


@pytest.mark.parametrize("mode", ["listwise", "pointwise"])
def test_llm_reranker_oracle_and_faults(chat, tmp_path, mode):
    from ragexam.llm.settings import LLMSettings

    qs = [q for q in QA if q.answerable]
    chat.bad = {qs[0].question}
    chat.dup = {qs[1].question}
    settings = LLMSettings("stub-model", base_url=chat.base_url, api_key="sk-rerank-test-000000", max_retries=0,
                           cache_dir=tmp_path, concurrency=4, price=(1.0, 2.0))
    spec = f"bm25>rerank:llm:stub-model?mode={mode}&top=10"
    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25", spec], llm=settings, cache_dir=tmp_path, **OPTS)
    name = f"{spec} | paragraphs:400"
    b = block(res, name)
    st = b["status"]
    if mode == "listwise":
        assert st["failed"] == 2 and {x["query_id"] for x in st["questions"]} == {qs[0].query_id, qs[1].query_id}
        assert all(x["reason"].startswith("invalid_reply") for x in st["questions"])
        assert b["usage"]["calls"] == 71 and b["usage"]["prompt_tokens"] == 71 * 100
    else:
        assert st["failed"] == 1 and st["questions"][0]["query_id"] == qs[0].query_id
        assert b["usage"]["calls"] == 71 * 10
    assert b["usage"]["cost_usd"] == pytest.approx(b["usage"]["prompt_tokens"] * 1e-6
                                                   + b["usage"]["completion_tokens"] * 2e-6)
    # the oracle puts a candidate holding evidence first when bm25 had one in its top 10; a failed question
    # keeps bm25's order
    failed = {x["query_id"] for x in st["questions"]}
    bm25 = {r.query_id: r.first_rank for r in res.per_question if r.pipeline == "bm25 | paragraphs:400"}
    expect = sum(1 for q in qs if q.query_id not in failed and bm25[q.query_id] is not None and bm25[q.query_id] <= 10)
    expect += sum(1 for q in qs if q.query_id in failed and bm25[q.query_id] == 1)
    assert res.summary["results"][name]["metrics"]["hit@1"] * len(qs) == pytest.approx(expect)
    assert b["ceiling"]["n_within"] == sum(1 for q in qs if bm25[q.query_id] is not None and bm25[q.query_id] <= 10)
    assert "|mode:" + mode in res.pipelines[1].signature
    assert b["latency"]["n"] == 71 - st["failed"]
    before = chat.requests
    ragexam.run("it_helpdesk", "it_helpdesk", [spec], llm=settings, cache_dir=tmp_path, **OPTS)
    assert chat.requests - before == (2 if mode == "listwise" else 10)  # only the failed calls again


def test_spec_errors():
    with pytest.raises(InputError, match="needs a first stage"):
        parse_retriever("rerank:dense")
    with pytest.raises(InputError, match="unknown reranker"):
        parse_retriever("bm25>rerank:magic")
    with pytest.raises(InputError, match="top=0"):
        parse_retriever("bm25>rerank:dense?top=0")
    with pytest.raises(InputError, match="'api_key' is not allowed"):
        parse_retriever("bm25>rerank:llm:m?api_key=sk-123")
    with pytest.raises(InputError, match="empty stage"):
        parse_retriever("bm25>")
    with pytest.raises(InputError, match="shape"):
        parse_retriever("bm25>rerank:http:http://h/rerank?shape=xml")
    r = parse_retriever("bm25>rerank:llm:qwen2.5:7b?mode=pointwise&top=5")
    assert r.spec == "bm25:kiwi>rerank:llm:qwen2.5:7b?mode=pointwise&top=5" and r.top == 5


def test_offline_dense_rerank_and_report(tmp_path):
    from rich.console import Console

    from ragexam.report.console_run import render_run
    from ragexam.report.html import render_report

    res = ragexam.run("it_helpdesk", "it_helpdesk", ["bm25", "bm25>rerank:dense"], **OPTS)
    name = "bm25>rerank:dense | paragraphs:400"
    b = block(res, name)
    assert b["status"]["reranked"] == 71 and b["top"] == 20
    assert b["first_stage"] == "bm25:kiwi | paragraphs:400"
    console = Console(record=True, width=160)
    render_run(res.summary, console)
    text = console.export_text()
    assert "Rerank stage" in text and "recall ceiling" in text and "fixed" in text
    html = render_report(res.summary, [r.to_dict() for r in res.per_question])
    assert "Rerank stage" in html and "first stage recall@20" in html
    folder = res.save(tmp_path / "run")
    from ragexam.storage.runfolder import read_run_folder

    assert read_run_folder(folder).summary["rerank"][name]["ceiling"] == b["ceiling"]


def test_rerank_a_results_file_and_a_service(rerank_server, tmp_path):
    import test_grade_results as G

    corpus, qa, chunks = G.load_corpus("it_helpdesk"), G.load_qa("it_helpdesk"), None
    chunks = [{"text": t, "doc_id": d.doc_id, "id": f"{d.doc_id}/{j}"}
              for d in corpus for j, t in enumerate(G.recursive_split(d.content))]
    path = G.write_results(tmp_path / "mine.jsonl", qa, chunks, "mine", shuffle_seed=3)
    res = ragexam.grade("it_helpdesk", [path, f"{path}>rerank:http:{rerank_server.url}/tei"], cache_dir=tmp_path,
                        **OPTS)
    assert [p.name for p in res.pipelines] == ["mine", f"mine>rerank:http:{rerank_server.url}/tei"]
    b = block(res, res.pipelines[1].name)
    assert b["first_stage_metrics"] == res.summary["results"]["mine"]["metrics"]
    assert res.summary["results"][res.pipelines[1].name]["metrics"]["hit@1"] == pytest.approx(
        b["ceiling"]["recall_at_top"])
    assert b["ceiling"]["top"] == 20 and res.pipelines[1].kind == "texts"


def test_cross_encoder_loading_code_with_a_stand_in_library(tmp_path, monkeypatch):
    """``rerank:st`` builds ``sentence_transformers.CrossEncoder(model, device=, max_length=)`` and calls
    ``predict(pairs, batch_size=)``.  No cross-encoder ships inside a wheel and nothing may be downloaded, so
    the library is replaced by a stand-in that records the calls and scores by evidence containment."""
    calls = {"init": [], "predict": 0}

    class CrossEncoder:
        def __init__(self, model, **kw):
            calls["init"].append((model, kw))

        def predict(self, pairs, batch_size=32, show_progress_bar=False):
            calls["predict"] += 1
            return [1.0 if relevant(q, t) else 0.0 for q, t in pairs]

    monkeypatch.setitem(sys.modules, "sentence_transformers", types.SimpleNamespace(CrossEncoder=CrossEncoder))
    spec = "bm25>rerank:st:/models/tiny-ce?device=cpu&max_length=256"
    res = ragexam.run("it_helpdesk", "it_helpdesk", [spec], cache_dir=tmp_path, **OPTS)
    assert calls["init"] == [("/models/tiny-ce", {"device": "cpu", "max_length": 256})]
    assert calls["predict"] == 71
    name = f"{spec} | paragraphs:400"
    b = block(res, name)
    assert res.summary["results"][name]["metrics"]["hit@1"] == pytest.approx(b["ceiling"]["recall_at_top"])
    ragexam.run("it_helpdesk", "it_helpdesk", [spec], cache_dir=tmp_path, **OPTS)
    assert calls["predict"] == 71 and len(calls["init"]) == 1  # cached: the model is not even loaded again
