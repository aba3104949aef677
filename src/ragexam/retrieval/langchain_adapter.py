"""Grade a LangChain retriever or vector store on what it returns.

:class:`LangChainRetriever` wraps

* a **retriever**: any object with ``invoke(query) -> list[Document]`` (LangChain's ``BaseRetriever``,
  ``vectorstore.as_retriever(...)``, a multi-query or compression retriever, ...); it returns no scores,
  and how many documents it returns is its own setting (e.g. ``search_kwargs={"k": 10}``): ragexam keeps
  the first ``depth``;
* a **vector store**: any object with ``similarity_search_with_score(query, k) -> list[(Document, score)]``
  (asked for ``k = depth``); its scores are kept, after converting distances (``scores="distance"``: lower
  is better, e.g. FAISS L2 or Chroma) to ``-distance`` so that higher is always better.  A store that
  returns scores getting *better* down the list raises instead of being silently reversed.

Each returned ``Document`` is graded as the text it holds, ``page_content``: the store chunked the
documents its own way (any splitter) and nothing needs to match ragexam's chunks.  Its ``doc_id``
(needed for ``relevance="doc"``) is ``metadata[doc_id_key]`` (default ``"doc_id"``; absent: unknown);
its id is ``metadata[id_key]`` when ``id_key`` is given, else the document's own ``id`` when it has
one.  The adapter is duck-typed: it reads only ``page_content``, ``metadata`` and ``id``, so it does not
import LangChain (install ``pip install 'ragexam[langchain]'`` to build the object you wrap).

An exception raised by the wrapped object stops the run (it is a bug in the pipeline's code, with its
traceback), unlike a remote service's failure, which is counted per question
(:mod:`ragexam.retrieval.http`).
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from ragexam.errors import InputError, one_of
from ragexam.retrieval.texts import Retrieval, WrappedRetriever
from ragexam.signature import Signature, quote

__all__ = ["LangChainRetriever"]

_SCORE_MODES = ("similarity", "distance")


class LangChainRetriever(WrappedRetriever):
    """A LangChain retriever or vector store as a pipeline that returns texts (module docstring).

    Parameters
    ----------
    obj:
        The LangChain retriever (``invoke``) or vector store (``similarity_search_with_score``);
        a vector store is used as such when it has that method, even if it also has ``invoke``.
    name:
        Label used in ``spec`` and ``signature`` (``langchain:<name>``); default: the class name.
    doc_id_key:
        Metadata key holding the source document's id (default ``"doc_id"``).
    id_key:
        Metadata key holding the passage id; default: the document's ``id`` attribute, when set.
    scores:
        Vector stores only: ``"similarity"`` (higher is better, default) or ``"distance"``.
    """

    framework = "langchain"

    def __init__(self, obj: object, *, name: Optional[str] = None, doc_id_key: str = "doc_id",
                 id_key: Optional[str] = None, scores: str = "similarity") -> None:
        self.is_store = callable(getattr(obj, "similarity_search_with_score", None))
        if not self.is_store and not callable(getattr(obj, "invoke", None)):
            raise InputError(f"{type(obj).__name__} has neither invoke(query) nor "
                             "similarity_search_with_score(query, k); pass a LangChain retriever or "
                             "vector store.", source="langchain", field="obj")
        one_of(scores, _SCORE_MODES, source="langchain", field="scores")
        super().__init__(obj, name, doc_id_key)
        self.id_key = id_key
        self.scores = scores

    @property
    def signature(self) -> Signature:
        kind = "vectorstore" if self.is_store else "retriever"
        score = self.scores if self.is_store else "none"
        return Signature([("langchain", quote(self.name)), ("kind", kind), ("score", score),
                          ("doc_id", f"metadata.{quote(self.doc_id_key)}")], version=False)

    def _pairs(self, query: str, top_n: int) -> List[Tuple[Any, Optional[float]]]:
        if not self.is_store:
            return [(doc, None) for doc in self.obj.invoke(query)]
        pairs = [(doc, float(s)) for doc, s in self.obj.similarity_search_with_score(query, k=top_n)]
        if self.scores == "distance":
            pairs = [(doc, -s) for doc, s in pairs]
        for (_, a), (_, b) in zip(pairs, pairs[1:]):
            if b > a:
                raise InputError(
                    f"the vector store returned scores that get better down the list ({a} then {b}) for query "
                    f"{query[:60]!r}; it reports {'similarities' if self.scores == 'distance' else 'distances'}: "
                    f"pass scores={'similarity' if self.scores == 'distance' else 'distance'!r}.",
                    source=self.spec, field="scores")
        return pairs  # type: ignore[return-value]

    def _item(self, doc: object, score: Optional[float], where: str):
        text = getattr(doc, "page_content", None)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: a returned document has page_content {text!r}; expected its text.",
                             source=self.spec, field="page_content")
        metadata = getattr(doc, "metadata", None) or {}
        doc_id = self._metadata_doc_id(metadata)
        if self.id_key is not None:
            if self.id_key not in metadata:
                raise InputError(f"{where}: a returned document has no metadata key {self.id_key!r} (keys: "
                                 f"{', '.join(sorted(map(str, metadata))) or 'none'}); set id_key to the key holding "
                                 "the passage id, or leave it unset.", source=self.spec, field="id_key")
            ident = metadata[self.id_key]
        else:
            ident = getattr(doc, "id", None)
        return self._retrieved(text, doc_id, ident, score)

    def retrieve(self, queries: List[str], top_n: int, query_ids: Optional[List[str]] = None) -> List[Retrieval]:
        return self._per_query(queries, top_n, query_ids, lambda q, where, n: [
            self._item(doc, s, where) for doc, s in self._pairs(q, n)[:n]])
