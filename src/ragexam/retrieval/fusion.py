"""Hybrid retrieval: fuse the ranked lists of two or more retrievers.

Reciprocal-rank fusion (``method=rrf``, the default; Cormack, Clarke & Büttcher, SIGIR 2009)::

    score(d) = Σ_r  w_r / (k + rank_r(d))

``rank_r(d)`` is the 1-based position of chunk ``d`` in retriever ``r``'s list for the
query; a chunk absent from a list gets nothing from it.  ``k ≥ 0`` (default 60) damps the
advantage of the very top ranks; ``w_r ≥ 0`` are per-retriever weights (default 1 each).

Weighted score fusion (``method=wsum``) with per-query min–max normalization::

    s'_r(d) = (s_r(d) − min_r) / (max_r − min_r)       min_r, max_r over r's list for this query
    score(d) = Σ_r  w_r · s'_r(d)

When ``max_r == min_r`` (a list of one chunk, or all scores tied) every chunk in the list
gets ``s'_r = 1``: the retriever expressed no preference among them, and being listed is
its only evidence.  A chunk absent from a list gets 0 from it; an empty list contributes
nothing.

Both: each retriever is asked for ``max(top_n, depth)`` results (``depth`` default 100) so
that chunks ranked just below ``top_n`` by one retriever can still be lifted by another;
sums use ``math.fsum`` (exactly rounded, independent of the order of the terms); the fused
list is sorted by score descending, then chunk id ascending, and cut to ``top_n``.
"""

from __future__ import annotations

import math
from typing import Sequence

from ragexam import fmt
from ragexam.errors import InputError, one_of, integer_in
from ragexam.retrieval.base import Hits, Retriever, check_queries, check_top_n, fmt_num
from ragexam.retrieval.registry import Build, Form, integer, number, numbers, retriever_family, text
from ragexam.signature import Signature

__all__ = ["HybridRetriever", "rrf_fuse", "wsum_fuse", "FUSION_METHODS"]

FUSION_METHODS = ("rrf", "wsum")
_DEFAULT_K = 60.0
_DEFAULT_DEPTH = 100

Ranked = Sequence[tuple[str, float]]


def _sorted(scores: dict[str, list[float]], top_n: int | None) -> list[tuple[str, float]]:
    fused = sorted(((cid, math.fsum(parts)) for cid, parts in scores.items()),
                   key=lambda item: (-item[1], item[0]))
    return fused if top_n is None else fused[:top_n]


def _weights(weights: Sequence[float] | None, n: int, where: str = "hybrid") -> list[float]:
    if weights is None:
        return [1.0] * n
    if isinstance(weights, (str, bytes)):
        raise InputError(f"weights must be a list of numbers, received {weights!r}.", source=where,
                         field="weights")
    weights = list(weights)
    if len(weights) != n:
        raise InputError(f"received {fmt.plural(len(weights), 'weight')} for {fmt.plural(n, 'retriever')}; "
                         "give one weight per "
                         "retriever, in spec order.", source=where, field="weights")
    out = []
    for w in weights:
        try:
            x = float(w)
        except (TypeError, ValueError):
            x = math.nan
        if isinstance(w, bool) or not math.isfinite(x) or x < 0:
            raise InputError(f"weights must be finite numbers >= 0, received {w!r}.", source=where,
                             field="weights")
        out.append(x)
    if not any(out):
        raise InputError("all weights are 0; at least one retriever must count.", source=where,
                         field="weights")
    return out


