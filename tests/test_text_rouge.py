"""ROUGE-L: equality with Google's rouge-score (whitespace tokens), LCS invariants, hand cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.errors import InputError
from ragexam.metrics.text import corpus_rouge_l, lcs_length, rouge_l_stats, sentence_rouge_l
from ragexam.metrics.text.synthetic import random_pairs


def _lcs_dp(a, b) -> int:
    """Textbook O(|a||b|) dynamic programme."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=80), st.lists(st.integers(0, 5), max_size=80))
def test_lcs_bit_parallel_equals_dp(a, b):
    assert lcs_length(a, b) == _lcs_dp(a, b) == lcs_length(b, a)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from("abcd"), max_size=40), st.lists(st.sampled_from("abcd"), max_size=40))
def test_rouge_l_invariants(h, r):
    res = sentence_rouge_l(" ".join(h), " ".join(r))
    assert 0.0 <= res.score <= 1.0
    assert min(res.precision, res.recall) - 1e-12 <= res.score <= max(res.precision, res.recall) + 1e-12
    if h and h == r:
        assert res.score == 1.0


@pytest.mark.parametrize("hyp, ref, p, r", [
    ("a b c d", "a b c d", 1.0, 1.0),
    ("a x c", "a b c d", 2 / 3, 2 / 4),
    ("d c b a", "a b c d", 1 / 4, 1 / 4),
    ("", "a b", 0.0, 0.0),          # empty hypothesis
    ("a b", "", 0.0, 0.0),          # empty reference
    ("", "", 0.0, 0.0),
    ("x y", "a b", 0.0, 0.0),       # no common token
])
def test_hand_cases(hyp, ref, p, r):
    res = sentence_rouge_l(hyp, ref)
    assert res.precision == pytest.approx(p) and res.recall == pytest.approx(r)
    f = 2 * p * r / (p + r) if p + r else 0.0
    assert res.score == pytest.approx(f)


def test_beta_weights_recall():
    p, r = 2 / 3, 2 / 4
    res = sentence_rouge_l("a x c", "a b c d", beta=2.0)
    assert res.score == pytest.approx(5 * p * r / (r + 4 * p))
    assert "|beta:2|" in res.signature


def test_multiple_references_take_best_f_and_corpus_is_mean():
    res = sentence_rouge_l("a b c", ["x y", "a b z", "a b c d"])
    assert res.score == pytest.approx(2 * 1 * 0.75 / 1.75)
    stats = rouge_l_stats(["a b", "x"], [["a b"], ["y"]])
    assert stats.tolist() == [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    assert corpus_rouge_l(["a b", "x"], ["a b", "y"]).score == 0.5


def test_char_and_korean_tokenizers():
    ref, hyp = "트랜스포머의 핵심", "트랜스포머는 핵심"
    assert sentence_rouge_l(hyp, ref).score == pytest.approx(0.5)
    assert sentence_rouge_l(hyp, ref, tokenize="char").score == pytest.approx(7 / 8)
    kiwi = sentence_rouge_l(hyp, ref, tokenize="ko-kiwi")
    assert kiwi.score > 0.5 and "tok:ko-kiwi-" in kiwi.signature


def test_input_errors():
    with pytest.raises(InputError, match="valid choices: 'whitespace', 'char'"):
        corpus_rouge_l(["a"], ["a"], tokenize="13a")
    with pytest.raises(InputError, match="beta"):
        corpus_rouge_l(["a"], ["a"], beta=0)
    with pytest.raises(InputError, match="single str"):
        corpus_rouge_l("a", ["a"])


# --- Google's rouge-score -----------------------------------------------------------------------
class _Whitespace:
    """rouge-score tokenizer that is plain str.split() (its default lowercases and drops punctuation)."""

    def tokenize(self, text):
        return text.split()


@pytest.fixture(scope="module")
def rouge_scorer():
    mod = pytest.importorskip("rouge_score.rouge_scorer")
    return mod.RougeScorer(["rougeL"], tokenizer=_Whitespace())


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_equals_rouge_score_whitespace(rouge_scorer, lang):
    hyps, refs = random_pairs(1000, lang, seed=31, n_refs=0)
    stats = rouge_l_stats(hyps, refs)
    for i, (h, r) in enumerate(zip(hyps, refs)):
        expected = rouge_scorer.score_multi(r, h)["rougeL"]
        assert stats[i, 2] == expected.fmeasure, (h, r)
        assert stats[i, 0] == expected.precision and stats[i, 1] == expected.recall
    mean_f = np.mean([rouge_scorer.score_multi(r, h)["rougeL"].fmeasure for h, r in zip(hyps, refs)])
    assert corpus_rouge_l(hyps, refs).score == pytest.approx(mean_f, abs=1e-12)


def test_equals_rouge_score_default_tokenizer_on_its_own_tokens():
    """With rouge-score's default tokenizer (lowercase, non-alphanumerics -> spaces) applied
    first, our whitespace ROUGE-L equals its default rougeL."""
    mod = pytest.importorskip("rouge_score.rouge_scorer")
    from rouge_score import tokenize as rtok

    scorer = mod.RougeScorer(["rougeL"])
    hyps, refs = random_pairs(300, "en", seed=32)
    for h, (r,) in zip(hyps, refs):
        ours = sentence_rouge_l(" ".join(rtok.tokenize(h, None)), " ".join(rtok.tokenize(r, None))).score
        assert ours == scorer.score(r, h)["rougeL"].fmeasure
