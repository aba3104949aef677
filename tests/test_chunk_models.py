"""The models bound to chunkers from the retrieval layer: e5's token spans, tokens:N:OVERLAP in e5's tokens
(equal to LangChain's token windows decoded), semantic on the offline e5, and the embedder-window report."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ragexam.data import Document, chunk_corpus
from ragexam.data.chunking import SemanticChunker, TokenChunker
from ragexam.retrieval.chunk_models import E5_WINDOW, E5TokenSpans, bind_chunker, chunk_window_report, embedder_window

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "ragexam" / "data" / "samples"
META = "\u2581"


@pytest.fixture(scope="module")
def e5():
    spans = E5TokenSpans()
    spans._load()
    return spans


def _texts():
    out = []
    for name in ("ai_concepts", "it_helpdesk"):
        out += [json.loads(line)["content"] for line in
                (SAMPLES / name / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    return out + ["  leading spaces,\ttabs\nand   runs ", "ＦＵＬＬ　ｗｉｄｔｈ ①② ㈜ e\u0301", "", " ", "😀 x"]


def test_e5_token_spans_cover_each_token(e5):
    tok = e5._tok
    for text in _texts():
        ids = tok.content_ids(text)
        spans = e5.spans(text)
        assert len(spans) == len(ids)
        for (a, b), (c, d) in zip(spans, spans[1:]):
            assert a < b <= len(text) and a <= c and b <= d
        for (a, b), idx in zip(spans, ids):
            # the span, normalized alone, holds the token's piece (up to its leading ▁): exactly, unless a character
            # normalizes to several (㈜ -> (주), spread over three tokens that each span it).  The ▁ the tokenizer
            # puts before a text that does not start with a space, alone a token, spans the first character.
            if idx != tok.unk and e5._pieces[idx] != META:
                piece, alone = e5._pieces[idx].lstrip(META), tok.normalize(text[a:b]).lstrip(META)
                assert piece == alone or piece in alone, (text[a:b], piece)


def test_tokens_chunker_equals_langchain_windows_in_e5_tokens(e5):
    from langchain_text_splitters.base import Tokenizer, split_text_on_tokens

    tok = e5._tok
    rng = random.Random(2)
    texts = [t for t in _texts() if t.strip()]
    for size, overlap in ((64, 8), (32, 0), (7, 3)):
        lc = Tokenizer(chunk_overlap=overlap, tokens_per_chunk=size, encode=tok.content_ids,
                       decode=lambda ids: "".join(e5._pieces[i] for i in ids).replace(META, " ").strip())
        for text in rng.sample(texts, 12):
            ours = bind_chunker(f"tokens:{size}:{overlap}").chunk_text("d", text)
            assert [tok.normalize(c.text).replace(META, " ").strip() for c in ours] == \
                split_text_on_tokens(text=text, tokenizer=lc)
            assert all(c.text == text[c.start:c.end] for c in ours)


def test_window_report_with_e5(e5):
    long = " ".join(_texts()[:6])
    docs = [Document("long", long), Document("short", "짧은 문서입니다.")]
    rep = chunk_window_report(chunk_corpus(docs, "whole"))
    assert e5.count(long) > E5_WINDOW and rep.n_over == 1 and rep.n_chunks == 2 and rep.action == "windowed"
    assert rep.max_tokens == e5.count(long) == len(e5._tok.content_ids("passage: " + long))
    assert "1 of 2 chunks exceed e5's window of 510 tokens" in rep.message()
    from ragexam.retrieval.chunk_models import token_sizer

    size, name = token_sizer()
    assert name == "e5" and size(long) == len(e5._tok.content_ids(long)) and e5.count(long) - size(long) in (2, 3)
    fits = chunk_window_report(chunk_corpus(docs, bind_chunker("tokens:400:40")))
    assert fits.n_over == 0 and fits.message() == ""


def test_an_embedder_brings_its_own_tokenizer_and_window():
    class Words:
        name = "words"
        token_window = 3
        window_action = "truncated"

        def token_spans(self, text):
            import re
            return [m.span() for m in re.finditer(r"\S+", text)]

        def token_count(self, text):
            return len(text.split())

    ch = bind_chunker("tokens:2:0", Words())
    assert [c.text for c in ch.chunk_text("d", "a b c d e")] == ["a b", "c d", "e"]
    assert embedder_window(Words())[1:] == (3, "truncated", "words")
    from ragexam.retrieval.chunk_models import token_sizer

    size, name = token_sizer(Words())
    assert (size("a b c"), name) == (3, "words")
    rep = chunk_window_report(chunk_corpus([Document("d", "a b c d e")], "whole"), Words())
    assert (rep.n_over, rep.action) == (1, "truncated")

    class Remote:  # an embedder whose window ragexam does not know
        name = "openai"

    assert embedder_window(Remote()) is None and chunk_window_report(chunk_corpus([], "whole"), Remote()) is None
    assert isinstance(bind_chunker("tokens:8:0", Remote()).tokenizer, E5TokenSpans)  # counted in e5's tokens


def test_semantic_on_a_given_embedder_and_on_the_offline_e5():
    class Topic:
        def embed_passages(self, texts):
            return np.array([[1.0, 0.0] if "VPN" in t else [0.0, 1.0] for t in texts])

    text = ("VPN을 다시 설치합니다. VPN 클라이언트는 관리자 권한이 필요합니다. VPN이 안 되면 재부팅하세요. "
            "메일이 오지 않습니다. 스팸함을 확인하세요. 메일함 용량도 확인하세요.")
    ch = bind_chunker("semantic:50", Topic(), lambda texts: Topic().embed_passages(texts))
    assert isinstance(ch, SemanticChunker) and ch.spec == "semantic:50"
    # the neighbourhoods (sums of three sentence vectors) turn from VPN to mail between the 3rd and 4th sentence
    assert [c.text for c in ch.chunk_text("d", text)] == [
        "VPN을 다시 설치합니다. VPN 클라이언트는 관리자 권한이 필요합니다. VPN이 안 되면 재부팅하세요.",
        "메일이 오지 않습니다. 스팸함을 확인하세요. 메일함 용량도 확인하세요."]
    from ragexam.retrieval.e5 import E5Embedder

    default = bind_chunker("semantic")  # the offline e5 unless told otherwise, through the embedding cache
    assert isinstance(default.embed.embedder, E5Embedder)
    topic = bind_chunker("semantic:50", Topic())
    assert [c.text for c in topic.chunk_text("d", text)] == [c.text for c in ch.chunk_text("d", text)]
    real = chunk_corpus([Document("d", text)], bind_chunker("semantic", E5Embedder(backend="numpy")))
    assert 1 <= len(real) <= 6 and "".join(c.text for c in real).replace(" ", "") == text.replace(" ", "")
    assert isinstance(bind_chunker("tokens:8:0"), TokenChunker) and bind_chunker("paragraphs:400").spec == "paragraphs:400"
