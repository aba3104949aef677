"""Hybrid fusion: RRF and weighted min-max fusion against hand-computed examples."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragexam.errors import InputError
from ragexam.retrieval.base import Retriever, check_queries
from ragexam.retrieval.fusion import HybridRetriever, rrf_fuse, wsum_fuse

A = [("a", 10.0), ("b", 5.0), ("c", 0.0)]
B = [("c", 0.9), ("a", 0.5), ("d", 0.1)]


def test_rrf_hand_computed():
    fused = rrf_fuse([A, B], k=60)
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 63}
    assert [cid for cid, _ in fused] == ["a", "c", "b", "d"]
    for cid, score in fused:
        assert score == pytest.approx(expected[cid], rel=1e-15)


def test_rrf_k_weights_and_top_n():
    fused = rrf_fuse([A, B], k=0, weights=[1, 3], top_n=2)
    # a: 1/1 + 3/2 = 2.5; c: 1/3 + 3/1 = 3.333; b: 1/2; d: 3/3 = 1
    assert fused == [("c", pytest.approx(1 / 3 + 3)), ("a", pytest.approx(2.5))]


def test_rrf_ties_are_ordered_by_id_and_sums_do_not_depend_on_order():
    # 'x' and 'y' get the same two ranks in opposite lists: exactly equal scores
    l1 = [("y", 3.0), ("x", 2.0), ("w", 1.0)]
    l2 = [("x", 3.0), ("y", 2.0), ("v", 1.0)]
    fused = rrf_fuse([l1, l2])
    assert fused[0][1] == fused[1][1]
    assert [fused[0][0], fused[1][0]] == ["x", "y"]


def test_wsum_hand_computed_min_max():
    fused = wsum_fuse([A, B], weights=[0.3, 0.7])
    # A normalized: a 1, b .5, c 0;  B normalized: c 1, a .5, d 0
    expected = {"c": 0.7, "a": 0.3 + 0.35, "b": 0.15, "d": 0.0}
    assert [cid for cid, _ in fused] == ["c", "a", "b", "d"]
    for cid, score in fused:
        assert score == pytest.approx(expected[cid], abs=1e-12)


def test_wsum_when_max_equals_min_every_listed_chunk_gets_one():
    fused = wsum_fuse([[("only", 3.2)], [("p", 0.5), ("q", 0.5)], []])
    assert fused == [("only", 1.0), ("p", 1.0), ("q", 1.0)]


def test_fusion_rejects_bad_weights_and_k():
    with pytest.raises(InputError, match="2 weights for 3"):
        rrf_fuse([A, B, A], weights=[1, 1])
    with pytest.raises(InputError, match=">= 0"):
        wsum_fuse([A, B], weights=[1, -1])
    with pytest.raises(InputError, match="all weights are 0"):
        wsum_fuse([A, B], weights=[0, 0])
    with pytest.raises(InputError, match="RRF constant"):
        rrf_fuse([A, B], k=-1)


ranked_lists = st.lists(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.floats(-5, 5)), max_size=8, unique_by=lambda x: x[0])
    .map(lambda xs: sorted(xs, key=lambda p: -p[1])),
    min_size=2, max_size=4)


@given(ranked_lists)
def test_fusion_invariants(lists):
    for fused in (rrf_fuse(lists), wsum_fuse(lists)):
        ids = [cid for cid, _ in fused]
        assert sorted(ids) == sorted({cid for lst in lists for cid, _ in lst})
        keys = [(-s, cid) for cid, s in fused]
        assert keys == sorted(keys)
    # RRF upper bound: being first everywhere
    for _, s in rrf_fuse(lists):
        assert s <= len(lists) / 61 + 1e-12
    for _, s in wsum_fuse(lists):
        assert -1e-12 <= s <= len(lists) + 1e-12


class FakeRetriever(Retriever):
    """Returns fixed lists and records the depth it was asked for."""

    def __init__(self, name, lists):
        self.name, self.lists, self.asked = name, lists, []

    spec = property(lambda self: f"bm25:{self.name}")
    signature = property(lambda self: f"fake:{self.name}")

    def index(self, ids, texts):
        self._indexed = True
        return self

    def search(self, queries, top_n):
        self.asked.append(top_n)
        return [self.lists[q][:top_n] for q in check_queries(queries, "fake")]


def test_hybrid_retriever_asks_each_member_for_depth_and_fuses():
    r1 = FakeRetriever("x", {"q": A})
    r2 = FakeRetriever("y", {"q": B})
    h = HybridRetriever([r1, r2], depth=50).index(["a", "b", "c", "d"], ["", "", "", ""])
    assert h.search(["q"], top_n=2) == [rrf_fuse([A, B], top_n=2)]
    assert r1.asked == [50] and r2.asked == [50]
    h.search(["q"], top_n=80)
    assert r1.asked[-1] == 80
    assert h.spec == "hybrid:bm25:x+bm25:y?depth=50"
    assert h.signature == "hybrid:rrf|k:60|depth:50|weights:1,1|[fake:x]+[fake:y]"


def test_hybrid_wsum_spec_and_validation():
    r1, r2 = FakeRetriever("x", {"q": A}), FakeRetriever("y", {"q": B})
    h = HybridRetriever([r1, r2], method="wsum", weights=[0.3, 0.7]).index(["a"], ["t"])
    assert h.search(["q"], 10) == [wsum_fuse([A, B], weights=[0.3, 0.7])]
    assert h.spec == "hybrid:bm25:x+bm25:y?method=wsum&weights=0.3,0.7"
    assert h.signature.startswith("hybrid:wsum|norm:minmax|depth:100|weights:0.3,0.7|")
    with pytest.raises(InputError, match="two or more"):
        HybridRetriever([r1])
    with pytest.raises(InputError, match="fusion method"):
        HybridRetriever([r1, r2], method="max")
    with pytest.raises(InputError, match="no meaning"):
        HybridRetriever([r1, r2], method="wsum", k=10)
    assert math.isclose(HybridRetriever([r1, r2], k=10).k, 10.0)
