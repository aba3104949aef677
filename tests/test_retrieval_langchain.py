"""LangChain adapter: duck-typed fakes always; a real langchain_core retriever when installed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ragexam.errors import InputError
from ragexam.retrieval.fusion import HybridRetriever
from ragexam.retrieval.langchain_adapter import LangChainRetriever

IDS = ["c1", "c2", "c3", "c4"]
TEXTS = ["앱 설치 방법", "계정 잠금 해제", "VPN 접속 오류", "앱 설치 방법"]  # c1 and c4 share a text


@dataclass
class Doc:
    page_content: str
    metadata: dict = field(default_factory=dict)


class FakeRetriever:
    """Like a LangChain retriever: invoke(query) -> list of documents."""

    def __init__(self, docs):
        self.docs = docs

    def invoke(self, query):
        return [d for d in self.docs if any(w in d.page_content for w in query.split())]


class FakeStore:
    """Like a LangChain vector store: similarity_search_with_score(query, k)."""

    def __init__(self, results):
        self.results = results
        self.k_seen = []

    def similarity_search_with_score(self, query, k=4):
        self.k_seen.append(k)
        return self.results[:k]


def test_retriever_by_text_match_with_duplicate_texts():
    docs = [Doc("앱 설치 방법"), Doc("앱 설치 방법"), Doc("VPN 접속 오류")]
    r = LangChainRetriever(FakeRetriever(docs)).index(IDS, TEXTS)
    hits = r.search(["앱", "VPN", "없음"], top_n=5)
    assert hits[0] == [("c1", 1.0), ("c4", 0.5)]  # duplicates map to distinct ids, by id order
    assert hits[1] == [("c3", 1.0)]
    assert hits[2] == []
    assert r.spec == "langchain:FakeRetriever"
    assert r.signature == "langchain:FakeRetriever|kind:retriever|score:1/rank|match:text"


def test_retriever_by_metadata_key_and_top_n():
    docs = [Doc("x", {"chunk_id": "c3"}), Doc("y", {"chunk_id": "c2"}), Doc("z", {"chunk_id": "c1"})]
    r = LangChainRetriever(FakeRetriever(docs), id_key="chunk_id", name="my-rag").index(IDS, TEXTS)
    assert r.search(["x y z"], top_n=2) == [[("c3", 1.0), ("c2", 0.5)]]
    assert r.spec == "langchain:my-rag"


def test_metadata_errors_are_input_errors():
    r = LangChainRetriever(FakeRetriever([Doc("x", {"other": 1})]), id_key="chunk_id").index(IDS, TEXTS)
    with pytest.raises(InputError, match="no metadata key 'chunk_id'.*other"):
        r.search(["x"], 3)
    r = LangChainRetriever(FakeRetriever([Doc("x", {"chunk_id": "c99"})]), id_key="chunk_id").index(IDS, TEXTS)
    with pytest.raises(InputError, match="'c99', which is not a chunk id"):
        r.search(["x"], 3)
    r = LangChainRetriever(FakeRetriever([Doc("전혀 다른 텍스트")])).index(IDS, TEXTS)
    with pytest.raises(InputError, match="matches no indexed chunk"):
        r.search(["전혀"], 3)


def test_vector_store_similarity_and_distance():
    sims = [(Doc("계정 잠금 해제"), 0.9), (Doc("VPN 접속 오류"), 0.4), (Doc("앱 설치 방법"), 0.4)]
    store = FakeStore(sims)
    r = LangChainRetriever(store).index(IDS, TEXTS)
    assert r.search(["q"], top_n=3) == [[("c2", 0.9), ("c1", 0.4), ("c3", 0.4)]]  # tie -> by id
    assert store.k_seen == [3]
    dists = [(Doc("계정 잠금 해제"), 0.1), (Doc("VPN 접속 오류"), 0.7)]
    r = LangChainRetriever(FakeStore(dists), scores="distance").index(IDS, TEXTS)
    assert r.search(["q"], 5) == [[("c2", -0.1), ("c3", -0.7)]]
    assert "score:distance" in r.signature


def test_distances_taken_for_similarities_are_caught():
    dists = [(Doc("계정 잠금 해제"), 0.1), (Doc("VPN 접속 오류"), 0.7)]
    r = LangChainRetriever(FakeStore(dists)).index(IDS, TEXTS)
    with pytest.raises(InputError, match="scores='distance'"):
        r.search(["q"], 5)


def test_not_a_langchain_object():
    with pytest.raises(InputError, match="neither invoke"):
        LangChainRetriever(object())
    with pytest.raises(InputError, match="scores must be"):
        LangChainRetriever(FakeStore([]), scores="cosine")


def test_adapter_fuses_with_other_retrievers():
    a = LangChainRetriever(FakeRetriever([Doc("앱 설치 방법"), Doc("VPN 접속 오류")]), name="a")
    b = LangChainRetriever(FakeStore([(Doc("VPN 접속 오류"), 0.8)]), name="b")
    h = HybridRetriever([a, b]).index(IDS, TEXTS)
    assert [cid for cid, _ in h.search(["앱 VPN"], 3)[0]] == ["c3", "c1"]


def test_real_langchain_core_retriever():
    lc = pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class KeywordRetriever(BaseRetriever):
        docs: list

        def _get_relevant_documents(self, query, *, run_manager):
            return [d for d in self.docs if any(w in d.page_content for w in query.split())]

    docs = [Document(page_content=t, metadata={"chunk_id": cid}) for cid, t in zip(IDS, TEXTS)]
    r = LangChainRetriever(KeywordRetriever(docs=docs), id_key="chunk_id").index(IDS, TEXTS)
    assert r.search(["VPN", "계정 앱"], top_n=3) == [[("c3", 1.0)], [("c1", 1.0), ("c2", 0.5), ("c4", 1 / 3)]]
    assert lc.__version__
