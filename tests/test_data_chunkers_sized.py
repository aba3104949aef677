"""Chunkers that keep their size: ``paragraphs:N`` on blank-line-free Korean text, ``recursive`` equal to
LangChain's RecursiveCharacterTextSplitter, ``tokens`` equal to LangChain's token-window rule, ``semantic``
equal to LangChain's SemanticChunker, the size statistics and the embedder-window report."""

from __future__ import annotations

import functools
import json
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragexam.data import Document, chunk_corpus, parse_chunker
from ragexam.data.chunking import (RECURSIVE_SEPARATORS, SemanticChunker, TokenChunker, sentence_spans,
                                   sentence_spans_many, window_report)
from ragexam.errors import InputError

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "ragexam" / "data" / "samples"


@functools.lru_cache(maxsize=1)
def _korean_sentences():
    """Every sentence of the bundled Korean corpora, whitespace collapsed."""
    out = []
    for name in ("ai_concepts", "it_helpdesk"):
        for line in (SAMPLES / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            content = " ".join(json.loads(line)["content"].split())
            out.extend(content[a:b] for a, b in sentence_spans(content))
    return out


def long_paragraph_corpus(seed=0, n_docs=40):
    """Documents of 800-3,000 characters with no line break at all (as Wikipedia dumps or PDF extractions),
    two of them holding one sentence of about 600 characters."""
    rng = random.Random(seed)
    sents = _korean_sentences()
    docs = []
    for i in range(n_docs):
        parts, size = [], rng.randint(800, 3000)
        while sum(map(len, parts)) < size:
            parts.append(rng.choice(sents))
        if i in (3, 17):  # one sentence alone longer than 400 characters
            parts.insert(2, ", ".join(s.rstrip(".") for s in rng.sample(sents, 12))[:600] + "다.")
        docs.append(Document(f"d{i}", " ".join(parts)))
    return docs


def test_paragraphs_400_keeps_its_size_on_long_korean_paragraphs():
    docs = long_paragraph_corpus(n_docs=25)
    assert all("\n" not in d.content and len(d.content) > 400 for d in docs)
    chunking = chunk_corpus(docs, "paragraphs:400")
    assert max(len(c.text) for c in chunking) <= 400
    # only the sentences longer than 400 characters were cut inside, and they were counted
    sentences = sentence_spans_many([d.content for d in docs])
    long_sentences = sum(1 for sents in sentences for a, b in sents if b - a > 400)
    assert long_sentences >= 2 and chunking.cut_sentences == long_sentences
    stats = chunking.stats()
    assert stats.n == len(chunking) > len(docs) * 2 and stats.max <= 400 and stats.cut_sentences == long_sentences
    assert 250 < stats.mean <= 400
    # every other chunk is made of whole sentences; a cut one is in windows of at most 400 characters
    cut = 0
    for d, sents in zip(docs, sentences):
        starts, ends = {a for a, _ in sents}, {b for _, b in sents}
        for c in chunking.by_doc[d.doc_id]:
            inside_long = any(a <= c.start and c.end <= b and b - a > 400 for a, b in sents)
            assert inside_long or (c.start in starts and c.end in ends)
            cut += inside_long
    assert cut >= 2 * long_sentences
    # the whole paragraph would have been one chunk of up to 3,000 characters before
    assert max(len(c.text) for c in chunk_corpus(docs, "paragraphs")) > 800


# -- recursive = LangChain's RecursiveCharacterTextSplitter ----------------------------------------------------

PIECES = st.sampled_from(["VPN", "클라이언트를", "재설치합니다.", "관리자", "권한이", "필요합니다!", "그래도", "안",
                          "되면", "재부팅하세요?", "Reboot.", "first", "\n", "\n\n", "\n \n", "  ", "。", "😀",
                          "e\u0301", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa"])
TEXT = st.lists(PIECES, min_size=0, max_size=60).map(" ".join)


def _langchain_recursive(size, overlap):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap,
                                          separators=list(RECURSIVE_SEPARATORS), is_separator_regex=True)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(1, 80), st.data())
def test_recursive_equals_langchain(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    ch = parse_chunker(f"recursive:{size}:{overlap}")
    chunks = ch.chunk_text("d", text)
    assert [c.text for c in chunks] == _langchain_recursive(size, overlap).split_text(text)
    for c in chunks:  # with SIZE 1 a lone whitespace character is a chunk, as in LangChain
        assert text[c.start:c.end] == c.text and (size == 1 or not (c.text[0].isspace() or c.text[-1].isspace()))


@settings(max_examples=200, deadline=None)
@given(st.text(st.sampled_from("ab가\t\u3000😀"), max_size=300), st.integers(1, 40), st.data())
def test_recursive_equals_langchain_without_a_separator(text, size, data):
    """A text with no paragraph, line, sentence or space separator is cut between characters (merged as windows,
    issue 39: LangChain's merge dropped the head of its list one piece at a time, quadratic on a 1 MB blob)."""
    overlap = data.draw(st.integers(0, size - 1))
    chunks = parse_chunker(f"recursive:{size}:{overlap}").chunk_text("d", text)
    assert [c.text for c in chunks] == _langchain_recursive(size, overlap).split_text(text)


def test_recursive_on_a_long_blob_equals_langchain():
    """A minified blob (no separator at all) and a base64-like run with rare spaces, far longer than SIZE."""
    rng = random.Random(7)
    blob = "".join(rng.choice("abcdefghij0123456789+/=") for _ in range(20_000))
    spaced = " ".join(blob[i:i + rng.randint(500, 3000)] for i in range(0, 20_000, 2500))
    for text in (blob, spaced, "\t" * 50 + blob[:5000] + "\u3000" * 30):
        for size, overlap in ((6000, 0), (1000, 999), (777, 100), (2, 1)):
            assert [c.text for c in parse_chunker(f"recursive:{size}:{overlap}").chunk_text("d", text)] == \
                _langchain_recursive(size, overlap).split_text(text)


def test_recursive_equals_langchain_on_korean_documents():
    docs = long_paragraph_corpus(1, 15) + [Document(f"s{i}", json.loads(line)["content"]) for i, line in enumerate(
        (SAMPLES / "ai_concepts" / "corpus.jsonl").read_text(encoding="utf-8").splitlines())]
    for size, overlap in ((500, 50), (300, 0), (120, 30)):
        splitter = _langchain_recursive(size, overlap)
        for d in docs:
            assert [c.text for c in parse_chunker(f"recursive:{size}:{overlap}").chunk(d)] == \
                splitter.split_text(d.content)


# -- tokens = LangChain's token windows -------------------------------------------------------------------------


class WordTokens:
    """A toy tokenizer: every run of non-spaces is a token (the Protocol's ``spans``)."""

    name = "words"

    def spans(self, text):
        return [m.span() for m in re.finditer(r"\S+", text)]


@settings(max_examples=200, deadline=None)
@given(TEXT, st.integers(1, 12), st.data())
def test_tokens_equal_langchain_split_text_on_tokens(text, size, data):
    from langchain_text_splitters.base import Tokenizer, split_text_on_tokens

    overlap = data.draw(st.integers(0, size - 1))
    tok = WordTokens()
    spans = tok.spans(text)
    lc = Tokenizer(chunk_overlap=overlap, tokens_per_chunk=size, decode=lambda ids: text[spans[ids[0]][0]:spans[ids[-1]][1]],
                   encode=lambda t: list(range(len(tok.spans(t)))))
    ours = parse_chunker(f"tokens:{size}:{overlap}").bind(tok).chunk_text("d", text)
    assert [c.text for c in ours] == split_text_on_tokens(text=text, tokenizer=lc)
    assert all(len(tok.spans(c.text)) <= size for c in ours)


def test_tokens_and_semantic_need_a_bound_model():
    with pytest.raises(InputError, match="none is bound; bind one with ragexam.retrieval.chunk_models.bind_chunker"):
        parse_chunker("tokens:256:32").spans("한 문장.")
    with pytest.raises(InputError, match="no embedding function is bound"):
        parse_chunker("semantic").spans("첫 문장입니다. 둘째 문장입니다.")
    assert parse_chunker("semantic").spans("한 문장뿐.") == [(0, 6)]  # one sentence needs no embedding
    assert isinstance(parse_chunker("tokens:8:2").bind(WordTokens()), TokenChunker)


# -- semantic = LangChain's SemanticChunker ---------------------------------------------------------------------


def _fake_vectors(texts):
    """Deterministic 'embeddings': counts of the non-space characters in 16 hashed buckets, plus a topic marker.
    Additive: the vector of ``" ".join(parts)`` is the sum of the parts' vectors (LangChain embeds the joined
    neighbourhood of a sentence, ragexam sums its sentences' vectors: the same for such an embedder)."""
    out = np.zeros((len(texts), 17))
    for i, t in enumerate(texts):
        for ch in t:
            if ch != " ":
                out[i, ord(ch) % 16] += 1.0
        out[i, 16] = 25.0 * t.count("#")
    return out


def test_semantic_equals_langchain_semantic_chunker():
    pytest.importorskip("langchain_experimental")
    from langchain_core.embeddings import Embeddings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_experimental.text_splitter import SemanticChunker as LCSemantic

    class Fake(Embeddings):
        def embed_documents(self, texts):
            return _fake_vectors(texts).tolist()

        def embed_query(self, text):
            return _fake_vectors([text])[0].tolist()

    rng = random.Random(4)
    sents = [s for s in _korean_sentences() if re.search(r"[.?!]$", s) and not re.search(r"[.?!]\s", s)]
    regex = r"(?<=[.?!])\s+"

    def regex_sentences(text):
        out, at = [], 0
        for m in re.finditer(regex, text):
            out.append((at, m.start()))
            at = m.end()
        return out + [(at, len(text))]

    for percentile in (95.0, 80.0, 50.0):
        for _ in range(15):
            parts = [rng.choice(sents) + (" #" * rng.randint(0, 2)).replace(" #", "#") for _ in range(rng.randint(1, 25))]
            parts = [p if re.search(r"[.?!]$", p) else p + "." for p in parts]
            text = " ".join(parts)
            lc = LCSemantic(Fake(), breakpoint_threshold_amount=percentile).split_text(text)
            ours = SemanticChunker(percentile, _fake_vectors, regex_sentences).chunk_text("d", text)
            assert [c.text for c in ours] == lc


def test_semantic_batches_documents_in_one_embedding_call():
    calls = []

    def embed(texts):
        calls.append(len(texts))
        return _fake_vectors(texts)

    docs = [Document("a", "VPN을 다시 설치합니다. 관리자 권한이 필요합니다. 그래도 안 되면 재부팅하세요. 비밀번호는 90일마다 "
                          "바꿔야 합니다."), Document("b", "한 문장."), Document("c", "메일이 오지 않습니다. 스팸함을 확인하세요."),
            Document("d", "관리자 권한이 필요합니다. 메일이 오지 않습니다.")]
    chunking = chunk_corpus(docs, SemanticChunker(embed=embed))
    # each distinct sentence once (LangChain's rule embeds every sentence in three neighbourhoods: 3 x 8 texts)
    assert calls == [6] and [c.doc_id for c in chunking][0] == "a" and chunking.by_doc["b"][0].text == "한 문장."


# -- the embedder's window --------------------------------------------------------------------------------------


def test_window_report_counts_chunks_over_the_window():
    chunking = chunk_corpus([Document("a", "하나 둘 셋 넷 다섯\n\n여섯 일곱"), Document("b", "여덟")], "paragraphs")
    rep = window_report(chunking, lambda t: len(t.split()) + 2, 4, action="windowed", embedder="e5")
    assert (rep.n_chunks, rep.n_over, rep.max_tokens) == (3, 1, 7)
    assert rep.message() == ("chunker paragraphs: 1 of 3 chunks exceed e5's window of 4 tokens (the longest has 7); "
                             "they are windowed. Use a smaller SIZE, or tokens:SIZE:OVERLAP to cut in the embedder's "
                             "tokens")
    assert window_report(chunking, len, 100, action="truncated", embedder="x").message() == ""


def test_window_report_says_nothing_was_counted_rather_than_zero_tokens():
    """A bound that clears every chunk counts none: ``max_tokens`` is None (absent from summary.json), not 0; a
    summary.json written before, with 0 there, is still read."""
    from ragexam.storage.summary import ChunkWindow

    chunking = chunk_corpus([Document("a", "하나 둘 셋")], "paragraphs")
    rep = window_report(chunking, lambda t: 99, 4, action="windowed", embedder="e5", bound=lambda t: 1)
    assert (rep.n_over, rep.max_tokens) == (0, None)
    window = ChunkWindow(embedder="e5", window=4, action="windowed", n_over=0, max_tokens=rep.max_tokens)
    assert "max_tokens" not in window.to_dict()
    assert ChunkWindow.from_dict({"embedder": "e5", "window": 4, "action": "windowed", "n_over": 0,
                                  "max_tokens": 0}).max_tokens == 0


def test_size_mismatch_warning_names_the_mean_sizes():
    from ragexam.data.chunking import ChunkingStats, equal_budget, size_mismatch

    small, big = ChunkingStats("paragraphs:300", 10, 256.2, 300, 0), ChunkingStats("paragraphs:600", 5, 496.2, 600, 1)
    near = ChunkingStats("recursive:300:0", 9, 280.0, 300, 0)
    assert size_mismatch([small, near]) == "" and size_mismatch([small]) == ""
    text = size_mismatch([small, big, near])
    assert text.startswith("chunkers of different size are compared by chunk count k (mean characters per chunk: "
                           "paragraphs:300 256, paragraphs:600 496, recursive:300:0 280): k chunks of paragraphs:600 "
                           "hold 1.9x the context of k chunks of paragraphs:300")
    assert text.endswith("(the @1400c columns, -k 1400c).") and equal_budget([small, big, near], 5) == "1400c"
    assert equal_budget([small, big], 4) == "1500c" and equal_budget([], 3) == "100c"
    assert "-k 512t" in size_mismatch([small, big], budget="512t")


def test_a_study_of_sentence_based_chunkers_splits_each_text_once(monkeypatch):
    """paragraphs:N for several N, sentences and semantic split the same long paragraphs: Kiwi sees each once per
    process (issue 40: a chunking study shares its work), and the chunks are those of a fresh split."""
    from ragexam.data import chunking as C

    docs = long_paragraph_corpus(seed=5, n_docs=6)
    fresh = {spec: [c.text for c in chunk_corpus(docs, spec)] for spec in ("paragraphs:400", "sentences:300")}
    real = C.kiwi()
    seen = []

    class Counting:
        def split_into_sents(self, texts):
            seen.extend(texts)
            return real.split_into_sents(texts)

    monkeypatch.setattr(C, "_SPLIT_MEMO", {})
    monkeypatch.setattr(C, "kiwi", lambda: Counting())
    for spec in ("paragraphs:400", "paragraphs:800", "sentences:300", "sentences"):
        chunks = [c.text for c in chunk_corpus(docs, spec)]
        if spec in fresh:
            assert chunks == fresh[spec]
    assert len(seen) == len(set(seen)) == len(docs)  # each document is one line: one piece, split once
