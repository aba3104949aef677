"""chrF / chrF++: equality with sacrebleu 2.6 (score / 100, 1e-9) on seeded random pairs."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest

from ragexam.errors import InputError
from ragexam.metrics.text import (
    chrf_from_stats,
    chrf_scores,
    chrf_stats,
    chrf_stats_columns,
    corpus_chrf,
    sentence_chrf,
)
from ragexam.metrics.text.synthetic import random_pairs

pytest.importorskip("sacrebleu")
from sacrebleu.metrics import CHRF  # noqa: E402

logging.getLogger("sacrebleu").setLevel(logging.ERROR)

TOL = 1e-9
LECTURE_REF = "트랜스포머의 핵심 메커니즘은 셀프 어텐션으로, 입력 시퀀스의 모든 위치 간 관계를 병렬로 처리합니다."
LECTURE_HYP = "트랜스포머는 셀프 어텐션 메커니즘을 사용하여 시퀀스 내 모든 위치 간 관계를 병렬로 처리합니다."
SETTINGS = list(itertools.product((0, 2), (False, True), (False, True)))  # word_order, whitespace, eps


def _streams(refs):
    k = max(map(len, refs))
    return [[r[j] if j < len(r) else None for r in refs] for j in range(k)]


@pytest.fixture(scope="module")
def pairs():
    """1,000 English + 1,000 Korean pairs with 1-3 references each, empty/short hypotheses."""
    return {"en": random_pairs(1000, "en", seed=21, n_refs=0),
            "ko": random_pairs(1000, "ko", seed=22, n_refs=0)}


@pytest.mark.parametrize("word_order, whitespace, eps", SETTINGS)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_sentence_chrf_equals_sacrebleu(pairs, lang, word_order, whitespace, eps):
    hyps, refs = pairs[lang]
    kw = dict(word_order=word_order, whitespace=whitespace, eps_smoothing=eps)
    metric = CHRF(**kw)
    stats = chrf_stats(hyps, refs, **kw)
    assert stats.shape == (len(hyps), 3 * (6 + word_order))
    got = chrf_scores(stats, eps_smoothing=eps)
    expected = np.array([metric.sentence_score(h, r).score / 100 for h, r in zip(hyps, refs)])
    assert np.max(np.abs(got - expected)) <= TOL
    for i in range(0, len(hyps), 50):  # the public one-segment entry point
        assert abs(sentence_chrf(hyps[i], refs[i], **kw).score - expected[i]) <= TOL


@pytest.mark.parametrize("word_order", [0, 2])
def test_sentence_chrf_lowercase_equals_sacrebleu(pairs, word_order):
    hyps, refs = pairs["en"]
    metric = CHRF(word_order=word_order, lowercase=True)
    for h, r in list(zip(hyps, refs))[:200]:
        got = sentence_chrf(h, r, word_order=word_order, lowercase=True).score
        assert abs(got - metric.sentence_score(h, r).score / 100) <= TOL


@pytest.mark.parametrize("word_order, whitespace, eps", SETTINGS)
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_corpus_chrf_equals_sacrebleu(pairs, lang, word_order, whitespace, eps):
    hyps, refs = pairs[lang]
    kw = dict(word_order=word_order, whitespace=whitespace, eps_smoothing=eps)
    expected = CHRF(**kw).corpus_score(hyps, _streams(refs)).score / 100
    got = corpus_chrf(hyps, refs, **kw)
    assert abs(got.score - expected) <= TOL
    assert chrf_from_stats(chrf_stats(hyps, refs, **kw), word_order=word_order,
                           eps_smoothing=eps).score == got.score


def test_corpus_chrf_lowercase_and_beta(pairs):
    hyps, refs = pairs["ko"]
    for kw in (dict(lowercase=True), dict(beta=1), dict(beta=3, word_order=2), dict(char_order=4)):
        expected = CHRF(**kw).corpus_score(hyps, _streams(refs)).score / 100
        assert abs(corpus_chrf(hyps, refs, **kw).score - expected) <= TOL, kw


def test_lecture_pair():
    assert sentence_chrf(LECTURE_HYP, LECTURE_REF).score == pytest.approx(0.5351, abs=5e-5)
    assert sentence_chrf(LECTURE_HYP, LECTURE_REF, word_order=2).score == pytest.approx(0.5232, abs=5e-5)
    assert sentence_chrf(LECTURE_HYP, LECTURE_REF, whitespace=True).score == pytest.approx(0.6002, abs=5e-5)


@pytest.mark.parametrize("hyp, refs", [
    ("", ["abc"]), ("", [""]), ("abc", [""]), ("a", ["a"]), ("ab", ["abc def"]),
    ("(hi) there,", ["hi there"]), ("x y z", ["a b c", "x y", "x y z w"]), ("A b", ["a B"]),
])
@pytest.mark.parametrize("word_order, eps", [(0, False), (2, True), (2, False)])
def test_edge_cases_equal_sacrebleu(hyp, refs, word_order, eps):
    expected = CHRF(word_order=word_order, eps_smoothing=eps).sentence_score(hyp, refs).score / 100
    assert sentence_chrf(hyp, refs, word_order=word_order, eps_smoothing=eps).score == pytest.approx(expected, abs=TOL)


def test_summable_stats_and_bootstrap(pairs):
    hyps, refs = pairs["en"]
    stats = chrf_stats(hyps, refs, word_order=2)
    idx = np.random.default_rng(1).integers(0, len(hyps), size=(30, len(hyps)))
    boot = chrf_scores(stats[idx].sum(axis=1))
    for b, row in zip(boot, idx):
        assert b == chrf_from_stats(stats[row].sum(0), word_order=2).score


def test_signature_name_and_columns():
    from ragexam import __version__

    res = corpus_chrf(["a b"], [["a b", "a c"]], word_order=2)
    assert res.name == "chrF2++"
    assert res.signature == f"nrefs:2|case:mixed|eff:yes|nc:6|nw:2|space:no|beta:2|version:ragexam-{__version__}"
    assert sentence_chrf("a", "a", eps_smoothing=True, lowercase=True).signature.startswith(
        "nrefs:1|case:lc|eff:no|nc:6|nw:0|space:no|")
    assert chrf_stats_columns(2, 1) == ("char1_hyp", "char1_ref", "char1_match", "char2_hyp",
                                        "char2_ref", "char2_match", "word1_hyp", "word1_ref", "word1_match")
    assert str(res).startswith("chrF2++|nrefs:2|")


@pytest.mark.parametrize("call, match", [
    (lambda: corpus_chrf("abc", ["abc"]), "single str"),
    (lambda: corpus_chrf(["a", "b"], ["a"]), "2 hypotheses but 1"),
    (lambda: corpus_chrf(["a"], ["a"], word_order=-1), "word_order"),
    (lambda: corpus_chrf(["a"], ["a"], whitespace="yes"), "whitespace"),
    (lambda: chrf_from_stats(np.zeros(18), word_order=2), "needs 24 columns"),
    (lambda: chrf_scores(np.zeros(4)), "multiple of 3"),
    (lambda: sentence_chrf("a", []), "no reference"),
])
def test_input_errors(call, match):
    with pytest.raises(InputError, match=match):
        call()


def test_large_alphabet_equals_sacrebleu():
    """20,000 distinct CJK characters: 6-gram codes overflow 63 bits and are re-ranked."""
    rng = np.random.default_rng(81)
    chars = [chr(0x4E00 + i) for i in range(20_000)]
    hyps, refs = [], []
    for _ in range(1500):
        ref = "".join(chars[j] for j in rng.integers(0, len(chars), rng.integers(1, 40)))
        hyp = "".join(c if rng.random() < 0.85 else chars[rng.integers(0, len(chars))] for c in ref)
        hyps.append(hyp)
        refs.append([ref, ref[::2]][: int(rng.integers(1, 3))])
    for kw in (dict(), dict(word_order=2, eps_smoothing=True)):
        expected = CHRF(**kw).corpus_score(hyps, _streams(refs)).score / 100
        assert abs(corpus_chrf(hyps, refs, **kw).score - expected) <= TOL
        got = chrf_scores(chrf_stats(hyps, refs, **kw), eps_smoothing=kw.get("eps_smoothing", False))
        for i in range(0, len(hyps), 15):
            assert abs(got[i] - CHRF(**kw).sentence_score(hyps[i], refs[i]).score / 100) <= TOL
