"""Retrieval at scale: approximate FAISS indexes with their recall of the exact top-k, built indexes cached
(BM25's score matrix, FAISS), embedding in windows through an executor, the GPU options of dense:st."""

from __future__ import annotations

import numpy as np
import pytest

from ragexam.errors import InputError
from ragexam.exec.local import LocalExecutor
from ragexam.retrieval.bm25 import BM25Retriever
from ragexam.retrieval.cache import Cache, corpus_key, open_cache
from ragexam.retrieval.dense import INDEX_TYPES, DenseRetriever, auto_nlist, l2_normalize
from ragexam.retrieval.embedding import iter_embeddings
from ragexam.retrieval.embedders import SentenceTransformerEmbedder
from ragexam.retrieval.spec import parse_retriever


class HashEmbedder:
    """Deterministic vectors from a seeded table (no model); clustered so approximate search has work to do."""

    name = "hash"
    identity = "hash:v1"
    spec = "dense:hash"

    def __init__(self, texts, dim=32, seed=0, n_clusters=20):
        rng = np.random.default_rng(seed)
        centers = rng.normal(size=(n_clusters, dim))
        self.table = {t: (centers[i % n_clusters] + 0.35 * rng.normal(size=dim)).astype(np.float32)
                      for i, t in enumerate(texts)}
        self.dim = dim
        self.calls = 0

    def embed_passages(self, texts):
        self.calls += 1
        return np.stack([self.table[t] for t in texts])

    embed_queries = embed_passages


@pytest.fixture()
def corpus():
    n = 3000
    ids = [f"c{i:05d}" for i in np.random.default_rng(1).permutation(n)]
    texts = [f"t{i}" for i in range(n)]
    queries = [f"t{i}" for i in range(0, n, 37)]  # queries equal to passages: the exact answer is known
    return ids, texts, queries, HashEmbedder(texts)


def _exact(emb, ids, texts, queries, k):
    P = l2_normalize(np.stack([emb.table[t] for t in texts]))
    Q = l2_normalize(np.stack([emb.table[q] for q in queries]))
    out = []
    for q in Q:
        s = P @ q
        out.append([ids[i] for i in sorted(range(len(ids)), key=lambda i: (-float(s[i]), ids[i]))[:k]])
    return out


@pytest.mark.parametrize("index,opts", [("hnsw", {"m": 8, "ef": 16, "ef_construction": 20}),
                                        ("ivf", {"nlist": 64, "nprobe": 2}),
                                        ("ivfpq", {"nlist": 32, "nprobe": 4, "m": 8, "nbits": 6})])
def test_approximate_index_reports_its_recall_of_the_exact_top_k(corpus, index, opts, tmp_path):
    ids, texts, queries, emb = corpus
    r = DenseRetriever(emb, index=index, recall_sample=50, cache_dir=tmp_path, **opts).index(ids, texts)
    hits = r.search(queries, top_n=20)
    exact = _exact(emb, ids, texts, queries, 20)
    [report] = r.index_report()
    assert report["index"] == index and report["sample"] == 50 and report["seed"] == 0
    # the report is the recall of these very lists on the sampled queries
    rng = np.random.default_rng(0)
    sample = np.sort(rng.choice(np.arange(len(queries)), size=50, replace=False))
    for k in (10, 20):
        want = np.mean([len(set(exact[i][:k]) & {c for c, _ in hits[i][:k]}) / k for i in sample])
        assert report[f"recall@{k}"] == pytest.approx(want)
    assert 0 < report["recall@20"] <= 1
    for h in hits:  # best first, ties by id, as every retriever
        assert h == sorted(h, key=lambda x: (-x[1], x[0]))
    assert f"index:faiss-{index}-ip(" in r.signature
    assert parse_retriever(r.spec.replace("dense:hash", "dense")).index_type == index


def test_a_small_approximate_index_misses_and_says_so(corpus, tmp_path):
    ids, texts, queries, emb = corpus
    weak = DenseRetriever(emb, index="ivf", nlist=64, nprobe=1, cache_dir=tmp_path).index(ids, texts)
    weak.search(queries, top_n=50)
    strong = DenseRetriever(emb, index="ivf", nlist=64, nprobe=64, cache_dir=tmp_path).index(ids, texts)
    strong.search(queries, top_n=50)
    assert weak.index_report()[0]["recall@50"] < 1.0  # one list of 64: the neighbours elsewhere are missed
    assert strong.index_report()[0]["recall@50"] == 1.0  # every list searched: exact


