"""``rerank:dense[:EMBEDDER]``: rescoring the first stage's candidates by embedding similarity -- the offline
reranker, needing no endpoint (so ``ragexam demo`` can show the stage).

Each candidate's score is the cosine of the query's and the candidate's embeddings (e5's ``query:`` /
``passage:`` roles), computed by any embedder of the ``dense`` forms: ``rerank:dense`` is the bundled
multilingual-e5-small (``dense:e5``, offline), ``rerank:dense:st:MODEL`` a sentence-transformers model,
``rerank:dense:openai:MODEL`` an OpenAI-compatible embeddings endpoint.  Embeddings go through the
retrieval cache (:mod:`ragexam.retrieval.cache`), so a second run computes nothing.  A zero vector (no
information) leaves the candidate unjudged: it keeps its position.

What it is good for: over BM25 it brings meaning into the order of the lexical candidates (a cheap
hybrid that cannot add candidates BM25 missed); over the same dense model as the first stage it changes
nothing (the same cosine), which the lift table then shows as zero.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ragexam.retrieval.rerank.base import Reranker, RerankResult
from ragexam.types import PathLike

if TYPE_CHECKING:
    from ragexam.retrieval.embedders import Embedder
from ragexam.retrieval.registry import Build, Form, reranker_family
from ragexam.signature import Signature

__all__ = ["DenseReranker"]


class DenseReranker(Reranker):
    """Cosine rescoring with ``embedder`` (module docstring); ``spec`` is ``rerank:`` + the embedder's dense spec."""

    def __init__(self, embedder: "Embedder", *, spec: str = "rerank:dense", batch_size: int = 32, cache: bool = True,
                 cache_dir: Optional[PathLike] = None, progress: bool = True) -> None:
        self.embedder = embedder
        self._spec = spec
        self.batch_size = batch_size
        self._keep_caching(cache, cache_dir, progress)
        self.last_usage: Dict[str, Any] = {}

    @property
    def spec(self) -> str:
        return self._spec

    @property
    def signature(self) -> Signature:
        from ragexam.retrieval.embedders import embedder_fields

        return Signature([("rerank", "dense"), *embedder_fields(self.embedder), ("sim", "cosine")], version=False)

    def rerank(self, queries: List[str], candidates: List[List[str]]) -> List[RerankResult]:
        import numpy as np

        from ragexam.retrieval.cache import open_cache
        from ragexam.retrieval.dense import l2_normalize
        from ragexam.retrieval.embedding import embed_cached

        cache = open_cache(self.cache, self.cache_dir)
        flat = [t for c in candidates for t in c]
        q = l2_normalize(embed_cached(self.embedder, queries, "query", cache, batch_size=self.batch_size,
                                      progress=self.progress))
        p = l2_normalize(embed_cached(self.embedder, flat, "passage", cache, batch_size=self.batch_size,
                                      progress=self.progress)) if flat else np.zeros((0, q.shape[1]), np.float32)
        out, at = [], 0
        for qi, c in enumerate(candidates):
            block = p[at:at + len(c)]
            at += len(c)
            if not q[qi].any():
                out.append(RerankResult(None, "empty_query: the query's embedding is zero"))
                continue
            sims = block @ q[qi]
            out.append(RerankResult(tuple(None if not block[i].any() else float(sims[i]) for i in range(len(c)))))
        self.last_usage = {"texts_embedded": len(flat) + len(queries)}
        return out


@reranker_family("dense", arg="embedder", default="e5", arg_label="dense embedder", order=40,
                 forms=(Form("rerank:dense", "... by cosine with the bundled e5 (offline); ?top=N reranks the top N"),))
def _from_spec(b: Build) -> DenseReranker:
    """``rerank:dense[:EMBEDDER]``: any ``dense`` form's embedder and its options."""
    return DenseReranker(b.embedder, spec="rerank:dense" + (f":{b.arg}" if b.arg else ""), **b.batch, **b.options)
