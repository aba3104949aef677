"""The evidence machinery at scale: offsets computed only where evidence is, many strings located in one pass,
one CorpusText state per run, documents' chunk arrays built on first use -- each equal to the simple way."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.data import Document
from ragexam.data.chunking import chunk_corpus, parse_chunker
from ragexam.data.evidence import CorpusText, EvidenceIndex
from ragexam.data.normalization import normalize, normalize_with_offsets

# characters that exercise every normalization rule: whitespace runs, NBSP / ideographic space (NFKC to
# space), full-width letters and circled digits (NFKC), combining marks, conjoining jamo, punctuation, NUL
TRICKY = ["가", "나", "다", "a", "B", " ", "  ", "\n", "\t", "\u00a0", "\u3000", "Ａ", "①", "\u0301", "e",
          "\u1100", "\u1161", "\u11a8", ".", ",", "!", "(주)", "㈜", "x"]
texts = st.lists(st.sampled_from(TRICKY), max_size=12).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(texts, min_size=1, max_size=12), st.booleans(), st.data())
def test_corpus_text_and_offsets_equal_each_document_normalized_with_offsets(contents, ignore_punctuation, data):
    """The text is built with normalize() and the raw offsets only for documents where evidence is found; both
    equal normalize_with_offsets() of each document, joined by "\n" with -1 at the separators."""
    docs = [Document(f"d{i}", c) for i, c in enumerate(contents)]
    ct = CorpusText(docs, ignore_punctuation=ignore_punctuation)
    parts = [normalize_with_offsets(c, ignore_punctuation=ignore_punctuation) for c in contents]
    assert ct.text == "\n".join(p.text for p in parts)
    sep = [np.full(1, -1, dtype=np.int64)]
    starts = np.concatenate([x for i, p in enumerate(parts) for x in (sep if i else []) + [p.starts]])
    ends = np.concatenate([x for i, p in enumerate(parts) for x in (sep if i else []) + [p.ends]])
    assert np.array_equal(ct.starts, starts) and np.array_equal(ct.ends, ends)
    assert ct.doc_offsets.tolist() == np.cumsum([0] + [len(p.text) + 1 for p in parts[:-1]]).tolist()
    d = data.draw(st.integers(0, len(contents) - 1))
    if parts[d].text:  # a span inside one document reads the same offsets
        a = int(ct.doc_offsets[d])
        b = a + len(parts[d].text)
        got_s, got_e = ct.raw_offsets(a, b)
        assert np.array_equal(got_s, starts[a:b]) and np.array_equal(got_e, ends[a:b])


def _random_corpus(seed, n_docs=400):
    rng = np.random.default_rng(seed)
    syll = [chr(c) for c in rng.choice(np.arange(0xAC00, 0xAC00 + 60), size=30, replace=False)]
    docs = []
    for i in range(n_docs):
        words = ["".join(rng.choice(syll, size=int(rng.integers(1, 4)))) for _ in range(int(rng.integers(20, 60)))]
        docs.append(Document(f"doc{i:04d}", " ".join(words)))
    return docs


@pytest.mark.parametrize("seed", [0, 1])
def test_prefetch_equals_one_lookup_at_a_time(seed, monkeypatch):
    """Big-text path (the batch q-gram pass) against str.find, including overlapping occurrences, strings
    shorter than the q-gram, strings found nowhere and very common ones."""
    docs = _random_corpus(seed)
    rng = np.random.default_rng(seed + 10)
    evidence = []
    for _ in range(60):
        d = docs[int(rng.integers(len(docs)))].content
        a = int(rng.integers(0, len(d) - 20))
        evidence.append(d[a:a + int(rng.integers(2, 20))])
    evidence += ["없는문자열입니다", docs[0].content[:3], "가가가가가가", docs[5].content.split(" ")[0]]
    monkeypatch.setattr(CorpusText, "BIGRAM_INDEX_MIN_CHARS", 1000)  # the corpus is small: force the big path
    fast = CorpusText(docs)
    fast.prefetch(evidence)
    got = {e: fast.locate(e) for e in evidence}
    del fast
    gc.collect()
    monkeypatch.setattr(CorpusText, "BIGRAM_INDEX_MIN_CHARS", 10 ** 12)  # plain str.find
    slow = CorpusText(docs)
    assert {e: slow.locate(e) for e in evidence} == got
    assert any(len(v) > 1 for v in got.values())  # the set has repeated occurrences


def test_bigram_index_after_many_single_lookups_gives_the_same(monkeypatch):
    docs = _random_corpus(3, n_docs=200)
    probes = [d.content[5:14] for d in docs[:40]]
    monkeypatch.setattr(CorpusText, "BIGRAM_INDEX_MIN_CHARS", 1000)
    monkeypatch.setattr(CorpusText, "BIGRAM_AFTER_SCANS", 5)
    a = CorpusText(docs)
    got = [a.locate(p) for p in probes]
    assert a._state.bigrams is not None  # switched to the index after 5 scans
    del a
    gc.collect()
    monkeypatch.setattr(CorpusText, "BIGRAM_AFTER_SCANS", 10 ** 9)
    b = CorpusText(docs)
    assert [b.locate(p) for p in probes] == got and b._state.bigrams is None


def test_one_state_per_document_list_while_it_lives():
    docs = _random_corpus(4, n_docs=20)
    a = CorpusText(docs)
    a.locate(docs[3].content[:8])
    b = CorpusText(list(docs))  # the same document objects: the same state, the located string shared
    assert b._state is a._state and b._cache is a._cache and b._cache
    assert CorpusText(docs, ignore_punctuation=True)._state is not a._state
    copies = [Document(d.doc_id, d.content) for d in docs]  # equal but other objects: not shared
    assert CorpusText(copies)._state is not a._state


def test_index_builds_document_arrays_only_where_evidence_is():
    docs = _random_corpus(5, n_docs=50)
    chunking = chunk_corpus(docs, parse_chunker("chars:40:0"))
    ev = docs[7].content[10:25]
    index = EvidenceIndex.build(docs, chunking, evidence=[ev])
    touched = set(dict.keys(index._doc_arrays))
    assert touched and touched <= set(index.corpus_text.docs_containing(ev))
    # and the answer equals a text-level check of every chunk
    expected = {c.chunk_id for c in chunking if normalize(ev) in normalize(c.text)}
    assert index.whole(ev) == expected
