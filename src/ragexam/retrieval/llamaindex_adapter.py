"""Grade a LlamaIndex retriever on what it returns.

:class:`LlamaIndexRetriever` wraps any object with ``retrieve(query) -> list[NodeWithScore]``
(LlamaIndex's ``BaseRetriever``: ``index.as_retriever(similarity_top_k=...)``, a fusion or
auto-merging retriever, ...).  How many nodes it returns is its own setting (``similarity_top_k``);
ragexam keeps the first ``depth``.  Each node is graded as the text it holds
(``node.get_content()``): the index split the documents its own way (``SentenceSplitter`` or any other
node parser).  Its ``doc_id`` (needed for ``relevance="doc"``) is ``metadata[doc_id_key]`` (default
``"doc_id"``), else the node's ``ref_doc_id`` (the id of the ``Document`` it came from); its id is the
node id; its score the node's score (``None`` when the retriever gives none).

The adapter is duck-typed (``node``/``score``, ``get_content()``, ``metadata``, ``node_id``,
``ref_doc_id``), so it does not import LlamaIndex (``pip install 'ragexam[llamaindex]'`` to build the
object you wrap).  An exception raised by the wrapped retriever stops the run.
"""

from __future__ import annotations

from typing import List, Optional

from ragexam.errors import InputError
from ragexam.retrieval.texts import Retrieval, WrappedRetriever
from ragexam.signature import Signature, quote

__all__ = ["LlamaIndexRetriever"]


class LlamaIndexRetriever(WrappedRetriever):
    """A LlamaIndex retriever as a pipeline that returns texts (module docstring).

    :param obj: the retriever (anything with ``retrieve(query)`` returning nodes with scores).
    :param name: label in ``spec``/``signature`` (``llamaindex:<name>``); default the class name.
    :param doc_id_key: metadata key of the source document's id (default ``"doc_id"``; else ``ref_doc_id``).
    """

    framework = "llamaindex"

    def __init__(self, obj: object, *, name: Optional[str] = None, doc_id_key: str = "doc_id") -> None:
        if not callable(getattr(obj, "retrieve", None)):
            raise InputError(f"{type(obj).__name__} has no retrieve(query); pass a LlamaIndex retriever, e.g. "
                             "index.as_retriever(similarity_top_k=10).", source="llamaindex", field="obj")
        super().__init__(obj, name, doc_id_key)

    @property
    def signature(self) -> Signature:
        """``llamaindex:<name>|doc_id:metadata.<key>,ref_doc_id``: where the document ids come from, in order."""
        return Signature([("llamaindex", quote(self.name)), ("doc_id", f"metadata.{quote(self.doc_id_key)},ref_doc_id")],
                         version=False)

    def _item(self, hit: object, where: str):
        node = getattr(hit, "node", hit)
        getter = getattr(node, "get_content", None)
        text = getter() if callable(getter) else getattr(node, "text", None)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: a returned node has the text {text!r}; expected its content.",
                             source=self.spec, field="node")
        metadata = getattr(node, "metadata", None) or {}
        doc_id = self._metadata_doc_id(metadata)
        if doc_id is None:
            doc_id = getattr(node, "ref_doc_id", None)
        ident = getattr(node, "node_id", None) or getattr(node, "id_", None)
        score = getattr(hit, "score", None)
        if score is not None:
            score = float(score)
            if score != score:
                score = None
        return self._retrieved(text, doc_id, ident, score)

    def retrieve(self, queries: List[str], top_n: int, query_ids: Optional[List[str]] = None) -> List[Retrieval]:
        return self._per_query(queries, top_n, query_ids, lambda q, where, n: [
            self._item(h, where) for h in list(self.obj.retrieve(q))[:n]])
