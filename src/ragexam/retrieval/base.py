"""The retriever interface every ragexam retriever implements, and the helpers they share.

A retriever is built, then indexed once, then searched::

    r = parse_retriever("bm25")               # or BM25Retriever(...), DenseRetriever(...), ...
    r.index(ids, texts)                        # the corpus: chunk ids and chunk texts
    hits = r.search(queries, top_n=10)         # one list per query, best first
    hits[0][0]                                 # -> ("chunk-17", 12.3)

Contract of :meth:`Retriever.search`:

* one list per query, in query order; each list holds ``(chunk_id, score)`` pairs with
  the **highest score first**;
* equal scores are ordered by chunk id (Python string order, ascending), so a run is
  reproducible to the last position;
* a list holds at most ``top_n`` pairs; it holds fewer when the corpus is smaller or
  when the retriever has fewer candidates (BM25 lists only chunks that share a token
  with the query, see :class:`~ragexam.retrieval.bm25.BM25Retriever`);
* scores are comparable only within one retriever (BM25 scores are unbounded, dense
  scores are cosines in [-1, 1], fused scores are fusion-specific).

Every retriever has a :attr:`~Retriever.spec` (the canonical spec string that rebuilds it
with :func:`~ragexam.retrieval.spec.parse_retriever`) and a :attr:`~Retriever.signature`
(every setting that changes results, ``key:value|key:value``), which travels with every
score ragexam reports.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Optional, Sequence

from ragexam import fmt
from ragexam.errors import InputError, RagexamError, integer_in
from ragexam.types import PathLike

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Component", "Retriever", "Hits", "check_corpus", "check_queries", "check_top_n", "fmt_num"]

#: What :meth:`Retriever.search` returns: per query, ``(chunk_id, score)`` pairs, best first.
Hits = list[list[tuple[str, float]]]


class Component(abc.ABC):
    """What every retrieval stage declares (chunk retrievers, text retrievers, rerankers): its ``spec``, the
    string that names it, and its ``signature``, every setting that changes what it returns as
    ``key:value|key:value``; its ``repr`` shows the spec."""

    @property
    @abc.abstractmethod
    def spec(self) -> str:
        """The spec string that names it (each subclass says what it parses back to)."""

    @property
    @abc.abstractmethod
    def signature(self) -> str:
        """Every setting that changes what it returns, as ``key:value|key:value``."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"

    def _keep_caching(self, cache: bool, cache_dir: Optional[PathLike], progress: bool) -> None:
        """Keep how a component caches what it computes (``cache`` on or off, in ``cache_dir``: the retrieval
        cache, :mod:`ragexam.retrieval.cache`) and whether it shows progress bars; a run reads ``cache`` to know
        whether anything of it is kept."""
        self.cache, self.cache_dir, self.progress = cache, cache_dir, progress


class Retriever(Component):
    """Base class of ragexam retrievers: ``index(ids, texts)``, then ``search(queries, top_n)``.  Its ``spec``
    is canonical: ``parse_retriever(r.spec)`` builds an equivalent retriever."""

    #: True once :meth:`index` has run.
    _indexed: bool = False

    @abc.abstractmethod
    def index(self, ids: list[str], texts: list[str]) -> "Retriever":
        """Index the corpus (chunk ``ids`` and their ``texts``, same length, ids unique).

        Replaces any previous index.  Returns ``self`` so calls can be chained.
        Raises :class:`~ragexam.errors.InputError` for an empty corpus, mismatched
        lengths, duplicate or non-string ids, or non-string texts.
        """

    @abc.abstractmethod
    def search(self, queries: list[str], top_n: int) -> Hits:
        """Return, for each query, up to ``top_n`` ``(chunk_id, score)`` pairs, best first.

        Ties are ordered by chunk id.  Raises :class:`~ragexam.errors.InputError` for
        ``top_n < 1`` or non-string queries, and :class:`~ragexam.errors.RagexamError` if
        :meth:`index` has not been called.
        """

    def index_report(self) -> list[dict]:
        """What the index cost in accuracy, after :meth:`search`: one dict per approximate index (e.g. its
        recall of the exact top-k, :class:`~ragexam.retrieval.dense.DenseRetriever`); ``[]`` when every
        index is exact."""
        return []

    def _require_index(self) -> None:
        if not self._indexed:
            raise RagexamError(f"retriever '{self.spec}': search() was called before index(); "
                               "call index(ids, texts) with the corpus first.")


