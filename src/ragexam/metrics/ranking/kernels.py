"""The built-in ranking metrics: one registered kernel each, whose docstring is its definition.

Each kernel receives the prepared judgments (:class:`~ragexam.metrics.ranking.graded.Graded`) and the parsed
:class:`~ragexam.metrics.ranking.registry.Metric` ``m`` and returns one value per scored query.

Notation (see :mod:`~ragexam.metrics.ranking.engine` for the order and which queries are scored): ``rank``
is the 1-based position in the evaluation order; an item is *relevant* when its grade is at least the
relevance level (default 1); ``R`` is the number of relevant units in the qrels for the query (retrieved
or not).

A cutoff is either a number of items ``K`` (``p@5``) or a context budget ``B`` in characters or tokens
(``p@2000c``, ``p@512t``): the ranked list is read in rank order until the budget is spent, and each item
counts by its *share* inside the budget (1 when read whole, 0 when the budget was spent before it, the
fraction inside when it straddles the budget; :mod:`~ragexam.metrics.ranking.graded`).  Every budget
definition reduces to the count definition when every item has size 1 and ``B = K`` (NDCG: when at least
``K`` items are ranked).
"""

from __future__ import annotations

import numpy as np

from ragexam.metrics.ranking.graded import Graded, group_starts
from ragexam.metrics.ranking.registry import Metric, Placement, ranking_metric

__all__ = ["hit", "mrr", "ndcg", "precision", "recall", "fbeta", "rprec", "average_precision"]


@ranking_metric("hit", aliases=("success", "hit_rate", "hitrate"), cutoff="required", trec="success.K",
                legend="share of questions with a relevant chunk in the top k (or within the budget)",
                placement=Placement(main=("hit@{each}",), main_rank=10, sweep=("hit@{k}",), sweep_rank=10,
                                    budget=("hit@{budget}",)))
def hit(g: Graded, m: Metric) -> np.ndarray:
    """``hit@K`` — 1 if some relevant item has rank <= K, else 0 (trec_eval ``success.K``).

    ``hit@B`` — the share inside the budget of the first relevant item: 1 when it is read whole, a
    fraction when it straddles the budget, 0 when none is read.
    """
    if m.unit is not None:
        return g.per_query((g.cb == 1.0) * g.weight(m))
    return (g.count(m) > 0).astype(np.float64)


@ranking_metric("mrr", aliases=("rr", "recip_rank"), cutoff="optional", trec="recip_rank",
                legend="mean of 1/rank of the first relevant chunk (0 if none; at a budget times its share)",
                placement=Placement(main=("mrr",), main_rank=20, budget=("mrr@{budget}",)))
def mrr(g: Graded, m: Metric) -> np.ndarray:
    """``mrr`` — 1 / rank of the first relevant item; 0 if none is retrieved (trec_eval ``recip_rank``).

    ``mrr@K`` — as ``mrr`` but 0 when the first relevant item is below rank K (no trec_eval measure).
    ``mrr@B`` — 1 / rank of the first relevant item times its share inside the budget.
    """
    w = (g.cb == 1.0) / g.rankb
    if m.k is not None:
        w = w * g.weight(m)
    return g.per_query(w)


@ranking_metric("ndcg", aliases=("ndcg_cut",), cutoff="optional", trec="ndcg, ndcg_cut.K",
                legend="rank-discounted credit of every relevant unit",
                placement=Placement(main=("ndcg@{max}",), main_rank=30, sweep=("ndcg@{k}",), sweep_rank=50,
                                    budget=("ndcg@{budget}",)))
def ndcg(g: Graded, m: Metric) -> np.ndarray:
    """``ndcg`` — DCG / IDCG with linear gain: DCG = Σ gain(d) / log2(rank + 1) over retrieved items,
    gain(d) = grade(d) when it is > 0 else 0 (zero and negative grades add nothing; the relevance level
    does not apply, as in trec_eval).  IDCG is the DCG of the ideal list: every judged item with grade > 0,
    sorted by grade descending.  0 when IDCG = 0 (trec_eval ``ndcg``).

    ``ndcg@K`` — DCG and IDCG both cut at rank K (trec_eval ``ndcg_cut.K``).
    ``ndcg@B`` — each retrieved item's term weighted by its share inside the budget; the ideal list is cut
    at the same depth D = the sum of the shares of the retrieved items (its position j, 1-based, weighted
    by min(1, max(0, D - j + 1))), so a list that runs out before the budget is compared with an ideal
    list of its own length.
    """
    if "ideal" not in g.cache:
        pos_g = g.j_rel > 0
        gs, gg = g.j_s[pos_g], g.j_rel[pos_g].astype(np.float64)
        o = np.lexsort((-gg, gs))
        gs, gg = gs[o], gg[o]
        gpos = np.arange(gs.size) - group_starts(gs) if gs.size else np.empty(0, dtype=np.int64)
        gained = g.nz_rel > 0
        g.cache["ideal"] = (gs, gg, gpos, g.nz_s[gained], g.nz_rel[gained].astype(np.float64), g.nz_pos[gained],
                            g.nz_row[gained])
    gs, gg, gpos, sr, gain, pr, rows = g.cache["ideal"]
    disc = gain / np.log2(pr + 2.0)
    idisc = gg / np.log2(gpos + 2.0)
    if m.k is not None and m.unit is None:
        disc = disc * (pr < m.k)
        idisc = idisc * (gpos < m.k)
    elif m.k is not None:
        disc = disc * g.share(m.unit, m.k)[rows]
        idisc = idisc * np.clip(g.depth(m)[gs] - gpos, 0.0, 1.0)
    dcg = np.bincount(sr, weights=disc, minlength=g.nS)
    idcg = np.bincount(gs, weights=idisc, minlength=g.nS)
    return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


