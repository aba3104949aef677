"""Chunkers: offsets invariant, coverage, overlap, packing, spec parsing."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from ragexam.data import Document, chunk_corpus, parse_chunker
from ragexam.data.chunking import CHUNKER_FORMS, latin_sentence_starts, paragraph_spans, sentence_spans
from ragexam.errors import InputError

WORDS = st.sampled_from(["VPN", "클라이언트를", "재설치합니다.", "관리자", "권한이", "필요합니다!", "그래도",
                         "안", "되면", "재부팅하세요?", "비밀번호는", "90일마다", "바꿔야", "합니다.", "\n",
                         "\n\n", "\n \n", "  ", "-", "1.", "😀", "e\u0301", "Users", "port", "443.", "e.g.",
                         "Mr.", "a.b@c.com.", "3.5", "Done…", "\"Go.\""])
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



def _sentences(text):
    return [text[a:b] for a, b in sentence_spans(text)]


def test_english_sentences_end_at_a_period():
    # Kiwi (0.24) ends English sentences at ! and ? only: the reviewer's texts were one span and two
    assert _sentences("The VPN uses port 443. Users must log in first. Printers are on floor three.") == [
        "The VPN uses port 443.", "Users must log in first.", "Printers are on floor three."]
    assert _sentences("Hello world. This is a test! Is it split?") == ["Hello world.", "This is a test!",
                                                                       "Is it split?"]
    assert _sentences('He said "Go." Then he left (see the log.) After that… Nothing. Really?! Yes.') == [
        'He said "Go."', "Then he left (see the log.)", "After that…", "Nothing.", "Really?!", "Yes."]


@pytest.mark.parametrize("text", [
    "Set the ratio to 3.5 before you start.", "Install v1.2.3 or version 2.0 today.",
    "Write to help.desk@corp.example.com for access.", "See https://wiki.example.com/vpn.setup for details.",
    "J. R. R. Tolkien and John F. Kennedy met Mr. Smith and Dr. Kim.",
    "Tools e.g. Word, i.e. Office, etc. Excel, vs. Apple Inc. Products.", "See No. 5 and Fig. 3 for the U.S. Army.",
    "1. Open the app. 2. Click the button.", "It failed. then it worked.",
])
def test_no_sentence_end_inside_numbers_addresses_abbreviations_or_lists(text):
    assert _sentences(text) == [text]


def test_korean_and_mixed_sentences_are_kiwis():
    # no Latin letter or digit before the mark, or no capital after it: Kiwi alone decides (as before)
    for text, kiwi in [("Windows 10. 재부팅하세요.", ["Windows 10. 재부팅하세요."]),
                       ("설정을 확인합니다. Windows 10에서는 다릅니다.", ["설정을 확인합니다.", "Windows 10에서는 다릅니다."]),
                       ("오류 0x80070005. VPN을 확인하세요.", ["오류 0x80070005.", "VPN을 확인하세요."])]:
        assert _sentences(text) == kiwi
    assert latin_sentence_starts("재부팅하세요. Windows를 켭니다.") == []
    assert latin_sentence_starts("Windows 10. 재부팅") == []
    assert latin_sentence_starts("Update Windows 10. Then restart.") == [19]


def test_english_paragraphs_are_split_at_sentences_not_cut():
    # the reviewer's run: paragraphs of seven short sentences (~340 characters) cut 6 "sentences" under paragraphs:200
    paragraph = " ".join(f"The VPN rule number {k} applies to every employee in the main office." for k in range(7))
    docs = [Document(f"d{i}", paragraph + "\n\n" + paragraph) for i in range(3)]
    chunking = chunk_corpus(docs, "paragraphs:200")
    assert chunking.cut_sentences == 0
    assert all(c.text.endswith("office.") and len(c.text) <= 200 for c in chunking)
    assert len(chunk_corpus(docs, "sentences")) == 42


_EN_WORDS = st.sampled_from(["port", "users", "VPN", "3.5", "v1.2", "a.b@c.com", "https://x.com/a.b", "e.g.",
                             "Mr.", "Dr.", "etc.", "vs.", "J.", "i.e.", "443", "Windows", "ok", "(see", "log)"])
_EN_SENTENCE = st.tuples(st.sampled_from(["The", "Users", "Printers", "\"Go", "(Windows", "Each", "Ωmega"]),
                         st.lists(_EN_WORDS, max_size=8),
                         st.sampled_from(["443", "floor", "it", "v1.2", "a.b@c.com", "https://x.com/a", "Kim",
                                          "log)"]),
                         st.sampled_from([".", "!", "?", "…", "...", ".\"", "?)", ".\u201d"]))
_SPACES = st.sampled_from([" ", "  ", "\t", " \u00a0"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_EN_SENTENCE, _SPACES), min_size=1, max_size=6))
def test_english_sentences_are_found_exactly(parts):
    sentences = [" ".join([first, *middle, last]) + mark for (first, middle, last, mark), _ in parts]
    text = "".join(s + space for s, (_, space) in zip(sentences, parts))
    starts = [text.index(s, sum(len(x) for x in sentences[:i])) for i, s in enumerate(sentences)]
    assert latin_sentence_starts(text) == starts[1:]  # the rule alone: every sentence end, nothing else
    # with Kiwi's sentences (which may end elsewhere too, e.g. after a closing parenthesis)
    assert set(starts) <= {a for a, _ in sentence_spans(text)}


_MIXED_WORDS = st.one_of(_EN_WORDS, st.sampled_from([".", "Then", "No.", "A.", "\n", "재부팅하세요.", "다.", "…",
                                                     "Users.", "1.", "ii."]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_MIXED_WORDS, _SPACES), max_size=40))
def test_sentence_spans_cover_the_text_in_order_and_never_split_inside_a_word(words):
    text = "".join(w + space for w, space in words)
    spans = sentence_spans(text)
    for (a, b), (c, d) in zip(spans, spans[1:]):
        assert a < b <= c < d  # in order, never overlapping
    covered = {i for a, b in spans for i in range(a, b)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())
    assert all(not text[a].isspace() and not text[b - 1].isspace() and "\n" not in text[a:b] for a, b in spans)
    inside = {x for span in spans for x in span}
    for token in ("3.5", "v1.2", "a.b@c.com", "https://x.com/a.b"):  # a sentence never starts or ends inside one
        for at in (m.start() for m in re.finditer(re.escape(token), text)):
            assert not any(at < x < at + len(token) for x in inside), (token, text)
    # the rule added to Kiwi's never ends a sentence after an abbreviation or an initial
    for abbreviation in ("e.g. ", "Mr. ", "Dr. ", "etc. ", "vs. ", "J. ", "i.e. ", "A. "):
        for at in (m.end() for m in re.finditer(re.escape(abbreviation), text)):
            assert at not in latin_sentence_starts(text), (abbreviation, text)

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