def check_corpus(ids: Sequence[Any], texts: Sequence[Any], where: str) -> tuple[list[str], list[str]]:
    """Validate a corpus for :meth:`Retriever.index`; return both as lists.

    ``where`` names the retriever in messages.  Raises :class:`InputError` (naming the
    parameter, the position and the fix) for: a bare string instead of a list, unequal
    lengths, an empty corpus, a non-string id or text, an empty id, a duplicate id.
    """
    for name, value in (("ids", ids), ("texts", texts)):
        if isinstance(value, (str, bytes)):
            raise InputError(f"expected a list of strings, received a single {type(value).__name__}; "
                             f"wrap it in a list.", source=where, field=name)
    ids, texts = list(ids), list(texts)
    if len(ids) != len(texts):
        raise InputError(f"received {fmt.plural(len(ids), 'id')} but {fmt.plural(len(texts), 'text')}; every chunk "
                         "needs exactly one id and one text.", source=where, field="ids/texts")
    if not ids:
        raise InputError("the corpus is empty; index at least one chunk.", source=where, field="ids")
    seen: dict[str, int] = {}
    for i, (cid, text) in enumerate(zip(ids, texts)):
        if not isinstance(cid, str) or not cid:
            raise InputError(f"ids[{i}] is {cid!r} ({type(cid).__name__}); expected a non-empty "
                             "string chunk id.", source=where, field="ids")
        if not isinstance(text, str):
            raise InputError(f"texts[{i}] (chunk {cid!r}) is a {type(text).__name__}; expected a "
                             "string.", source=where, field="texts")
        if cid in seen:
            raise InputError(f"chunk id {cid!r} appears twice (positions {seen[cid]} and {i}); "
                             "chunk ids must be unique.", source=where, field="ids")
        seen[cid] = i
    return ids, texts


def check_queries(queries: Sequence[Any], where: str) -> list[str]:
    """Validate the queries of :meth:`Retriever.search`; return them as a list."""
    if isinstance(queries, (str, bytes)):
        raise InputError("expected a list of query strings, received a single string; wrap it in "
                         "a list: search([query], top_n).", source=where, field="queries")
    queries = list(queries)
    for i, q in enumerate(queries):
        if not isinstance(q, str):
            raise InputError(f"queries[{i}] is a {type(q).__name__}; expected a string.",
                             source=where, field="queries")
    return queries


def check_top_n(top_n: object, where: str) -> int:
    """Validate ``top_n``: an int >= 1 (bool is rejected)."""
    return integer_in(top_n, 1, source=where, field="top_n")


def id_ranks(ids: list[str]) -> "np.ndarray":
    """Position of each id in ascending string order (the tie-break key), as int64."""
    import numpy as np

    order = sorted(range(len(ids)), key=ids.__getitem__)
    ranks = np.empty(len(ids), dtype=np.int64)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(len(ids), dtype=np.int64)
    return ranks


def top_n_positions(scores: "np.ndarray", tie_keys: "np.ndarray", top_n: int) -> "np.ndarray":
    """Positions of the ``top_n`` best entries: score descending, then ``tie_keys`` ascending.

    ``scores`` and ``tie_keys`` are 1-D and aligned.  Uses ``np.partition`` to find the
    ``top_n``-th best score, keeps every entry at least that good (so ties straddling the
    cut are all considered), then sorts only those.  Returns fewer than ``top_n`` positions
    when there are fewer entries.
    """
    import numpy as np

    m = scores.shape[0]
    if m > top_n:
        kth = np.partition(scores, m - top_n)[m - top_n]
        keep = np.flatnonzero(scores >= kth)
    else:
        keep = np.arange(m)
    order = np.lexsort((tie_keys[keep], -scores[keep]))[:top_n]
    return keep[order]


def fmt_num(x: float) -> str:
    """Compact, exact-enough number for specs and signatures: 1.5 -> '1.5', 60.0 -> '60'."""
    return format(float(x), ".10g")
