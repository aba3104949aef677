"""The lecture handout's BLEU: reproduces the handout and is visibly non-standard."""

from __future__ import annotations

import pytest

from ragexam.errors import InputError
from ragexam.metrics.text import handout_bleu, sentence_bleu
from ragexam.metrics.text.synthetic import random_pairs

LECTURE_REF = "트랜스포머의 핵심 메커니즘은 셀프 어텐션으로, 입력 시퀀스의 모든 위치 간 관계를 병렬로 처리합니다."
LECTURE_HYP = "트랜스포머는 셀프 어텐션 메커니즘을 사용하여 시퀀스 내 모든 위치 간 관계를 병렬로 처리합니다."


def test_reproduces_the_handout():
    res = handout_bleu(LECTURE_REF, LECTURE_HYP, 4)
    assert round(res.bleu, 4) == 0.3955 and round(res.bp, 4) == 1.0
    assert res.precisions == pytest.approx((7 / 13, 5 / 12, 4 / 11, 3 / 10))
    assert res.signature.startswith("handout:yes|max_n:4|tok:whitespace|version:ragexam-")


def test_skipping_zero_orders_inflates_the_score():
    ref, hyp = "VPN 접속이 안 될 때는 OTP 시간을 확인하세요.", "VPN이 안 되면 OTP 앱 시간을 봐 주세요."
    res = handout_bleu(ref, hyp)
    assert res.precisions == (3 / 8, 0.0, 0.0, 0.0)
    assert res.bleu == 0.375  # = p1, i.e. BLEU-1
    standard = {s: sentence_bleu(hyp, ref, tokenize="none", smooth=s).score for s in ("none", "floor", "exp", "add-k")}
    assert standard["none"] == 0.0
    assert standard["floor"] == pytest.approx(0.0366, abs=1e-4)
    assert standard["exp"] == pytest.approx(0.0727, abs=1e-4)
    assert standard["add-k"] == pytest.approx(0.1828, abs=1e-4)
    assert all(v < res.bleu for v in standard.values())


def test_equals_standard_bleu_when_every_order_matches():
    hyps, refs = random_pairs(300, "ko", seed=41)
    n = 0
    for h, (r,) in zip(hyps, refs):
        res = handout_bleu(r, h)
        if len(h.split()) >= 4 and all(p > 0 for p in res.precisions):
            n += 1
            assert res.bleu == pytest.approx(sentence_bleu(h, r, tokenize="none", smooth="none").score, abs=1e-12)
    assert n > 50


@pytest.mark.parametrize("ref, hyp, bleu, bp", [
    ("a b c", "", 0.0, 0.0),       # empty hypothesis
    ("", "", 0.0, 1.0),
    ("a b c d", "a b", 1.0 * 2.718281828459045 ** (1 - 2), 2.718281828459045 ** (1 - 2)),
    ("a b", "x y", 0.0, 1.0),
])
def test_edge_cases(ref, hyp, bleu, bp):
    res = handout_bleu(ref, hyp)
    assert res.bleu == pytest.approx(bleu) and res.bp == pytest.approx(bp)


def test_input_errors():
    with pytest.raises(InputError, match="max_n"):
        handout_bleu("a", "a", max_n=0)
    with pytest.raises(InputError, match="reference"):
        handout_bleu(["a"], "a")