def test_flat_is_exact_and_reports_nothing(corpus):
    ids, texts, queries, emb = corpus
    r = DenseRetriever(emb, cache=False).index(ids, texts)
    assert [[c for c, _ in h] for h in r.search(queries[:10], 15)] == _exact(emb, ids, texts, queries[:10], 15)
    assert r.index_report() == [] and r.signature.endswith("|index:faiss-flat-ip")


def test_built_ann_index_is_cached_and_reused(corpus, tmp_path):
    ids, texts, queries, emb = corpus
    a = DenseRetriever(emb, index="hnsw", cache_dir=tmp_path).index(ids, texts)
    first = a.search(queries, 10)
    files = list((tmp_path / "indexes").glob("faiss-*.npz"))
    assert len(files) == 1
    emb.calls = 0
    b = DenseRetriever(emb, index="hnsw", cache_dir=tmp_path).index(ids, texts)
    assert emb.calls == 0  # neither embedded nor rebuilt: the stored index was loaded
    assert b.search(queries, 10) == first
    DenseRetriever(emb, index="hnsw", m=16, cache_dir=tmp_path).index(ids, texts)  # other settings: another index
    assert len(list((tmp_path / "indexes").glob("faiss-*.npz"))) == 2


def test_ann_options_are_checked():
    emb = HashEmbedder(["a"])
    with pytest.raises(InputError, match="unknown index 'annoy'"):
        DenseRetriever(emb, index="annoy")
    with pytest.raises(InputError, match="nprobe does not apply to index=hnsw"):
        DenseRetriever(emb, index="hnsw", nprobe=4)
    with pytest.raises(InputError, match="does not apply to index=flat"):
        DenseRetriever(emb, m=8)
    with pytest.raises(InputError, match=r"unknown option 'efs'; expected one of .* \(m, ef, ef_construction, "):
        DenseRetriever(emb, index="hnsw", efs=64)  # a typo is named, with what the keywords can be
    with pytest.raises(InputError, match="nbits"):
        DenseRetriever(emb, index="ivfpq", nbits=20)
    with pytest.raises(InputError, match="nlist=64 is more than the 10 passages"):
        DenseRetriever(emb, index="ivf", nlist=64, cache=False).index([f"i{j}" for j in range(10)],
                                                                      ["a"] * 10)
    with pytest.raises(InputError, match="ivfpq with nbits=8 trains 256 centroids .* received 81 "):
        DenseRetriever(emb, index="ivfpq", nlist=4, m=2, cache=False).index([f"i{j}" for j in range(81)],
                                                                            ["a"] * 81)
    assert set(INDEX_TYPES) == {"flat", "hnsw", "ivf", "ivfpq"}
    assert auto_nlist(1_000_000) == 4096 and auto_nlist(100) == 2 and auto_nlist(10) == 1
    r = parse_retriever("dense?index=ivfpq&nlist=auto&m=48&nprobe=8")
    assert r.spec == "dense:e5?index=ivfpq&nprobe=8" and "nlist=auto" in r.signature
    with pytest.raises(InputError, match="executor"):
        parse_retriever("bm25?executor=ray")


def test_vectors_are_embedded_in_windows_through_the_executor(corpus, tmp_path):
    ids, texts, queries, emb = corpus
    cache = Cache(tmp_path)
    blocks = list(iter_embeddings(emb, texts[:250], "passage", cache, batch_size=16,
                                  executor=LocalExecutor(2), window=100))
    assert [s for s, _ in blocks] == [0, 100, 200] and [b.shape for _, b in blocks] == [(100, 32)] * 2 + [(50, 32)]
    np.testing.assert_array_equal(np.concatenate([b for _, b in blocks]),
                                  np.stack([emb.table[t] for t in texts[:250]]))
    emb.calls = 0
    again = np.concatenate([b for _, b in iter_embeddings(emb, texts[:250], "passage", cache)])
    assert emb.calls == 0 and again.shape == (250, 32)  # every vector read back from the cache


def _words(n, seed=0):
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(300)]
    return [" ".join(rng.choice(vocab, size=int(rng.integers(3, 12)))) for _ in range(n)]


