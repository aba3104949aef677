"""Chunkers: offsets invariant, coverage, overlap, packing, spec parsing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from ragexam.data import Document, chunk_corpus, parse_chunker
from ragexam.data.chunking import CHUNKER_FORMS, paragraph_spans, sentence_spans
from ragexam.errors import InputError

WORDS = st.sampled_from(["VPN", "클라이언트를", "재설치합니다.", "관리자", "권한이", "필요합니다!", "그래도",
                         "안", "되면", "재부팅하세요?", "비밀번호는", "90일마다", "바꿔야", "합니다.", "\n",
                         "\n\n", "\n \n", "  ", "-", "1.", "😀", "e\u0301"])
CONTENT = st.lists(WORDS, min_size=0, max_size=40).map(" ".join)


def _check_invariants(content, chunks, *, every_char):
    assert [c.chunk_id for c in chunks] == [f"d#{i}" for i in range(len(chunks))]
    for c in chunks:
        assert content[c.start:c.end] == c.text and c.doc_id == "d"
        assert 0 <= c.start < c.end <= len(content)
    for a, b in zip(chunks, chunks[1:]):
        assert a.start <= b.start and a.end <= b.end
    covered = [False] * len(content)
    for c in chunks:
        for i in range(c.start, c.end):
            covered[i] = True
    for i, ch in enumerate(content):
        if every_char or not ch.isspace():
            assert covered[i], (i, ch)


@settings(max_examples=200, deadline=None)
@given(CONTENT, st.integers(1, 60), st.data())
def test_chars_invariants(content, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = parse_chunker(f"chars:{size}:{overlap}").chunk_text("d", content)
    _check_invariants(content, chunks, every_char=True)
    assert all(len(c.text) <= size for c in chunks)
    for i, c in enumerate(chunks):
        assert c.start == i * (size - overlap)
    for a, b in zip(chunks, chunks[1:]):
        assert a.end - b.start == overlap          # overlap honoured exactly
    if content:
        assert chunks[-1].end == len(content)
        assert all(c.end < len(content) for c in chunks[:-1])   # nothing after the end is reached


@settings(max_examples=100, deadline=None)
@given(CONTENT, st.sampled_from(["whole", "sentences", "sentences:1", "sentences:40", "sentences:200",
                                 "paragraphs", "paragraphs:30", "paragraphs:500"]))
def test_unit_chunkers_invariants(content, spec):
    ch = parse_chunker(spec)
    chunks = ch.chunk_text("d", content)
    _check_invariants(content, chunks, every_char=(spec == "whole"))
    if spec == "whole":
        assert [(c.start, c.end) for c in chunks] == ([(0, len(content))] if content else [])
        return
    for c in chunks:
        assert not c.text[0].isspace() and not c.text[-1].isspace()
    units = sentence_spans(content) if spec.startswith("sentences") else paragraph_spans(content)
    size = ch.size
    if spec.startswith("paragraphs") and size is not None:  # long paragraphs are split into their sentences
        units = [u for p in units for u in ([p] if p[1] - p[0] <= size else
                                            [(p[0] + a, p[0] + b) for a, b in sentence_spans(content[p[0]:p[1]])])]
    for c in chunks:
        inside = [u for u in units if c.start <= u[0] and u[1] <= c.end]
        if spec.startswith("paragraphs") and size is not None and not inside:
            # a window of one sentence longer than SIZE
            assert any(u[0] <= c.start and c.end <= u[1] and u[1] - u[0] > size for u in units)
            assert len(c.text) <= size
            continue
        assert inside and inside[0][0] == c.start and inside[-1][1] == c.end   # whole units only
        if size is None:
            assert len(inside) == 1
        elif len(c.text) > size:
            assert spec.startswith("sentences") and len(inside) == 1  # only a single over-long sentence


def test_sentences_korean():
    text = ("VPN이 연결되지 않으면 먼저 재부팅하세요. 그래도 안 되면 VPN 클라이언트를 재설치합니다!\n"
            "- 관리자 권한 필요\n- 내선 1234")
    got = [c.text for c in parse_chunker("sentences").chunk_text("hd_01", text)]
    assert got == ["VPN이 연결되지 않으면 먼저 재부팅하세요.", "그래도 안 되면 VPN 클라이언트를 재설치합니다!",
                   "- 관리자 권한 필요", "- 내선 1234"]
    packed = parse_chunker("sentences:60").chunk_text("hd_01", text)
    assert [c.text for c in packed] == [
        "VPN이 연결되지 않으면 먼저 재부팅하세요. 그래도 안 되면 VPN 클라이언트를 재설치합니다!",
        "- 관리자 권한 필요\n- 내선 1234"]
    assert [c.chunk_id for c in packed] == ["hd_01#0", "hd_01#1"]
    # an over-long sentence stays whole
    long = parse_chunker("sentences:10").chunk_text("d", text)
    assert long[0].text == "VPN이 연결되지 않으면 먼저 재부팅하세요."


def test_paragraphs():
    text = "첫 문단입니다.\n둘째 줄.\n \n둘째 문단.\n\n\n셋째."
    assert [text[s:e] for s, e in paragraph_spans(text)] == ["첫 문단입니다.\n둘째 줄.", "둘째 문단.", "셋째."]
    assert [c.text for c in parse_chunker("paragraphs:25").chunk_text("d", text)] == [
        "첫 문단입니다.\n둘째 줄.\n \n둘째 문단.", "셋째."]
    # a paragraph longer than SIZE is split at its sentences, packed up to SIZE
    assert [c.text for c in parse_chunker("paragraphs:12").chunk_text("d", text)] == [
        "첫 문단입니다.", "둘째 줄.", "둘째 문단.\n\n\n셋째."]


@pytest.mark.parametrize("spec", ["whole", "chars:400:80", "chars:1:0", "sentences", "sentences:300",
                                  "paragraphs", "paragraphs:1000", "recursive:500:50", "tokens:256:32", "semantic",
                                  "semantic:90", "semantic:92.5"])
def test_spec_round_trips(spec):
    ch = parse_chunker(spec)
    assert ch.spec == spec and parse_chunker(ch.spec) == ch and parse_chunker(ch) is ch
    assert repr(ch) == f"parse_chunker({spec!r})"


@pytest.mark.parametrize("spec", ["", "chars", "chars:400", "chars:400:400", "chars:0:0", "chars:08:0",
                                  "sentences:0", "sentences:-3", "paragraphs:x", "words:3", "whole:1",
                                  " whole", 42, "recursive:500", "recursive:50:50", "tokens:0:0", "semantic:101",
                                  "semantic:x", "semantic:95:1"])
def test_bad_specs(spec):
    with pytest.raises(InputError) as info:
        parse_chunker(spec)
    msg = str(info.value)
    assert msg.startswith("chunker: ")
    for form in CHUNKER_FORMS:
        assert form in msg


def test_chunk_corpus():
    docs = [Document("a", "하나. 둘."), Document("b", "셋.")]
    chunking = chunk_corpus(docs, "sentences")
    assert chunking.spec == "sentences"
    assert [c.chunk_id for c in chunking] == ["a#0", "a#1", "b#0"]
    assert chunking["a#1"].text == "둘." and [c.chunk_id for c in chunking.by_doc["a"]] == ["a#0", "a#1"]


def test_chunker_help_lists_every_form():
    from ragexam.data.chunking import chunker_help

    text = chunker_help()
    assert all(form in text for form in CHUNKER_FORMS) and "Default: paragraphs:400" in text


@pytest.mark.parametrize("spec,suggestion", [
    ("paragraph:400", "paragraphs:400"), ("Paragraphs", "paragraphs"), ("recursiv:500:50", "recursive:500:50"),
    ("sentence:3", "sentences:3"), ("token:256:32", "tokens:256:32")])
def test_a_misspelt_chunker_name_is_suggested_with_the_rest_kept(spec, suggestion):
    with pytest.raises(InputError) as err:
        parse_chunker(spec)
    assert str(err.value).endswith(f"Did you mean '{suggestion}'?")
    parse_chunker(suggestion)  # the suggestion itself is valid


@pytest.mark.parametrize("spec", ["zzz:1", "paragraphs:400x", "para{x}:3"])
def test_no_chunker_suggestion_without_a_close_name(spec):
    with pytest.raises(InputError) as err:
        parse_chunker(spec)
    assert "Did you mean" not in str(err.value)