def rrf_fuse(lists: Sequence[Ranked], k: float = _DEFAULT_K, weights: Sequence[float] | None = None,
             top_n: int | None = None) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion of ranked lists (best first) for one query.

    ``score(d) = Σ_r w_r / (k + rank_r(d))`` with 1-based ranks; see the module docstring.
    Returns ``(chunk_id, score)`` pairs sorted by score descending, then id; all of them,
    or the first ``top_n``.  A chunk listed twice in one list counts at its best rank.
    """
    k = _k(k)
    w = _weights(weights, len(lists))
    scores: dict[str, list[float]] = {}
    for wr, ranked in zip(w, lists):
        seen: set[str] = set()
        for rank, (cid, _score) in enumerate(ranked, start=1):
            if cid in seen:
                continue
            seen.add(cid)
            scores.setdefault(cid, []).append(wr / (k + rank))
    return _sorted(scores, top_n)


def wsum_fuse(lists: Sequence[Ranked], weights: Sequence[float] | None = None,
              top_n: int | None = None) -> list[tuple[str, float]]:
    """Weighted sum of per-list min–max-normalized scores for one query.

    ``score(d) = Σ_r w_r · (s_r(d) − min_r) / (max_r − min_r)``; when ``max_r == min_r``
    every listed chunk gets 1 from that list.  See the module docstring.
    """
    w = _weights(weights, len(lists))
    scores: dict[str, list[float]] = {}
    for wr, ranked in zip(w, lists):
        if not ranked:
            continue
        values = [float(s) for _, s in ranked]
        lo, hi = min(values), max(values)
        seen: set[str] = set()
        for cid, s in ranked:
            if cid in seen:
                continue
            seen.add(cid)
            norm = 1.0 if hi == lo else (float(s) - lo) / (hi - lo)
            scores.setdefault(cid, []).append(wr * norm)
    return _sorted(scores, top_n)


def _k(k: float, where: str = "hybrid") -> float:
    try:
        x = float(k)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(k, bool) or not math.isfinite(x) or x < 0:
        raise InputError(f"the RRF constant k must be a finite number >= 0, received {k!r}.",
                         source=where, field="k")
    return x


class HybridRetriever(Retriever):
    """Fusion of two or more retrievers (``rrf`` or ``wsum``; definitions in the module docstring).

    Parameters
    ----------
    retrievers:
        Two or more retrievers; each is indexed and searched on its own.
    method:
        ``"rrf"`` (default) or ``"wsum"``.
    k:
        RRF constant (default 60); only for ``rrf``.
    weights:
        One weight ≥ 0 per retriever, in order (default 1 each).
    depth:
        Each retriever is asked for ``max(top_n, depth)`` results (default 100).
    """

    def __init__(self, retrievers: Sequence[Retriever], *, method: str = "rrf", k: float = _DEFAULT_K,
                 weights: Sequence[float] | None = None, depth: int = _DEFAULT_DEPTH) -> None:
        retrievers = list(retrievers)
        if len(retrievers) < 2:
            raise InputError(f"hybrid retrieval needs two or more retrievers, received {len(retrievers)}.",
                             source="hybrid", field="retrievers")
        one_of(method, FUSION_METHODS, source="hybrid", field="method", what="fusion method")
        k = _k(k)
        if method != "rrf" and k != _DEFAULT_K:
            raise InputError(f"k is the RRF constant and has no meaning for method={method}; "
                             "drop it.", source="hybrid", field="k")
        integer_in(depth, 1, source="hybrid", field="depth")
        self.retrievers = retrievers
        self.method = method
        self.k = k
        self.weights = _weights(weights, len(retrievers))
        self.depth = depth
        self._indexed = False

    @property
    def spec(self) -> str:
        members = []
        for r in self.retrievers:
            s = r.spec
            members.append(f"({s})" if any(c in s for c in "?+()") else s)
        opts = []
        if self.method != "rrf":
            opts.append(f"method={self.method}")
        if self.method == "rrf" and self.k != _DEFAULT_K:
            opts.append(f"k={fmt_num(self.k)}")
        if any(w != 1.0 for w in self.weights):
            opts.append("weights=" + ",".join(fmt_num(w) for w in self.weights))
        if self.depth != _DEFAULT_DEPTH:
            opts.append(f"depth={self.depth}")
        return "hybrid:" + "+".join(members) + ("?" + "&".join(opts) if opts else "")

    @property
    def signature(self) -> Signature:
        """``hybrid:rrf|k:60|depth:100|weights:1,1|[<member signature>]+[...]`` (wsum: ``norm:minmax``)."""
        head = [("hybrid", self.method), ("k", fmt_num(self.k)) if self.method == "rrf" else ("norm", "minmax"),
                ("depth", self.depth), ("weights", ",".join(fmt_num(w) for w in self.weights))]
        return Signature(head, version=False).with_members(r.signature for r in self.retrievers)

    def index_report(self) -> list[dict]:
        """The reports of the members (see :meth:`Retriever.index_report`)."""
        return [r for m in self.retrievers for r in m.index_report()]

    def index(self, ids: list[str], texts: list[str]) -> "HybridRetriever":
        for r in self.retrievers:
            r.index(ids, texts)
        self._indexed = True
        return self

    def search(self, queries: list[str], top_n: int) -> Hits:
        self._require_index()
        queries = check_queries(queries, self.spec)
        top_n = check_top_n(top_n, self.spec)
        deep = max(top_n, self.depth)
        per_member = [r.search(queries, deep) for r in self.retrievers]
        out: Hits = []
        from ragexam.exec.timing import stage

        with stage("search"):
            for qi in range(len(queries)):
                lists = [hits[qi] for hits in per_member]
                if self.method == "rrf":
                    out.append(rrf_fuse(lists, k=self.k, weights=self.weights, top_n=top_n))
                else:
                    out.append(wsum_fuse(lists, weights=self.weights, top_n=top_n))
        return out


@retriever_family("hybrid", arg="members", member=False, order=30,
                  forms=(Form("hybrid:A+B[+C...]", "reciprocal-rank fusion of two or more of the above"),),
                  options={"method": text("rrf | wsum"), "k": number("60, rrf only"), "weights": numbers("1 each"),
                           "depth": integer("100")})
def _from_spec(b: Build) -> HybridRetriever:
    return HybridRetriever(b.members, **b.options)
