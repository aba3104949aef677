"""A second run reuses the retrieval cache: no embedder call (run level)."""

from __future__ import annotations

import numpy as np
import pytest

import ragexam
from ragexam.retrieval.dense import DenseRetriever
from test_run_api import write_set


class CountingEmbedder:
    """Deterministic bag-of-characters vectors; counts the texts it embeds."""

    name = "counting"
    identity = "counting:run-test"
    dim = 64

    def __init__(self):
        self.calls = 0
        self.texts = 0

    def _vec(self, texts):
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t:
                out[i, ord(ch) % self.dim] += 1.0
        return out

    embed_queries = _vec
    embed_passages = _vec


@pytest.fixture()
def files(tmp_path):
    return write_set(tmp_path)


def test_second_run_makes_no_embedder_call(files, tmp_path):
    corpus, qa = files
    cache = tmp_path / "cache"
    first = CountingEmbedder()
    a = ragexam.run(corpus, qa, retrievers=[DenseRetriever(first, cache_dir=cache, progress=False)],
                    chunkers=["paragraphs"], n_resamples=50, n_permutations=50)
    assert first.calls > 0 and first.texts == 5 + 4  # 5 chunks, 4 questions
    second = CountingEmbedder()
    b = ragexam.run(corpus, qa, retrievers=[DenseRetriever(second, cache_dir=cache, progress=False)],
                    chunkers=["paragraphs"], n_resamples=50, n_permutations=50)
    assert second.calls == 0
    assert a.rankings == b.rankings
    assert a.summary["results"] == b.summary["results"]


def test_cache_dir_reaches_spec_retrievers(files, tmp_path):
    corpus, qa = files
    res = ragexam.run(corpus, qa, retrievers=["hybrid:bm25:whitespace+bm25:whitespace?weights=1,2"],
                      chunkers=["paragraphs"], cache_dir=tmp_path / "c", progress=False, n_resamples=50)
    members = res.pipelines[0].retriever_obj.retrievers
    assert all(str(m.cache_dir) == str(tmp_path / "c") and m.progress is False for m in members)
