"""A chunking study shares its embeddings (issue 40): each distinct model input is embedded once per run and across
runs (the cache), chunks identical up to the whitespace e5 collapses share one vector, and the run says how much
was shared."""

from __future__ import annotations

import numpy as np
import pytest

from ragexam.retrieval.embedding import embed_cached, input_keys, record_embeddings


class Counting:
    """A fake embedder that says what it sees (whitespace collapsed, like e5) and counts what it embeds."""

    name = "fake"
    identity = "fake:1"
    dim = 4

    def __init__(self, sees_inputs: bool = True) -> None:
        self.calls: list = []
        if not sees_inputs:
            self.model_inputs = None

    def model_inputs(self, texts, role):
        return [" ".join(t.split()) for t in texts]

    def embed_passages(self, texts):
        self.calls.extend(texts)
        return np.array([[len(t), t.count("a"), 1.0, 0.0] for t in texts], dtype=np.float32)

    embed_queries = embed_passages


def test_texts_with_the_same_input_are_embedded_once_and_counted():
    e = Counting()
    with record_embeddings() as ledger:
        first = embed_cached(e, ["a b", "a\nb", "c", "a  b"], "passage", None)
        second = embed_cached(e, ["c", "d", "a b"], "passage", None)  # another chunker: no cache, shared in the run
    assert e.calls == ["a b", "c", "d"]
    assert np.array_equal(first[0], first[1]) and np.array_equal(first[0], first[3])
    assert np.array_equal(second[2], first[0]) and np.array_equal(second[0], first[2])
    [use] = ledger.uses.values()
    assert (use.texts, use.distinct, use.embedded, use.cached, use.shared, use.whitespace) == (7, 3, 3, 0, 4, 2)
    assert use.distinct == use.cached + use.embedded and use.texts == use.distinct + use.shared


def test_without_model_inputs_only_identical_texts_share():
    e = Counting(sees_inputs=False)
    embed_cached(e, ["a b", "a\nb", "a b"], "passage", None)
    assert e.calls == ["a b", "a\nb"]
    assert input_keys(e, ["x"], "passage") != input_keys(Counting(), ["x"], "passage")  # another key space


def test_the_cache_shares_across_runs_by_input(tmp_path):
    from ragexam.retrieval.cache import open_cache

    cache = open_cache(True, tmp_path)
    e = Counting()
    embed_cached(e, ["x  y", "z"], "passage", cache)
    with record_embeddings() as ledger:
        got = embed_cached(e, ["x\ty", "z", "w"], "passage", cache)
    assert e.calls == ["x  y", "z", "w"] and got.shape == (3, 4)
    [use] = ledger.uses.values()
    assert (use.cached, use.embedded, use.shared) == (2, 1, 0)


def test_e5_inputs_equal_up_to_collapsed_whitespace_give_identical_vectors():
    from ragexam.retrieval.e5 import E5Embedder

    e = E5Embedder()
    a, b, c = "VPN 접속이 안 될 때는\n먼저 OTP 앱을 확인하세요.", "VPN 접속이 안 될 때는   먼저\tOTP 앱을 확인하세요.", \
        "VPN 접속이 안 될 때는 먼저 OTP앱을 확인하세요."
    ia, ib, ic = e.model_inputs([a, b, c], "passage")
    assert ia == ib != ic and ia.startswith("\u2581passage:\u2581VPN")
    assert e.model_inputs([a], "query")[0] != ia
    va, vb, vc = e.embed_passages([a, b, c])
    assert np.array_equal(va, vb) and not np.array_equal(va, vc)  # what the cache key promises, bit for bit


@pytest.mark.parametrize("cache", [True, False])
def test_a_chunking_study_embeds_each_chunk_once_and_says_so(tmp_path, cache):
    import ragexam
    from ragexam.report.console_run import _chunking_rows

    chunkers = ["paragraphs", "paragraphs:400", "sentences"]
    res = ragexam.run("it_helpdesk", "it_helpdesk", ["dense" if cache else "dense?cache=false"], chunkers=chunkers,
                      cache_dir=str(tmp_path / "cache"))
    uses = {u.role: u for u in res.summary.timing.embeddings}
    p = uses["passage"]
    chunks = sum(len(c) for c in res.chunkings.values())
    distinct = {" ".join(("passage: " + c.text).split()) for ch in res.chunkings.values() for c in ch}
    assert p.texts == chunks and p.distinct == len(distinct) and p.shared == chunks - len(distinct) > 0
    assert p.embedded == p.distinct and p.cached == 0  # a new cache (or none): everything embedded once
    q = uses["query"]  # three pipelines ask the same questions: embedded once
    assert q.texts == 3 * q.distinct and q.shared == 2 * q.distinct
    rows = [text for _, text in _chunking_rows(res.summary)]
    assert any(t.startswith(f"e5 passages: {p.texts:,} asked, {p.distinct:,} distinct ({p.shared:,} shared)")
               for t in rows)
    if cache:  # a second run reads every vector back
        again = ragexam.run("it_helpdesk", "it_helpdesk", ["dense"], chunkers=chunkers, cache_dir=str(tmp_path / "cache"))
        p2 = {u.role: u for u in again.summary.timing.embeddings}["passage"]
        assert (p2.cached, p2.embedded) == (p.distinct, 0)
