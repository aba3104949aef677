"""The rerank stage (``RETRIEVER>RERANKER``) and the rerankers.

==========================  ==============================================================================
module                      what it holds
==========================  ==============================================================================
:mod:`.base`                :class:`Reranker`, :class:`RerankResult`, the stage (:func:`rerank_stage`,
                            :class:`RerankedRetriever`, :class:`RerankedTextRetriever`), the ordering rule
:mod:`.http`                ``rerank:http:URL``: Cohere/Jina/vLLM and TEI rerank endpoints
:mod:`.llm`                 ``rerank:llm:MODEL``: listwise or pointwise through :mod:`ragexam.llm`
:mod:`.st`                  ``rerank:st:MODEL``: a sentence-transformers CrossEncoder (optional extra)
:mod:`.dense`               ``rerank:dense``: cosine rescoring with an embedder (offline with the bundled e5)
==========================  ==============================================================================

Each module registers its ``rerank:NAME`` family with one ``@reranker_family`` decorator
(:mod:`ragexam.retrieval.registry`).  Build one from a spec with :func:`ragexam.retrieval.spec.parse_retriever`
(``"bm25>rerank:dense?top=30"``).
Names load their modules on first use.
"""

from ragexam._lazy import by_module, lazy_exports

_LAZY = by_module({
    ".base": "Reranker RerankResult RerankReport DEFAULT_TOP rerank_stage rerank_order RerankedRetriever "
             "RerankedTextRetriever",
    ".http": "HTTPReranker", ".llm": "LLMReranker", ".st": "CrossEncoderReranker", ".dense": "DenseReranker",
})

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
