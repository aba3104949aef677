"""The on-disk token / embedding cache: second runs call nothing, writes survive a kill."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ragexam.errors import RagexamError
from ragexam.retrieval import tokenizers
from ragexam.retrieval.bm25 import BM25Retriever
from ragexam.retrieval.cache import CACHE_FILENAME, Cache, content_key, default_cache_dir, open_cache
from ragexam.retrieval.dense import DenseRetriever
from ragexam.retrieval.embedding import embed_cached

TEXTS = ["앱 설치가 안 돼요", "계정이 잠겼어요", "VPN 접속 오류", "출입증 분실 신고", "앱 설치가 안 돼요"]
IDS = ["c1", "c2", "c3", "c4", "c5"]
QUERIES = ["앱 설치", "계정 잠금"]


class CountingEmbedder:
    """Deterministic bag-of-characters vectors; counts calls and texts embedded."""

    name = "counting"
    identity = "counting:v1"
    dim = 32

    def __init__(self, fail_on_call: int | None = None):
        self.calls = 0
        self.texts = 0
        self.fail_on_call = fail_on_call

    def _vec(self, texts):
        self.calls += 1
        if self.fail_on_call is not None and self.calls == self.fail_on_call:
            raise KeyboardInterrupt("simulated kill")
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t:
                out[i, ord(ch) % self.dim] += 1.0
        return out

    def embed_queries(self, texts):
        return self._vec(texts)

    def embed_passages(self, texts):
        return self._vec(texts)


class CountingTokenizer:
    name = "counting"
    cacheable = True
    identity = "counting-tok:v1"

    def __init__(self):
        self.calls = 0
        self.texts = 0

    def tokenize(self, texts, progress=False):
        self.calls += 1
        self.texts += len(texts)
        return [t.split() for t in texts]


def test_second_dense_run_calls_no_embedder(tmp_path):
    first = CountingEmbedder()
    r1 = DenseRetriever(first, cache_dir=tmp_path, batch_size=2).index(IDS, TEXTS)
    hits1 = r1.search(QUERIES, 3)
    assert first.calls > 0
    assert first.texts == 4 + 2  # the duplicated text is embedded once
    second = CountingEmbedder()
    r2 = DenseRetriever(second, cache_dir=tmp_path).index(IDS, TEXTS)
    assert r2.search(QUERIES, 3) == hits1
    assert second.calls == 0
    # a new text costs exactly one embedding
    DenseRetriever(second, cache_dir=tmp_path).index(IDS + ["c6"], TEXTS + ["새 문서"])
    assert second.texts == 1


def test_queries_and_passages_are_cached_separately(tmp_path):
    cache = Cache(tmp_path)
    emb = CountingEmbedder()
    embed_cached(emb, ["같은 문장"], "passage", cache)
    embed_cached(emb, ["같은 문장"], "query", cache)
    assert emb.calls == 2
    assert content_key("m", "query", "x") != content_key("m", "passage", "x")
    assert content_key("m1", "query", "x") != content_key("m2", "query", "x")


def test_second_bm25_run_calls_no_tokenizer(tmp_path):
    tok = CountingTokenizer()
    r1 = BM25Retriever(tok, cache_dir=tmp_path).index(IDS, TEXTS)
    hits1 = r1.search(QUERIES, 3)
    assert tok.calls > 0
    tok2 = CountingTokenizer()
    r2 = BM25Retriever(tok2, cache_dir=tmp_path).index(IDS, TEXTS)
    assert r2.search(QUERIES, 3) == hits1
    assert tok2.calls == 0


def test_second_kiwi_run_never_touches_kiwi(tmp_path, monkeypatch):
    r1 = BM25Retriever("kiwi", cache_dir=tmp_path).index(IDS, TEXTS)
    hits1 = r1.search(QUERIES, 3)

    def boom(*args, **kwargs):
        raise AssertionError("kiwi was called on a warm cache")

    monkeypatch.setattr(tokenizers, "kiwi", boom)
    monkeypatch.setattr(tokenizers, "kiwi_tokenize", boom)
    monkeypatch.setattr(tokenizers.KiwiTokenizer, "tokenize", boom)
    r2 = BM25Retriever("kiwi", cache_dir=tmp_path).index(IDS, TEXTS)
    assert r2.search(QUERIES, 3) == hits1


def test_cache_false_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path / "default"))
    emb = CountingEmbedder()
    DenseRetriever(emb, cache=False).index(IDS, TEXTS).search(QUERIES, 2)
    BM25Retriever(CountingTokenizer(), cache=False).index(IDS, TEXTS)
    assert not (tmp_path / "default").exists()


def test_interrupted_embedding_keeps_finished_batches(tmp_path):
    texts = [f"문서 {i}" for i in range(10)]
    ids = [f"d{i}" for i in range(10)]
    dying = CountingEmbedder(fail_on_call=3)  # batches 1 and 2 (4 texts) finish, then "killed"
    with pytest.raises(KeyboardInterrupt):
        DenseRetriever(dying, cache_dir=tmp_path, batch_size=2).index(ids, texts)
    again = CountingEmbedder()
    DenseRetriever(again, cache_dir=tmp_path, batch_size=2).index(ids, texts)
    assert again.texts == 6


def test_killed_process_leaves_a_usable_cache(tmp_path):
    script = textwrap.dedent(f"""
        import os, numpy as np
        from ragexam.retrieval.cache import Cache, content_key
        c = Cache({str(tmp_path)!r})
        c.put_tokens("tok", [(content_key("tok", "doc", "kept"), ["kept"])])
        conn = c._connect()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO tokens VALUES (?, ?)", (content_key("tok", "doc", "lost"), b'["lost"]'))
        os._exit(1)   # killed in the middle of a transaction
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    cache = Cache(tmp_path)
    got = cache.get_tokens([content_key("tok", "doc", "kept"), content_key("tok", "doc", "lost")])
    assert got == {content_key("tok", "doc", "kept"): ["kept"]}
    assert cache._connect().execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    cache.put_tokens("tok", [(content_key("tok", "doc", "new"), ["new"])])  # still writable
    cache.close()


def test_corrupt_cache_file_gives_a_clear_error(tmp_path):
    (tmp_path / CACHE_FILENAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(RagexamError, match="safe to delete"):
        Cache(tmp_path).get_tokens([b"x"])


def test_default_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("RAGEXAM_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "ragexam"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ragexam"
    assert open_cache(False, None) is None
    assert open_cache(True, tmp_path / "x") is open_cache(True, str(tmp_path / "x"))


def test_token_round_trip_keeps_any_characters(tmp_path):
    cache = Cache(tmp_path)
    toks = ["자연 언어 처리", "a\x1fb", "\"quote\"", "漢字", "😀", ""]
    key = content_key("t", "doc", "x")
    cache.put_tokens("t", [(key, toks)])
    assert cache.get_tokens([key]) == {key: toks}
    assert cache.producers()[0][:2] == ("t", "tokenizer")
