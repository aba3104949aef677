"""normalize(): the one normalization of evidence matching, and its raw-offset map."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from ragexam.data.normalization import normalization_signature, normalize, normalize_with_offsets

# Korean-ish text with the characters normalization has to care about
ALPHABET = st.sampled_from(list("가나다라마바사아자차카타파하한글 \n\t.,!?-()「」“”'")
                           + ["\u00a0", "\u3000", "Ａ", "１", "①", "㈜", "ﬁ", "\u0301", "\u1100", "\u1161",
                              "\u11a8", "e", "Z", "7", "\u00a8"])
TEXTS = st.text(alphabet=ALPHABET, max_size=60)


def test_examples():
    assert normalize("  Ａ１ ①\t\n ㈜삼성  ") == "A1 1 (주)삼성"
    assert normalize("VPN\u00a0클라이언트를\u3000재설치") == "VPN 클라이언트를 재설치"
    assert normalize("v2.3, 재시작!", ignore_punctuation=True) == "v23 재시작"
    assert normalize("e\u0301") == "\u00e9"                     # composed
    assert normalize("\u1112\u1161\u11ab") == "한"              # conjoining jamo -> syllable
    assert normalize("") == "" and normalize(" \n ") == ""
    assert normalize("A+B < C", ignore_punctuation=True) == "A+B < C"   # symbols are kept
    assert normalization_signature() == "norm:nfkc+ws"
    assert normalization_signature(True) == "norm:nfkc+ws+nopunct"


def test_offsets_example():
    raw = "  ㈜삼성\n\n전자 "
    n = normalize_with_offsets(raw)
    assert n.text == "(주)삼성 전자"
    assert n.starts.tolist() == [2, 2, 2, 3, 4, 5, 7, 8]
    assert n.ends.tolist() == [3, 3, 3, 4, 5, 6, 8, 9]
    a = n.text.index("삼성 전자")
    assert n.raw_span(a, a + 5) == (3, 9) and raw[3:9] == "삼성\n\n전자"


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.booleans())
def test_offsets_version_agrees(text, ignore_punct):
    n = normalize_with_offsets(text, ignore_punctuation=ignore_punct)
    assert n.text == normalize(text, ignore_punctuation=ignore_punct)
    assert len(n.starts) == len(n.ends) == len(n.text)
    assert "\n" not in n.text and n.text == n.text.strip() and "  " not in n.text
    if len(n.text):
        assert (n.starts[1:] >= n.starts[:-1]).all() and (n.ends[1:] >= n.ends[:-1]).all()
        assert (n.starts >= 0).all() and (n.ends <= len(text)).all() and (n.starts < n.ends).all()
    for j, ch in enumerate(n.text):
        if ch != " ":
            piece = text[n.starts[j]:n.ends[j]]
            assert ch in normalize(piece, ignore_punctuation=ignore_punct)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("가나다라 \n\t.,!Ａ１①㈜")), max_size=40), st.booleans())
def test_idempotent(text, ignore_punct):
    once = normalize(text, ignore_punctuation=ignore_punct)
    assert normalize(once, ignore_punctuation=ignore_punct) == once