@pytest.mark.parametrize("variant", ["lucene", "bm25+"])
def test_bm25_index_is_cached_and_a_warm_index_reads_no_token(tmp_path, monkeypatch, variant):
    texts = _words(400)
    ids = [f"d{i}" for i in range(400)]
    queries = _words(30, seed=1)

    class Counting:
        """A cacheable whitespace tokenizer (so its tokens go through the cache)."""

        name, cacheable, identity = "ws", True, "ws:test:v1"

        def tokenize(self, texts, progress=False):
            return [t.split() for t in texts]

    a = BM25Retriever(Counting(), variant=variant, cache_dir=tmp_path, progress=False).index(ids, texts)
    cold = a.search(queries, 20)
    cold_scores = a.scores(queries)
    assert len(list((tmp_path / "indexes").glob("bm25-*.npz"))) == 1
    calls = []
    orig = Cache.get_tokens
    monkeypatch.setattr(Cache, "get_tokens", lambda self, keys: calls.append(len(keys)) or orig(self, keys))
    b = BM25Retriever(Counting(), variant=variant, cache_dir=tmp_path, progress=False).index(ids, texts)
    assert calls == []  # the corpus's tokens were not read: the built index was loaded
    assert b.search(queries, 20) == cold and calls  # (the queries' tokens are read)
    np.testing.assert_array_equal(b.scores(queries), cold_scores)
    # another corpus order is another index
    BM25Retriever(Counting(), variant=variant, cache_dir=tmp_path, progress=False).index(ids[::-1], texts[::-1])
    assert len(list((tmp_path / "indexes").glob("bm25-*.npz"))) == 2


def test_a_damaged_stored_index_is_rebuilt(tmp_path):
    texts = _words(50)
    ids = [f"d{i}" for i in range(50)]

    class Ws:
        name, cacheable, identity = "ws", True, "ws:test:v1"

        def tokenize(self, texts, progress=False):
            return [t.split() for t in texts]

    first = BM25Retriever(Ws(), cache_dir=tmp_path, progress=False).index(ids, texts).search(texts[:5], 5)
    [path] = (tmp_path / "indexes").glob("bm25-*.npz")
    path.write_bytes(b"not a numpy archive")
    assert BM25Retriever(Ws(), cache_dir=tmp_path, progress=False).index(ids, texts).search(texts[:5], 5) == first
    assert open_cache(True, tmp_path).load_index("bm25", "nothing-here") is None
    assert corpus_key("x", ["ab", "c"]) != corpus_key("x", ["a", "bc"])  # lengths keep texts apart


def test_sentence_transformers_gpu_options_are_checked_without_loading_a_model():
    e = SentenceTransformerEmbedder("intfloat/multilingual-e5-small", device="cuda", batch_size=128, fp16=True)
    assert e.gpus == 1 and e.identity.endswith(":fp16") and "|dtype:fp16|" in e.signature_fields
    assert e.spec == "dense:st:intfloat/multilingual-e5-small?fp16=true"
    assert SentenceTransformerEmbedder("m", device="cpu").gpus == 0
    assert SentenceTransformerEmbedder("m", device="auto").device is None
    with pytest.raises(InputError, match="fp16 .* needs a GPU"):
        SentenceTransformerEmbedder("m", device="cpu", fp16=True)
    with pytest.raises(InputError, match="batch_size"):
        SentenceTransformerEmbedder("m", batch_size=0)
    r = parse_retriever("dense:st:some/model?device=cuda:1&batch_size=64&fp16=true")
    assert r.embedder.device == "cuda:1" and r.embedder.batch_size == 64 and r.embedder.fp16


def _cuda_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed (the GPU path needs pip install 'ragexam[st]' with a CUDA torch)"
    if not torch.cuda.is_available():
        return "no CUDA GPU on this machine"
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return "sentence-transformers is not installed"
    return None


@pytest.mark.skipif(_cuda_reason() is not None, reason=str(_cuda_reason()))
def test_gpu_fp16_vectors_agree_with_the_cpu(tmp_path):  # pragma: no cover - needs a GPU and a local model
    import os

    model = os.environ.get("RAGEXAM_TEST_ST_MODEL", "intfloat/multilingual-e5-small")
    texts = ["VPN 접속이 안 될 때는 OTP 앱의 시간을 확인하세요.", "사원증을 분실하면 보안팀에 신고하세요."]
    cpu = SentenceTransformerEmbedder(model, device="cpu").embed_passages(texts)
    gpu = SentenceTransformerEmbedder(model, device="cuda", fp16=True, batch_size=256).embed_passages(texts)
    cos = (l2_normalize(cpu) * l2_normalize(gpu)).sum(axis=1)
    assert (cos > 0.999).all()
