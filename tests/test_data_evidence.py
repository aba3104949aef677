"""Evidence location, chunk coverage, boundary cuts and the overlap policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given, settings, strategies as st

from ragexam.data import (Chunk, CorpusText, Document, EvidenceIndex, Question, chunk_corpus, evidence_coverage,
                          load_corpus, load_qa, normalize)
from ragexam.data.chunking import Chunking
from ragexam.errors import InputError
from test_data_helpers import make_set

DOC = Document("hd_01", "VPN이 안 되면 재부팅하세요. 그래도 안 되면 VPN 클라이언트를 재설치합니다.")


def test_locate_raw_offsets_and_normalization():
    docs = [Document("a", "비밀번호는  ９０일마다\n바꿔야 합니다. 90일마다 바꿔야"), Document("b", "90일마다 바꿔야 합니다")]
    ct = CorpusText(docs)
    occ = ct.locate("90일마다 바꿔야")
    assert [(o.doc_id, o.start, o.end) for o in occ] == [("a", 7, 16), ("a", 22, 31), ("b", 0, 9)]
    assert docs[0].content[7:16] == "９０일마다\n바꿔야"
    assert ct.docs_containing("90일마다 바꿔야") == ["a", "b"]
    assert ct.locate("없음") == () and ct.locate("  ") == ()
    # overlapping occurrences are all found; a match never spans two documents
    ct2 = CorpusText([Document("x", "아아아"), Document("y", "아")])
    assert [(o.doc_id, o.start) for o in ct2.locate("아아")] == [("x", 0), ("x", 1)]
    assert ct2.locate("아 아") == ()


def test_whole_containment_and_cuts():
    chunking = chunk_corpus([DOC], "chars:20:0")
    idx = EvidenceIndex.build([DOC], chunking)
    ev = "VPN 클라이언트를 재설치"
    start = DOC.content.index(ev)
    assert (start, start + len(ev)) == (27, 41)
    assert idx.whole(ev) == frozenset() and idx.covering(ev) == frozenset()
    (cut,) = idx.cuts(ev)
    assert (cut.doc_id, cut.evidence_start, cut.evidence_end) == ("hd_01", 27, 41)
    assert cut.offsets == (40,) and cut.offset == 40
    assert cut.chunk_ids == ("hd_01#1", "hd_01#2")
    assert idx.whole("재부팅하세요") == {"hd_01#0"} and idx.cuts("재부팅하세요") == ()
    assert idx.signature == "chunker:chars:20:0|norm:nfkc+ws|cover:whole"
    # an overlapping window rescues it
    idx2 = EvidenceIndex.build([DOC], chunk_corpus([DOC], "chars:20:15"))
    assert idx2.whole(ev) and idx2.cuts(ev) == ()


def test_overlap_policy_exact_fraction():
    doc = Document("d", "가나다라마바사아자차")          # 10 characters
    chunks = [Chunk("d#0", "d", 0, 6, doc.content[0:6]), Chunk("d#1", "d", 6, 10, doc.content[6:10])]
    chunking = Chunking("custom", chunks)
    ev = "라마바사아"                                # raw [3, 8): 3 chars in d#0, 2 in d#1
    for f, expected in [(0.4, {"d#0", "d#1"}), (0.5, {"d#0"}), (0.6, {"d#0"}), (0.61, set()), (1.0, set())]:
        idx = EvidenceIndex.build([doc], chunking, min_fraction=f)
        assert idx.covering(ev) == expected, f
    assert EvidenceIndex.build([doc], chunking, min_fraction=0.5).signature.endswith("cover:overlap>=0.5")
    # fractions count normalized characters: a whitespace run is one character
    doc2 = Document("d", "가나   다라")                   # normalized "가나 다라" (5 chars)
    ch2 = Chunking("custom", [Chunk("d#0", "d", 0, 4, "가나  "), Chunk("d#1", "d", 4, 7, " 다라")])
    idx = EvidenceIndex.build([doc2], ch2, min_fraction=0.6)
    assert idx.covering("가나 다라") == {"d#0"}         # 가, 나 and the space: 3/5


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, "0.5", True])
def test_min_fraction_validated(bad):
    with pytest.raises(InputError, match="min_fraction"):
        EvidenceIndex.build([DOC], chunk_corpus([DOC], "whole"), min_fraction=bad)


TEXT = st.lists(st.sampled_from(["가", "나", "다", "라", " ", "  ", "\n", ".", ",", "Ａ", "１", "A", "1", "①"]),
                min_size=1, max_size=50).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.data(), st.sampled_from(["whole", "chars:7:0", "chars:9:4", "chars:3:1", "paragraphs:6"]),
       st.booleans())
def test_index_agrees_with_normalized_substring(content, data, spec, ignore_punct):
    assume(content.strip())
    a = data.draw(st.integers(0, len(content) - 1))
    b = data.draw(st.integers(a + 1, len(content)))
    ev = content[a:b]
    assume(normalize(ev, ignore_punctuation=ignore_punct))
    doc = Document("d", content)
    chunking = chunk_corpus([doc], spec)
    idx = EvidenceIndex.build([doc], chunking, ignore_punctuation=ignore_punct)
    nev = normalize(ev, ignore_punctuation=ignore_punct)
    brute = {c.chunk_id for c in chunking if nev in normalize(c.text, ignore_punctuation=ignore_punct)}
    assert idx.whole(ev) == brute
    # partial coverage is monotone in min_fraction and f = 1 is whole containment
    cov = [EvidenceIndex.build([doc], chunking, ignore_punctuation=ignore_punct, min_fraction=f).covering(ev)
           for f in (0.25, 0.5, 1.0)]
    assert cov[0] >= cov[1] >= cov[2] == brute


def _assert_cut_is_exact(index, doc_content_of, cov):
    """Every reported cut is a real chunk boundary inside a real occurrence that no chunk holds."""
    chunks = index.chunking
    assert not cov.chunk_ids and cov.cuts
    for cut in cov.cuts:
        raw = doc_content_of(cut.doc_id)[cut.evidence_start:cut.evidence_end]
        assert normalize(raw) == normalize(cov.evidence)
        doc_chunks = chunks.by_doc[cut.doc_id]
        overlapping = [c.chunk_id for c in doc_chunks if c.start < cut.evidence_end and c.end > cut.evidence_start]
        assert list(cut.chunk_ids) == overlapping and len(overlapping) >= 2
        bounds = sorted({x for c in doc_chunks if c.chunk_id in overlapping for x in (c.start, c.end)
                         if cut.evidence_start < x < cut.evidence_end})
        assert list(cut.offsets) == bounds and bounds
        assert not any(c.start <= cut.evidence_start and cut.evidence_end <= c.end for c in doc_chunks)


def _bundled_or_fixture(tmp_path: Path):
    from ragexam.data.datasets import bundled_path

    c, q = bundled_path("it_helpdesk", "corpus"), bundled_path("it_helpdesk", "qa")
    if c.exists() and q.exists():
        return c, q
    return make_set(tmp_path)


def test_same_qa_set_under_three_chunkers(tmp_path):
    """Under whole, chars:200:0 and sentences every evidence string is findable or its cut is reported."""
    c, q = _bundled_or_fixture(tmp_path)
    corpus = load_corpus(c)
    qa = load_qa(q, corpus=corpus)
    ct = CorpusText(corpus)                       # shared by the three chunkings
    n_evidence = sum(len(x.evidence) for x in qa)
    assert n_evidence > 0
    for spec in ("whole", "chars:200:0", "sentences"):
        index = EvidenceIndex.build(ct, chunk_corpus(corpus, spec))
        rows = evidence_coverage(qa, index)
        assert len(rows) == n_evidence
        for cov in rows:
            assert cov.found_in_corpus
            if cov.findable:
                for cid in cov.chunk_ids:
                    assert normalize(cov.evidence) in normalize(index.chunking[cid].text)
            else:
                _assert_cut_is_exact(index, lambda d: corpus[d].content, cov)
        if spec == "whole":
            assert all(r.findable for r in rows)


def test_cut_reported_for_fixture_under_small_chunks(tmp_path):
    c, q = make_set(tmp_path)
    corpus, qa = load_corpus(c), load_qa(c.parent / "qa.jsonl")
    index = EvidenceIndex.build(corpus, chunk_corpus(corpus, "chars:20:0"))
    rows = {(r.query_id, r.unit_id): r for r in evidence_coverage(qa, index)}
    r = rows[("q1", "ev1")]                      # "VPN 클라이언트를 재설치" at hd_01 [38, 52)
    assert not r.findable
    (cut,) = r.cuts
    assert (cut.doc_id, cut.evidence_start, cut.evidence_end, cut.offsets, cut.chunk_ids) == (
        "hd_01", 38, 52, (40,), ("hd_01#1", "hd_01#2"))
    _assert_cut_is_exact(index, lambda d: corpus[d].content, r)
    d = r.to_dict()
    assert d["findable"] is False and d["cuts"][0]["doc_id"] == "hd_01"


def test_evidence_not_in_corpus_has_no_cuts():
    idx = EvidenceIndex.build([DOC], chunk_corpus([DOC], "whole"))
    q = Question("q", "?", evidence=("없는 말",))
    (cov,) = evidence_coverage([q], idx)
    assert not cov.found_in_corpus and not cov.findable and cov.cuts == ()


def _find_loop(text, nev):
    out, p = [], text.find(nev)
    while p != -1:
        out.append(p)
        p = text.find(nev, p + 1)
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="가나다 .AＡ", min_size=1, max_size=30), min_size=1, max_size=6),
       st.text(alphabet="가나다 .A", min_size=1, max_size=5))
def test_bigram_index_finds_exactly_what_find_finds(contents, ev):
    docs = [Document(f"d{i}", c) for i, c in enumerate(contents)]
    small = CorpusText(docs)
    big = CorpusText(docs)
    big.BIGRAM_INDEX_MIN_CHARS = 0                  # force the bigram path
    nev = normalize(ev)
    assume(nev)
    assert big._find_all(nev) == _find_loop(big.text, nev) == small._find_all(nev)
    assert big.locate(ev) == small.locate(ev)


def test_bigram_index_falls_back_on_common_bigrams():
    docs = [Document("a", "가나" * 5000 + " 다라")]
    ct = CorpusText(docs)
    ct.BIGRAM_INDEX_MIN_CHARS = 0
    assert ct._bigram_candidates("가나가") is None            # 5000 candidates: scan instead
    assert len(ct.locate("가나가")) == 4999
    assert ct._bigram_candidates("나 다라") == [9999]
    assert [(o.start, o.end) for o in ct.locate("나 다라")] == [(9999, 10003)]
