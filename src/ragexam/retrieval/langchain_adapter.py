"""Use a LangChain retriever or vector store as a ragexam retriever.

:class:`LangChainRetriever` wraps

* a **retriever**: any object with ``invoke(query) -> list[Document]`` (LangChain's
  ``BaseRetriever``); it returns no scores, so ragexam gives the document at 1-based
  position ``i`` the score ``1 / i``;
* a **vector store**: any object with
  ``similarity_search_with_score(query, k) -> list[(Document, score)]``; its scores are
  kept, after converting distances (``scores="distance"``: lower is better, e.g. FAISS L2
  or Chroma) to ``-distance`` so that higher is always better.

The adapter is duck-typed: it reads only ``Document.page_content`` and
``Document.metadata``, so it does not import LangChain (install it with
``pip install 'ragexam[langchain]'`` to build the object you wrap).

Mapping documents to chunk ids
------------------------------
``id_key="chunk_id"`` reads the id from ``doc.metadata["chunk_id"]``; a missing key or an id
that is not in the indexed corpus is an :class:`~ragexam.errors.InputError`.  Without
``id_key`` a document is matched by its exact ``page_content`` against the indexed texts;
when several chunks share that text, the first one (by chunk id) not yet in this query's
list is used, and a text that matches no chunk is an error.

:meth:`LangChainRetriever.index` does not send anything to LangChain: the wrapped object
must already hold the corpus; ``index`` records ids and texts to map results back.  The
number of documents a LangChain *retriever* returns is its own setting (e.g.
``search_kwargs={"k": 10}``); ragexam keeps the first ``top_n``.
"""

from __future__ import annotations

from typing import Any

from ragexam.errors import InputError
from ragexam.retrieval.base import Hits, Retriever, check_corpus, check_queries, check_top_n

__all__ = ["LangChainRetriever"]

_SCORE_MODES = ("similarity", "distance")


class LangChainRetriever(Retriever):
    """A LangChain retriever or vector store behind the ragexam retriever interface.

    Parameters
    ----------
    obj:
        The LangChain retriever (``invoke``) or vector store (``similarity_search_with_score``);
        a vector store is used as such when it has that method, even if it also has ``invoke``.
    name:
        Label used in ``spec`` and ``signature`` (``langchain:<name>``); default: the class name.
    id_key:
        Metadata key holding the chunk id; ``None`` matches documents by exact text.
    scores:
        Vector stores only: ``"similarity"`` (higher is better, default) or ``"distance"``
        (lower is better; reported negated).  If a store returns scores that get *better*
        down the list, ragexam raises instead of silently reversing the ranking.
    """

    def __init__(self, obj: Any, *, name: str | None = None, id_key: str | None = None,
                 scores: str = "similarity") -> None:
        self.obj = obj
        self.is_store = callable(getattr(obj, "similarity_search_with_score", None))
        if not self.is_store and not callable(getattr(obj, "invoke", None)):
            raise InputError(f"{type(obj).__name__} has neither invoke(query) nor "
                             "similarity_search_with_score(query, k); pass a LangChain retriever or "
                             "vector store.", source="langchain", field="obj")
        if scores not in _SCORE_MODES:
            raise InputError(f"scores must be one of {', '.join(_SCORE_MODES)}, received {scores!r}.",
                             source="langchain", field="scores")
        self.name = name or type(obj).__name__
        self.id_key = id_key
        self.scores = scores
        self._indexed = False

    @property
    def spec(self) -> str:
        return f"langchain:{self.name}"

    @property
    def signature(self) -> str:
        kind = "vectorstore" if self.is_store else "retriever"
        score = self.scores if self.is_store else "1/rank"
        match = f"metadata:{self.id_key}" if self.id_key else "text"
        return f"langchain:{self.name}|kind:{kind}|score:{score}|match:{match}"

    def index(self, ids: list[str], texts: list[str]) -> "LangChainRetriever":
        ids, texts = check_corpus(ids, texts, self.spec)
        self._ids = set(ids)
        by_text: dict[str, list[str]] = {}
        for cid, text in zip(ids, texts):
            by_text.setdefault(text, []).append(cid)
        self._by_text = {t: sorted(c) for t, c in by_text.items()}
        self._indexed = True
        return self

    def search(self, queries: list[str], top_n: int) -> Hits:
        self._require_index()
        queries = check_queries(queries, self.spec)
        top_n = check_top_n(top_n, self.spec)
        out: Hits = []
        for q in queries:
            if self.is_store:
                pairs = [(doc, float(s)) for doc, s in self.obj.similarity_search_with_score(q, k=top_n)]
                if self.scores == "distance":
                    pairs = [(doc, -s) for doc, s in pairs]
                for (_, a), (_, b) in zip(pairs, pairs[1:]):
                    if b > a:
                        raise InputError(
                            f"the vector store returned scores that get better down the list "
                            f"({a} then {b}) for query {q[:60]!r}; it reports "
                            f"{'similarities' if self.scores == 'distance' else 'distances'}: pass "
                            f"scores={'similarity' if self.scores == 'distance' else 'distance'!r}.",
                            source=self.spec, field="scores")
            else:
                pairs = [(doc, 1.0 / i) for i, doc in enumerate(self.obj.invoke(q), start=1)]
            hits: list[tuple[str, float]] = []
            used: set[str] = set()
            for doc, score in pairs:
                cid = self._chunk_id(doc, used)
                if cid in used:
                    continue  # the same chunk twice: keep its first (best) position
                used.add(cid)
                hits.append((cid, score))
            hits.sort(key=lambda h: (-h[1], h[0]))
            out.append(hits[:top_n])
        return out

    def _chunk_id(self, doc: Any, used: set[str]) -> str:
        if self.id_key is not None:
            metadata = getattr(doc, "metadata", None) or {}
            if self.id_key not in metadata:
                raise InputError(f"a returned document has no metadata key {self.id_key!r} "
                                 f"(keys: {', '.join(sorted(map(str, metadata))) or 'none'}); set "
                                 "id_key to the key holding the chunk id, or id_key=None to match "
                                 "by text.", source=self.spec, field="id_key")
            cid = str(metadata[self.id_key])
            if cid not in self._ids:
                raise InputError(f"a returned document has {self.id_key}={cid!r}, which is not a "
                                 "chunk id of the indexed corpus; the vector store and the corpus "
                                 "disagree.", source=self.spec, field="id_key")
            return cid
        text = getattr(doc, "page_content", None)
        candidates = self._by_text.get(text) if isinstance(text, str) else None
        if not candidates:
            preview = (text or "")[:80]
            raise InputError(f"a returned document's text matches no indexed chunk: {preview!r}; "
                             "index the same chunks the LangChain object holds, or pass id_key=... "
                             "to map by metadata.", source=self.spec, field="page_content")
        for cid in candidates:
            if cid not in used:
                return cid
        return candidates[0]
