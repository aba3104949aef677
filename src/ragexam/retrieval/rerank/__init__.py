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

from importlib import import_module
from typing import Any

__all__ = ["Reranker", "RerankResult", "RerankReport", "DEFAULT_TOP", "rerank_stage", "rerank_order",
           "RerankedRetriever", "RerankedTextRetriever", "HTTPReranker", "LLMReranker", "CrossEncoderReranker",
           "DenseReranker"]

_WHERE = {"Reranker": "base", "RerankResult": "base", "RerankReport": "base", "DEFAULT_TOP": "base",
          "rerank_stage": "base", "rerank_order": "base", "RerankedRetriever": "base",
          "RerankedTextRetriever": "base", "HTTPReranker": "http", "LLMReranker": "llm",
          "CrossEncoderReranker": "st", "DenseReranker": "dense"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(f"ragexam.retrieval.rerank.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'ragexam.retrieval.rerank' has no attribute {name!r}")