@ranking_metric("p", aliases=("precision",), cutoff="required", trec="P.K",
                legend="precision: share of the top k (or of the budget) that is relevant",
                placement=Placement(main=("p@{context}",), main_rank=40, sweep=("p@{k}",), sweep_rank=20,
                                    budget=("p@{budget}",)))
def precision(g: Graded, m: Metric) -> np.ndarray:
    """``p@K`` — (relevant items with rank <= K) / K.  Divides by K even when fewer than K items were
    retrieved (trec_eval ``P.K``).

    ``p@B`` — the part of the budget filled by relevant items / B: Σ over relevant items of
    share × size, divided by B even when the list runs out before the budget is spent.
    """
    if m.unit is not None:
        return g.filled(m) / m.k
    return g.count(m) / m.k


@ranking_metric("r", aliases=("recall",), cutoff="required", trec="recall.K",
                legend="recall: share of the relevant units in the top k (or within the budget)",
                placement=Placement(main=("r@{context}",), main_rank=50, sweep=("r@{k}",), sweep_rank=30,
                                    budget=("r@{budget}",)))
def recall(g: Graded, m: Metric) -> np.ndarray:
    """``r@K`` — (relevant items with rank <= K) / R (trec_eval ``recall.K``); 0 when R = 0.

    ``r@B`` — (Σ over relevant items of their share inside the budget) / R.
    """
    return np.where(g.nrel > 0, g.count(m) / g.safe_nrel, 0.0)


@ranking_metric("f", cutoff="required", forms=("f1@K", "fB@K (e.g. f0.5@3, f2@10)"),
                legend="F-beta of precision and recall (f1: their harmonic mean)",
                placement=Placement(main=("f1@{context}",), main_rank=60, sweep=("f0.5@{k}", "f1@{k}", "f2@{k}"),
                                    sweep_rank=40, budget=("f1@{budget}",)))
def fbeta(g: Graded, m: Metric) -> np.ndarray:
    """``fB@K`` — (1 + B²)·P·R / (B²·P + R) with P = ``p@K``, R = ``r@K``; 0 when P = R = 0.  This is the
    standard F-beta.  trec_eval's ``set_F.x`` (which has no cutoff) computes (1 + x)·P·R / (x·P + R), i.e.
    its parameter is B², not B: ``set_F.2`` is not F2.

    ``fB@budget`` — the same formula with P = ``p@budget`` and R = ``r@budget``.
    """
    P, Rc = precision(g, m), recall(g, m)
    b2 = m.beta * m.beta
    den = b2 * P + Rc
    return np.where(den > 0, (1.0 + b2) * P * Rc / np.where(den > 0, den, 1.0), 0.0)


@ranking_metric("rprec", aliases=("r-precision", "rprecision", "r_precision"), cutoff="none", budget=False,
                trec="Rprec", legend="precision at R (R = relevant units)",
                placement=Placement(main=("rprec",), main_rank=70))
def rprec(g: Graded, m: Metric) -> np.ndarray:
    """``rprec`` — (relevant items with rank <= R) / R (trec_eval ``Rprec``); 0 when R = 0.  It takes no
    cutoff and no budget: it cuts at R."""
    w = (g.pb < g.nrel[g.sb]).astype(np.float64)
    return np.where(g.nrel > 0, g.per_query(w) / g.safe_nrel, 0.0)


@ranking_metric("map", aliases=("ap", "map_cut"), cutoff="optional", trec="map, map_cut.K",
                legend="mean average precision", placement=Placement(main=("map",), main_rank=80))
def average_precision(g: Graded, m: Metric) -> np.ndarray:
    """``map`` — (1/R) · Σ over relevant retrieved items of (relevant items with rank <= its rank) / its
    rank.  Divides by R, not by the number retrieved (trec_eval ``map``); 0 when R = 0.

    ``map@K`` — the same sum restricted to rank <= K, still divided by R (trec_eval ``map_cut.K``).
    ``map@B`` — each relevant item's term weighted by its share inside the budget, divided by R.
    """
    w = g.cb / g.rankb
    if m.k is not None:
        w = w * g.weight(m)
    return np.where(g.nrel > 0, g.per_query(w) / g.safe_nrel, 0.0)
