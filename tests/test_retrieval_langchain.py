"""LangChain and LlamaIndex adapters, graded on what they return: real in-memory stores that chunk the
bundled helpdesk set with their own splitters and a deterministic embedding, plus duck-typed fakes for
the edge cases."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pytest

import ragexam
from ragexam.data.loaders import load_corpus, load_qa
from ragexam.data.normalization import normalize
from ragexam.errors import InputError
from ragexam.retrieval.langchain_adapter import LangChainRetriever
from ragexam.retrieval.llamaindex_adapter import LlamaIndexRetriever

DIM = 256


def bigram_vector(text: str) -> list:
    """A deterministic embedding: hashed character bigrams (whitespace removed), L2-normalized."""
    s = "".join(text.split())
    v = np.zeros(DIM)
    for i in range(len(s) - 1):
        v[int(hashlib.md5(s[i:i + 2].encode()).hexdigest()[:8], 16) % DIM] += 1.0
    n = np.linalg.norm(v)
    return (v / n if n else v).tolist()


def first_ranks(qa, texts_of) -> dict:
    """First 1-based rank of a text containing (after normalization) an evidence string, per scored question."""
    out = {}
    for q in qa:
        if q.answerable:
            out[q.query_id] = next((i for i, t in enumerate(texts_of(q.question), 1)
                                    if any(normalize(e) in normalize(t) for e in q.evidence)), None)
    return out


def check_against(res, name, first):
    m = res.summary["results"][name]["metrics"]
    n = len(first)
    for k in (1, 5, 10):
        assert m[f"hit@{k}"] == pytest.approx(sum(1 for r in first.values() if r and r <= k) / n)
    assert m["mrr"] == pytest.approx(sum(1 / r for r in first.values() if r) / n)
    assert {r.query_id: r.first_rank for r in res.per_question if r.pipeline == name and r.answerable} == first
    assert 0 < m["hit@1"] < m["hit@10"]


@pytest.fixture(scope="module")
def langchain_store():
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    class BigramEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return [bigram_vector(t) for t in texts]

        def embed_query(self, text):
            return bigram_vector(text)

    splitter = RecursiveCharacterTextSplitter(chunk_size=220, chunk_overlap=40)
    docs = [Document(page_content=d.content, metadata={"doc_id": d.doc_id}) for d in load_corpus("it_helpdesk")]
    chunks = splitter.split_documents(docs)
    store = InMemoryVectorStore(BigramEmbeddings())
    store.add_documents(chunks)
    return store, chunks


def test_langchain_vector_store_with_its_own_splitter(langchain_store):
    store, chunks = langchain_store
    assert len(chunks) > 81  # its own chunking, not ragexam's paragraphs:400
    qa = load_qa("it_helpdesk")
    res = ragexam.run(None, "it_helpdesk", [LangChainRetriever(store, name="inmemory")], progress=False,
                      n_resamples=100, n_permutations=100, depth=20, k=[1, 5, 10])
    first = first_ranks(qa, lambda q: [d.page_content for d, _ in store.similarity_search_with_score(q, k=20)])
    check_against(res, "langchain:inmemory", first)
    row = next(r for r in res.per_question if r.query_id == "hq_001")
    assert row.top_ids[0] == store.similarity_search_with_score(qa["hq_001"].question, k=1)[0][0].id
    # doc mode works from the splitter's copied metadata
    doc = ragexam.run(None, "it_helpdesk", [LangChainRetriever(store, name="inmemory")], relevance="doc",
                      progress=False, n_resamples=100, n_permutations=100, depth=20, k=[1, 5, 10])
    assert doc.summary["results"]["langchain:inmemory"]["metrics"]["hit@5"] > 0.5


def test_langchain_retriever_interface_and_comparison(langchain_store):
    store, _ = langchain_store
    qa = load_qa("it_helpdesk")
    as_ret = store.as_retriever(search_kwargs={"k": 10})
    res = ragexam.run(None, "it_helpdesk", [LangChainRetriever(store, name="store"),
                                           LangChainRetriever(as_ret, name="retriever")],
                      progress=False, n_resamples=100, n_permutations=100, depth=10, k=[1, 5, 10])
    first = first_ranks(qa, lambda q: [d.page_content for d in as_ret.invoke(q)])
    check_against(res, "langchain:retriever", first)
    # the same store through both interfaces: the same ranking, so no difference at all
    assert all(c["diff"] == 0 for c in res.summary["comparisons"])
    assert "score:none" in res.pipelines[1].signature and "kind:vectorstore" in res.pipelines[0].signature


def test_llamaindex_vector_index_with_its_own_splitter():
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.node_parser import SentenceSplitter

    class BigramEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query):
            return bigram_vector(query)

        async def _aget_query_embedding(self, query):
            return bigram_vector(query)

        def _get_text_embedding(self, text):
            return bigram_vector(text)

    docs = [Document(text=d.content, doc_id=d.doc_id) for d in load_corpus("it_helpdesk")]
    splitter = SentenceSplitter(chunk_size=120, chunk_overlap=20, tokenizer=lambda s: list(s))
    index = VectorStoreIndex.from_documents(docs, embed_model=BigramEmbedding(), transformations=[splitter])
    retriever = index.as_retriever(similarity_top_k=10)
    qa = load_qa("it_helpdesk")
    res = ragexam.run(None, "it_helpdesk", [LlamaIndexRetriever(retriever, name="vsi")], progress=False,
                      n_resamples=100, n_permutations=100, depth=10, k=[1, 5, 10])
    first = first_ranks(qa, lambda q: [n.node.get_content() for n in retriever.retrieve(q)])
    check_against(res, "llamaindex:vsi", first)
    # doc ids come from the node's source document (ref_doc_id)
    doc = ragexam.run(None, "it_helpdesk", [LlamaIndexRetriever(retriever, name="vsi")], relevance="doc",
                      progress=False, n_resamples=100, n_permutations=100, depth=10, k=[1, 5, 10])
    assert doc.summary["results"]["llamaindex:vsi"]["metrics"]["hit@10"] > 0.5


# -- duck-typed edge cases -----------------------------------------------------------------------


@dataclass
class Doc:
    page_content: str
    metadata: dict = field(default_factory=dict)
    id: str = None


class FakeStore:
    def __init__(self, results):
        self.results = results
        self.k_seen = []

    def similarity_search_with_score(self, query, k=4):
        self.k_seen.append(k)
        return self.results[:k]


def test_vector_store_similarity_and_distance():
    sims = [(Doc("계정 잠금 해제", {"doc_id": "d2"}, "c2"), 0.9), (Doc("VPN 접속 오류"), 0.4)]
    store = FakeStore(sims)
    got = LangChainRetriever(store).retrieve(["q"], 3)[0].items
    assert [(i.text, i.doc_id, i.id, i.score) for i in got] == [("계정 잠금 해제", "d2", "c2", 0.9),
                                                                 ("VPN 접속 오류", None, None, 0.4)]
    assert store.k_seen == [3]
    dists = [(Doc("a"), 0.1), (Doc("b"), 0.7)]
    assert [i.score for i in LangChainRetriever(FakeStore(dists), scores="distance").retrieve(["q"], 5)[0].items] \
        == [-0.1, -0.7]
    with pytest.raises(InputError, match="scores='distance'"):
        LangChainRetriever(FakeStore(dists)).retrieve(["q"], 5)


def test_id_key_and_bad_objects():
    store = FakeStore([(Doc("x", {"chunk_id": "k9"}), 1.0)])
    assert LangChainRetriever(store, id_key="chunk_id").retrieve(["q"], 2)[0].items[0].id == "k9"
    with pytest.raises(InputError, match="no metadata key 'cid'.*chunk_id"):
        LangChainRetriever(store, id_key="cid").retrieve(["q"], 2)
    with pytest.raises(InputError, match="neither invoke"):
        LangChainRetriever(object())
    with pytest.raises(InputError, match="scores.: received .cosine.; expected one of similarity, distance"):
        LangChainRetriever(FakeStore([]), scores="cosine")
    with pytest.raises(InputError, match="page_content"):
        LangChainRetriever(FakeStore([(Doc(""), 1.0)])).retrieve(["q"], 2)
    with pytest.raises(InputError, match="no retrieve"):
        LlamaIndexRetriever(object())
