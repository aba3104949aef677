"""BM25: kiwi tokens, the bm25s formulas against hand computation, candidates, ties, guards."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from ragexam.errors import InputError, RagexamError
from ragexam.retrieval.bm25 import BM25_VARIANTS, BM25Retriever
from ragexam.retrieval.tokenizers import KiwiTokenizer, WhitespaceTokenizer, keep_kiwi_tag


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGEXAM_CACHE_DIR", str(tmp_path / "cache"))


# -- kiwi tokens ---------------------------------------------------------------------------------
def test_kiwi_tokens_drop_particles_and_endings_keep_one_syllable_words():
    toks = KiwiTokenizer().tokenize(["VPN 접속이 안 될 때는 먼저 OTP 인증 앱의 시간을 확인하세요."])[0]
    assert toks == ["vpn", "접속", "안", "되다", "때", "먼저", "otp", "인증", "앱", "시간", "확인"]
    for particle in ("이", "는", "의", "을", "세요", "하", "."):
        assert particle not in toks


def test_kiwi_tokens_keep_numbers_latin_hanja_and_lemmatize_irregular_verbs():
    toks = KiwiTokenizer().tokenize(["비밀번호를 5회 틀리면 30분간 잠겨요. 길을 걸어서 漢字 ㅋㅋ"])[0]
    assert "5" in toks and "30" in toks and "漢字" in toks
    assert "걷다" in toks  # 걸어서 -> 걷/VV-I
    assert "ㅋㅋ" not in toks  # SW is dropped
    assert "간" not in toks  # XSN is dropped


def test_kiwi_batch_equals_one_by_one_and_blank_text_gives_no_tokens():
    tok = KiwiTokenizer()
    texts = ["앱이 안 열려요", "", "   ", "계정 잠금 해제 방법"]
    assert tok.tokenize(texts) == [tok.tokenize([t])[0] for t in texts]
    assert tok.tokenize(["", "  "]) == [[], []]


@pytest.mark.parametrize("tag,kept", [("NNG", True), ("VV", True), ("VV-I", True), ("MAG", True),
                                      ("SL", True), ("SN", True), ("SH", True), ("W_URL", True),
                                      ("JKS", False), ("JX", False), ("EF", False), ("ETM", False),
                                      ("EP", False), ("XSV", False), ("XSN", False), ("XSA-I", False),
                                      ("SF", False), ("SP", False), ("SW", False), ("SSO", False),
                                      ("Z_CODA", False)])
def test_kiwi_tag_filter(tag, kept):
    assert keep_kiwi_tag(tag) is kept


def test_whitespace_tokenizer_lowercases_and_splits_only_on_whitespace():
    assert WhitespaceTokenizer().tokenize(["VPN 접속이  안\t돼요"]) == [["vpn", "접속이", "안", "돼요"]]


# -- the formulas --------------------------------------------------------------------------------
DOCS = ["a b c a", "a d", "b e e f g"]  # whitespace tokens; 'a' is in 2 of 3 docs (robertson clip)
QUERIES = ["a", "a e", "b b z", "d f a"]


def hand_bm25(docs, query, variant, k1=1.5, b=0.75, delta=0.5):
    """BM25 written out from the module docstring, one chunk at a time."""
    docs = [d.split() for d in docs]
    n = len(docs)
    avgdl = sum(map(len, docs)) / n
    df = Counter(t for d in docs for t in set(d))
    out = []
    for d in docs:
        tf = Counter(d)
        norm = 1 - b + b * len(d) / avgdl
        total = 0.0
        for t in query.split():
            if t not in df:
                continue
            f, m = tf[t], df[t]
            if variant == "lucene":
                idf, tfc = math.log(1 + (n - m + 0.5) / (m + 0.5)), f / (k1 * norm + f)
            elif variant == "robertson":
                idf, tfc = math.log(max(1.0, (n - m + 0.5) / (m + 0.5))), f / (k1 * norm + f)
            elif variant == "atire":
                idf, tfc = math.log(n / m), (k1 + 1) * f / (k1 * norm + f)
            elif variant == "bm25l":
                c = f / norm
                idf, tfc = math.log((n + 1) / (m + 0.5)), (k1 + 1) * (c + delta) / (k1 + c + delta)
            elif variant == "bm25+":
                idf, tfc = math.log((n + 1) / m), (k1 + 1) * f / (k1 * norm + f) + delta
            total += idf * tfc
        out.append(total)
    return out


def test_lucene_scores_match_hand_computation():
    r = BM25Retriever("whitespace").index(["d1", "d2", "d3"], DOCS)
    # 'a' (df=2, N=3): idf = ln(1 + 1.5/2.5) = ln 1.6; d1 has tf=2, |d1|=4, avgdl=11/3
    l1 = 1 - 0.75 + 0.75 * 4 / (11 / 3)
    expected_d1 = math.log(1.6) * 2 / (1.5 * l1 + 2)
    got = r.scores(["a"])[0]
    assert got[0] == pytest.approx(expected_d1, rel=1e-6)
    assert got[2] == 0.0
    for q in QUERIES:
        np.testing.assert_allclose(r.scores([q])[0], hand_bm25(DOCS, q, "lucene"), rtol=1e-6)


@pytest.mark.parametrize("variant", BM25_VARIANTS)
@pytest.mark.parametrize("k1,b,delta", [(1.5, 0.75, 0.5), (0.9, 0.4, 1.0), (2.0, 1.0, 0.0)])
def test_every_variant_matches_its_docstring_formula(variant, k1, b, delta):
    r = BM25Retriever("whitespace", variant=variant, k1=k1, b=b, delta=delta, cache=False)
    r.index(["d1", "d2", "d3"], DOCS)
    for q in QUERIES:
        hand = hand_bm25(DOCS, q, variant, k1, b, delta)
        np.testing.assert_allclose(r.scores([q])[0], hand, rtol=1e-5, atol=1e-7)
        # search() lists the chunks containing a query token, with the same scores
        hits = r.search([q], top_n=3)[0]
        qset = set(q.split())
        matching = [i for i, d in enumerate(DOCS) if qset & set(d.split())]
        assert sorted(cid for cid, _ in hits) == [f"d{i + 1}" for i in matching]
        for cid, s in hits:
            assert s == pytest.approx(hand[int(cid[1]) - 1], rel=1e-5, abs=1e-7)


def test_repeated_query_tokens_count_each_time():
    r = BM25Retriever("whitespace", cache=False).index(["d1", "d2", "d3"], DOCS)
    once, twice = r.scores(["b"])[0], r.scores(["b b"])[0]
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-6)


def test_kiwi_bm25_finds_the_chunk_by_morpheme_where_whitespace_cannot():
    ids = ["c1", "c2", "c3"]
    texts = ["앱의 알림이 오지 않을 때는 설정을 확인하세요.",
             "비밀번호를 5회 틀리면 계정이 잠깁니다.",
             "회의실 예약은 포털에서 합니다."]
    kiwi = BM25Retriever("kiwi").index(ids, texts)
    ws = BM25Retriever("whitespace").index(ids, texts)
    assert kiwi.search(["앱 알림"], 3)[0][0][0] == "c1"
    assert kiwi.search(["계정이 잠겼어요"], 3)[0][0][0] == "c2"
    assert ws.search(["앱 알림"], 3) == [[]]  # '앱의' and '알림이' are whole eojeols


# -- ranking contract -----------------------------------------------------------------------------
def test_ties_are_broken_by_chunk_id_even_across_the_cut():
    ids = [f"z{i:02d}" for i in range(20)][::-1] + ["a", "m"]
    texts = ["같은 문서 내용"] * 22
    r = BM25Retriever("kiwi").index(ids, texts)
    hits = r.search(["문서"], top_n=3)[0]
    assert [cid for cid, _ in hits] == ["a", "m", "z00"]
    assert len({s for _, s in hits}) == 1


@pytest.mark.parametrize("n_docs,n_vocab,q_len", [(60, 30, 3), (400, 3000, 1)])  # many / few postings
def test_results_are_best_first_and_at_most_top_n(n_docs, n_vocab, q_len):
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(n_vocab)]
    texts = [" ".join(rng.choice(vocab, size=rng.integers(3, 12))) for _ in range(n_docs)]
    ids = [f"c{i}" for i in range(n_docs)]
    r = BM25Retriever("whitespace", cache=False).index(ids, texts)
    queries = [" ".join(rng.choice(vocab[:n_vocab // 3], size=q_len)) for _ in range(10)]
    full = r.scores(queries)
    for q, hits, row in zip(queries, r.search(queries, top_n=5), full):
        assert len(hits) <= 5
        keys = [(-s, cid) for cid, s in hits]
        assert keys == sorted(keys)
        # the listed chunks are exactly the best five by (score desc, id asc) among matching chunks
        matching = [i for i, t in enumerate(texts) if set(q.split()) & set(t.split())]
        best = sorted(matching, key=lambda i: (-row[i], ids[i]))[:5]
        assert [cid for cid, _ in hits] == [ids[i] for i in best]


# -- guards ----------------------------------------------------------------------------------------
def test_empty_and_unknown_queries_give_empty_lists_and_zero_scores():
    r = BM25Retriever("kiwi").index(["a", "b"], ["앱 설치 오류", "계정 잠금"])
    queries = ["", "   ", "은는이가.", "완전히무관한외계어xyz"]
    assert r.search(queries, top_n=5) == [[], [], [], []]
    assert not r.scores(queries).any()


def test_corpus_without_any_token_indexes_and_returns_nothing():
    r = BM25Retriever("kiwi").index(["a", "b"], ["", "...!!"])
    assert r.search(["앱"], 3) == [[]]
    assert r.scores(["앱"]).shape == (1, 2)


def test_bm25l_and_bm25plus_do_not_list_chunks_without_query_tokens():
    for variant in ("bm25l", "bm25+"):
        r = BM25Retriever("whitespace", variant=variant, cache=False).index(["d1", "d2", "d3"], DOCS)
        assert (r.scores(["d"])[0] > 0).all()  # every chunk gets the non-occurrence credit
        assert [cid for cid, _ in r.search(["d"], 3)[0]] == ["d2"]


@pytest.mark.parametrize("kwargs,field", [({"variant": "okapi"}, "variant"), ({"k1": -1}, "k1"),
                                          ({"b": 1.5}, "b"), ({"delta": float("nan")}, "delta"),
                                          ({"k1": "x"}, "k1")])
def test_bad_parameters_raise_input_error(kwargs, field):
    with pytest.raises(InputError) as err:
        BM25Retriever("whitespace", **kwargs)
    assert err.value.field == field


@pytest.mark.parametrize("ids,texts,field", [(["a", "a"], ["x", "y"], "ids"), (["a"], ["x", "y"], "ids/texts"),
                                             ([], [], "ids"), (["a", 3], ["x", "y"], "ids"),
                                             (["a"], [None], "texts"), ("ab", ["x", "y"], "ids")])
def test_bad_corpus_raises_input_error(ids, texts, field):
    with pytest.raises(InputError) as err:
        BM25Retriever("whitespace").index(ids, texts)
    assert err.value.field == field


def test_search_guards():
    r = BM25Retriever("whitespace")
    with pytest.raises(RagexamError, match="before index"):
        r.search(["x"], 3)
    r.index(["a"], ["x"])
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputError):
            r.search(["x"], bad)
    with pytest.raises(InputError, match="wrap it in a list"):
        r.search("x", 3)
    assert r.search([], 3) == []


def test_spec_and_signature():
    r = BM25Retriever("kiwi", variant="bm25l", k1=1.2)
    assert r.spec == "bm25:kiwi?variant=bm25l&k1=1.2"
    sig = r.signature
    assert sig.startswith("bm25:kiwi|variant:bm25l|k1:1.2|b:0.75|delta:0.5|kiwi:")
    assert "|bm25s:" in sig
    assert BM25Retriever("whitespace").signature.startswith("bm25:whitespace|variant:lucene|k1:1.5|b:0.75|bm25s:")
    assert BM25Retriever("kiwi", variant="bm25plus").variant == "bm25+"
