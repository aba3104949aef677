"""EvidenceMatcher: the one text-level evidence rule, used by relevance, diagnosis and the missed-question
excerpts (and by graded external contexts)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from ragexam.analysis.exam.summarize import _around_evidence
from ragexam.data.evidence import EvidenceMatcher, longest_common_substring
from ragexam.data.normalization import normalize


def test_whole_cover_is_normalized_substring():
    m = EvidenceMatcher()
    text = "공용망에서 UDP\n   4500 포트가 막히면\tVPN이 끊깁니다."
    assert m.covers(text, "UDP 4500 포트")
    assert m.covers(text, "ＵＤＰ 4500 포트")  # NFKC full-width
    assert not m.covers(text, "TCP 443")
    assert not m.covers(text, "   ")  # empty after normalization covers nothing
    assert m.covered(text, {"e1": "UDP 4500", "e2": "TCP 443", "e3": "VPN이"}) == ["e1", "e3"]


def test_fraction_cover():
    m = EvidenceMatcher(min_fraction=0.5)
    assert m.covers("... 재시작 후 확인 ...", "재시작 후 확인하세요 반드시")  # 8 of 14 chars
    assert not EvidenceMatcher(min_fraction=0.9).covers("... 재시작 후 확인 ...", "재시작 후 확인하세요 반드시")
    assert m.signature.endswith("cover:overlap>=0.5")


def test_spans_map_back_to_raw_text():
    m = EvidenceMatcher()
    text = "가나다 UDP\n\n4500 포트 ... UDP 4500 포트"
    spans = m.spans(text, "UDP 4500 포트")
    assert len(spans) == 2
    assert [normalize(text[s:e]) for s, e in spans] == ["UDP 4500 포트"] * 2
    assert m.spans(text, "없는 문자열") == []


def test_missed_excerpt_keeps_evidence_that_crosses_a_line_break():
    """The excerpt of a missed question's correct chunk was cut around a raw ``str.find``, so evidence
    written across a line break counted as found but was left out of the excerpt (issue 10)."""
    filler = "관련 없는 안내 문장입니다. " * 30
    text = filler + "재택근무 시 VPN 접속은\n사내 OTP 앱으로 인증해야 합니다." + filler
    ev = "VPN 접속은 사내 OTP 앱으로 인증해야 합니다"
    out = _around_evidence(text, [ev])
    assert ev in normalize(out)
    assert out.startswith("…")


@given(st.text(alphabet="가나다 \n\tab.,", max_size=40), st.text(alphabet="가나다 ab", min_size=1, max_size=6))
def test_covers_equals_normalized_containment(text, ev):
    nev = normalize(ev)
    assert EvidenceMatcher().covers(text, ev) == (bool(nev) and nev in normalize(text))


def test_longest_common_substring_against_brute_force():
    rng = random.Random(7)
    for _ in range(300):
        a = "".join(rng.choice("가나다ab") for _ in range(rng.randint(0, 9)))
        b = "".join(rng.choice("가나다ab") for _ in range(rng.randint(0, 12)))
        brute = max([j - i for i in range(len(a)) for j in range(i + 1, len(a) + 1) if a[i:j] in b] + [0])
        assert longest_common_substring(a, b) == brute


def _brute_lcs(a, b):
    return max([j - i for i in range(len(a)) for j in range(i + 1, len(a) + 1) if a[i:j] in b] + [0])


@given(st.text(alphabet="가나다ab", max_size=14), st.text(alphabet="가나다abc", max_size=18),
       st.sampled_from([4_000_000, 0]))
def test_longest_common_piece_both_ways_against_brute_force(a, b, direct_work):
    """The direct search (small pairs) and the suffix automaton (large pairs) give a longest common piece: one of
    both strings, as long as the brute force's."""
    from ragexam.data import evidence

    saved = evidence._DIRECT_WORK
    evidence._DIRECT_WORK = direct_work
    try:
        piece = evidence.longest_common_piece(a, b)
    finally:
        evidence._DIRECT_WORK = saved
    assert piece in a and piece in b and len(piece) == _brute_lcs(a, b)


def test_a_long_evidence_string_against_a_document_takes_linear_work(monkeypatch):
    """950,000 characters against a 20,000-character document: the automaton is built on the shorter string and
    the longer is read once (the old search sliced per position per step: 38-69 s).  Counted, not timed: the
    number of automaton steps is linear in the two lengths."""
    from ragexam.data import evidence

    rng = random.Random(3)
    doc = "".join(rng.choice("가나다라마바사 ") for _ in range(20_000))
    ev = doc[5_000:5_300] + "".join(rng.choice("abcdefgh ") for _ in range(949_700))
    assert evidence.longest_common_piece(ev, doc) == doc[5_000:5_300]
    assert evidence.longest_common_substring(doc, ev) == 300
