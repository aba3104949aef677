"""The ranking-metrics engine: trec_eval's definitions, vectorized with numpy.

Definitions
-----------
For one query, let the run's items be ordered by score descending, ties broken by docid
descending (string comparison, as trec_eval does; ordered lists given without scores keep
their order).  Scores are compared in single precision (float32), because trec_eval stores
them as C ``float``: two scores equal to 7 significant digits tie. ``rank`` is the 1-based position in that order.  ``rel(d)`` is the grade of
document ``d`` in the qrels (0 when unjudged); ``d`` is *relevant* when
``rel(d) >= relevance_level`` (default 1).  ``R`` is the number of relevant documents in
the qrels for the query (retrieved or not).

* ``hit@K``  — 1 if some relevant item has ``rank <= K``, else 0 (trec_eval ``success.K``).
* ``mrr``    — 1 / rank of the first relevant item; 0 if none is retrieved (``recip_rank``).
* ``mrr@K``  — as ``mrr`` but 0 when the first relevant item is below rank ``K``.
* ``p@K``    — (relevant items with rank <= K) / K.  Divides by K even when fewer than K
  items were retrieved (``P.K``).
* ``r@K``    — (relevant items with rank <= K) / R (``recall.K``).
* ``fB@K``   — (1 + B²)·P·R / (B²·P + R) with P = ``p@K``, R = ``r@K``; 0 when P = R = 0.
  This is the standard F-beta.  trec_eval's ``set_F.x`` (which has no cutoff) computes
  (1 + x)·P·R / (x·P + R), i.e. its parameter is B², not B: ``set_F.2`` is not F2.
* ``rprec``  — (relevant items with rank <= R) / R (``Rprec``).
* ``map``    — (1/R) · Σ over relevant retrieved items of (relevant items with rank <= its
  rank) / its rank.  Divides by R, not by the number retrieved (``map``).
* ``map@K``  — the same sum restricted to rank <= K, still divided by R (``map_cut.K``).
* ``ndcg``   — DCG / IDCG with linear gain: DCG = Σ gain(d) / log2(rank + 1) over retrieved
  items, gain(d) = rel(d) when rel(d) > 0 else 0 (zero and negative grades add nothing;
  ``relevance_level`` does not apply, as in trec_eval).  IDCG is the DCG of the ideal list:
  every judged item with rel > 0, sorted by grade descending.  0 when IDCG = 0 (``ndcg``).
* ``ndcg@K`` — DCG and IDCG both cut at rank K (``ndcg_cut.K``).

Which queries are scored
------------------------
Default (for RAG evaluation):

* a query in the qrels with ``R >= 1`` is scored; if it is absent from the run it scores 0
  on every metric and is counted in the means (listed in ``missing_from_run``);
* a query with no relevant judgment (``R = 0``) cannot be scored: it is excluded from the
  means and listed in ``excluded`` with the reason (so is a query with no judgment at all,
  in both modes, as trec_eval does);
* a query only in the run is listed in ``excluded`` ("not in qrels").

``trec_compat=True`` reproduces trec_eval / pytrec_eval exactly: only queries in both the
qrels and the run are scored (a qrels query absent from the run is dropped and listed in
``excluded``), and a query with ``R = 0`` scores 0 on every metric and is counted.

No value is ever NaN; if no query can be scored, :class:`~ragexam.errors.InputError` is
raised with the reasons.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from ragexam.data.trec import vocab_list
from ragexam.errors import InputError
from ragexam.metrics.ranking.containers import Qrels, Run
from ragexam.metrics.ranking.names import Metric, parse_metrics

__all__ = ["evaluate", "RankingResult"]


@dataclass
class RankingResult:
    """Per-query values and means of ranking metrics.

    ``values[i, j]`` is metric ``metrics[j]`` for query ``query_ids[i]``.  The mean of a
    metric is the plain mean over the scored queries.
    """

    metrics: list[str]
    query_ids: list[str]
    values: np.ndarray
    excluded: list[dict[str, str]] = field(default_factory=list)
    missing_from_run: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def mean(self) -> dict[str, float]:
        """``{metric: mean over scored queries}``."""
        means = self.values.mean(axis=0)
        return {m: float(v) for m, v in zip(self.metrics, means)}

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """``{qid: {metric: value}}`` for every scored query."""
        rows = self.values.tolist()
        return {q: dict(zip(self.metrics, row)) for q, row in zip(self.query_ids, rows)}

    def column(self, metric: str | Metric) -> np.ndarray:
        """The per-query values of one metric (aligned with ``query_ids``)."""
        name = parse_metrics([metric])[0].name
        try:
            return self.values[:, self.metrics.index(name)]
        except ValueError:
            raise InputError(f"metric {name!r} was not evaluated; evaluated: {self.metrics}",
                             source="metric") from None

    @property
    def signature(self) -> str:
        """Every setting that changes the numbers, ``key:value|...`` (version last)."""
        from ragexam import __version__

        s = self.settings
        return "|".join([
            f"nq:{self.n_queries}",
            "ties:score-desc,docid-desc",
            f"rel:{s.get('relevance_level', 1)}",
            "gain:linear",
            f"missing:{'dropped' if s.get('trec_compat') else 'zero'}",
            f"norel:{'zero' if s.get('trec_compat') else 'excluded'}",
            f"version:ragexam-{__version__}",
        ])

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape printed by ``ragexam evaluate --json``."""
        return {
            "metrics": self.mean,
            "per_query": self.per_query,
            "n_queries": self.n_queries,
            "excluded_queries": list(self.excluded),
            "missing_from_run": list(self.missing_from_run),
            "signature": self.signature,
        }

    def to_dataframe(self):
        """One row per scored query, one column per metric (index: query id)."""
        import pandas as pd

        df = pd.DataFrame(self.values, columns=self.metrics, index=pd.Index(self.query_ids, name="query_id"))
        return df


def _as_qrels(q: Any) -> Qrels:
    if isinstance(q, Qrels):
        return q
    if isinstance(q, (str, os.PathLike)):
        return Qrels.from_file(q)
    if hasattr(q, "columns") and hasattr(q, "iloc"):
        return Qrels.from_dataframe(q)
    return Qrels.from_dict(q)


def _as_run(r: Any) -> Run:
    if isinstance(r, Run):
        return r
    if isinstance(r, (str, os.PathLike)):
        return Run.from_file(r)
    if hasattr(r, "columns") and hasattr(r, "iloc"):
        return Run.from_dataframe(r)
    return Run.from_dict(r)


def _lookup(keys: Any, vocab: Any) -> np.ndarray:
    """Index of each of ``keys`` in ``vocab`` (-1 when absent); lists or pyarrow string arrays.

    Two pyarrow arrays (files) are matched with pyarrow's hash kernel; otherwise a dict is used
    (converting Python lists to pyarrow would import pandas, which costs more than the lookup).
    """
    if len(keys) == 0:
        return np.empty(0, dtype=np.int64)
    if len(vocab) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    if hasattr(keys, "to_pylist") and hasattr(vocab, "to_pylist"):
        import pyarrow.compute as pc

        idx = pc.index_in(keys, value_set=vocab)
        values = np.frombuffer(idx.buffers()[1], dtype=np.int32)[idx.offset:idx.offset + len(idx)].astype(np.int64)
        if idx.null_count:  # read the validity bitmap (fill_null would import pandas)
            bits = np.unpackbits(np.frombuffer(idx.buffers()[0], dtype=np.uint8), bitorder="little")
            values[~bits[idx.offset:idx.offset + len(idx)].astype(bool)] = -1
        return values
    keys_l = vocab_list(keys)
    vocab_l = vocab_list(vocab)
    pos: dict[str, int] = {}
    for i, v in enumerate(vocab_l):
        pos.setdefault(v, i)
    return np.fromiter((pos.get(k, -1) for k in keys_l), dtype=np.int64, count=len(keys_l))


def _take(vocab: Any, idx: np.ndarray) -> Any:
    if hasattr(vocab, "take"):
        return vocab.take(idx)
    return [vocab[i] for i in idx.tolist()]


def _group_starts(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows grouped contiguously by ``s``: the start row of each row's group, and the group id."""
    n = s.size
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(s[1:], s[:-1], out=change[1:])
    gid = np.cumsum(change) - 1
    starts = np.flatnonzero(change)
    return starts[gid], gid


def _order_rows(s: np.ndarray, score: np.ndarray, doc: np.ndarray, doc_vocab: Any) -> np.ndarray | None:
    """Row order: grouped by query, score descending, docid descending.  ``None`` = already in order.

    Runs usually arrive grouped by query and sorted by score, so that case is checked
    first and costs no sort; tied scores are then re-ordered block by block.
    """
    n = s.size
    if n < 2:
        return None
    same_q = s[1:] == s[:-1]
    grouped = int(np.count_nonzero(~same_q)) + 1 == int(np.count_nonzero(np.bincount(s)))
    order: np.ndarray | None = None
    if not (grouped and not np.any(same_q & (score[1:] > score[:-1]))):
        order = np.lexsort((-score, s))
        s, score, doc = s[order], score[order], doc[order]
        same_q = s[1:] == s[:-1]
    ties = same_q & (score[1:] == score[:-1])
    if not ties.any():
        return order
    # Tie blocks: maximal runs of rows with the same query and score; order each by docid desc.
    tie_rows = np.zeros(n, dtype=bool)
    tie_rows[1:] |= ties
    tie_rows[:-1] |= ties
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    starts[1:] = ~ties
    block = np.cumsum(starts)
    idx = np.flatnonzero(tie_rows)
    involved = np.unique(doc[idx])
    names = np.array(vocab_list(_take(doc_vocab, involved)), dtype=object)
    lex = np.empty(involved.size, dtype=np.int64)
    lex[np.argsort(names, kind="stable")] = np.arange(involved.size)
    doc_rank = np.zeros(len(doc_vocab), dtype=np.int64)
    doc_rank[involved] = lex
    sub = np.lexsort((-doc_rank[doc[idx]], block[idx]))
    perm = np.arange(n)
    perm[idx] = idx[sub]
    return perm if order is None else order[perm]


def evaluate(qrels: Any, run: Any, metrics: Iterable[str | Metric] | str, *, relevance_level: int = 1,
             trec_compat: bool = False) -> RankingResult:
    """Evaluate ``run`` against ``qrels`` on ``metrics`` (see the module docstring).

    ``qrels`` and ``run`` may be :class:`Qrels`/:class:`Run`, paths to TREC files,
    dicts (``{qid: {docid: grade}}``; ``{qid: {docid: score}}`` or ``{qid: [docid, ...]}``)
    or pandas DataFrames.  ``metrics`` are names such as ``"ndcg@10"`` or
    ``["map", "p@5", "f0.5@3"]``.
    """
    mets = parse_metrics(metrics)
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, (int, np.integer)) \
            or relevance_level < 1:
        raise InputError(f"relevance_level must be an integer grade >= 1 (unjudged documents have grade 0), "
                         f"got {relevance_level!r}", source="relevance_level")
    level = int(relevance_level)
    Q = _as_qrels(qrels)
    Rn = _as_run(run)
    qc, rc = Q.cols, Rn.cols

    # --- which queries are scored --------------------------------------------------------------
    qrels_qids = Q.query_ids
    run_qids = Rn.query_ids
    run_qset = set(run_qids)
    qrels_qset = set(qrels_qids)
    nrel_by_code = np.bincount(qc.qid_codes, weights=(qc.values >= level), minlength=len(qc.qid_vocab))
    nrel_of = {q: int(nrel_by_code[i]) for i, q in enumerate(qc.qid_vocab)}
    excluded: list[dict[str, str]] = []
    missing: list[str] = []
    scored: list[str] = []
    judged = set(qc.qid_vocab)
    for q in sorted(qrels_qset):
        n_rel = nrel_of.get(q, 0)
        if q not in judged:
            excluded.append({"query_id": q, "reason": "no judgments"})
        elif trec_compat:
            if q in run_qset:
                scored.append(q)
            else:
                excluded.append({"query_id": q, "reason": "not in the run (dropped, as trec_eval does)"})
        elif n_rel == 0:
            excluded.append({"query_id": q, "reason": f"no relevant judgment (no grade >= {level})"})
        else:
            scored.append(q)
            if q not in run_qset:
                missing.append(q)
    for q in sorted(run_qset - qrels_qset):
        excluded.append({"query_id": q, "reason": "not in qrels"})
    settings = {"relevance_level": level, "trec_compat": bool(trec_compat)}
    if not scored:
        reasons = sorted({e["reason"] for e in excluded}) or ["the qrels are empty"]
        raise InputError("no query can be scored: " + "; ".join(reasons), source="qrels")
    nS = len(scored)
    scored_vocab = scored

    # --- qrels rows restricted to scored queries --------------------------------------------
    q_s_of_code = _lookup(qc.qid_vocab, scored_vocab)
    keep = q_s_of_code[qc.qid_codes] >= 0
    j_s = q_s_of_code[qc.qid_codes][keep]
    j_doc = qc.doc_codes[keep]
    if qc.doc_segments:  # the vocabulary may repeat a string: use each string's first code
        j_doc = _lookup(qc.doc_vocab, qc.doc_vocab)[j_doc]
    j_rel = qc.values[keep]
    nrel = np.bincount(j_s, weights=(j_rel >= level), minlength=nS)

    # --- run rows restricted to scored queries, ordered -------------------------------------
    r_s_of_code = _lookup(rc.qid_vocab, scored_vocab)
    rs_all = r_s_of_code[rc.qid_codes] if rc.qid_codes.size else np.empty(0, dtype=np.int64)
    keep_r = rs_all >= 0
    if keep_r.all():
        s, doc, score = rs_all, rc.doc_codes, rc.values
    else:
        s, doc, score = rs_all[keep_r], rc.doc_codes[keep_r], rc.values[keep_r]
    # trec_eval keeps scores as C floats: compare in single precision, as it does.
    order = _order_rows(s, score.astype(np.float32), doc, rc.doc_vocab)
    if order is not None:
        s, doc = s[order], doc[order]

    # --- relevance of each run row ---------------------------------------------------------
    n = s.size
    rel = np.zeros(n, dtype=np.int64)
    if n and j_s.size:
        run_doc_in_qrels = _lookup(rc.doc_vocab, qc.doc_vocab)  # run doc code -> qrels doc code
        dq = run_doc_in_qrels[doc]
        width = np.int64(len(qc.doc_vocab))
        jkey = j_s * width + j_doc
        jorder = np.argsort(jkey, kind="stable")
        jkey_sorted = jkey[jorder]
        has = dq >= 0
        rkey = s[has] * width + dq[has]
        pos_in = np.searchsorted(jkey_sorted, rkey)
        pos_in = np.minimum(pos_in, jkey_sorted.size - 1)
        hit = jkey_sorted[pos_in] == rkey
        vals = np.zeros(rkey.size, dtype=np.int64)
        vals[hit] = j_rel[jorder][pos_in[hit]]
        rel[has] = vals

    if n:
        start, _gid = _group_starts(s)
        pos = np.arange(n, dtype=np.int64) - start  # 0-based rank
    else:
        pos = np.empty(0, dtype=np.int64)
    # Every metric is a sum over relevant (or positively graded) rows only, so work on those
    # few rows (typically a few per query) instead of the whole run.
    bidx = np.flatnonzero(rel >= level)
    sb, pb = s[bidx], pos[bidx]
    if bidx.size:
        bstart, _ = _group_starts(sb)
        cb = (np.arange(bidx.size, dtype=np.int64) - bstart + 1).astype(np.float64)  # relevant up to here
    else:
        cb = np.empty(0, dtype=np.float64)
    rankb = pb + 1.0
    safe_nrel = np.where(nrel > 0, nrel, 1.0)

    cache: dict[tuple, np.ndarray] = {}

    def count_rel_at(k: int) -> np.ndarray:
        key = ("c", k)
        if key not in cache:
            cache[key] = np.bincount(sb, weights=(pb < k).astype(np.float64), minlength=nS)
        return cache[key]

    def precision(k: int) -> np.ndarray:
        return count_rel_at(k) / k

    def recall(k: int) -> np.ndarray:
        return np.where(nrel > 0, count_rel_at(k) / safe_nrel, 0.0)

    def rr(k: int | None) -> np.ndarray:
        w = (cb == 1.0) / rankb
        if k is not None:
            w = w * (pb < k)
        return np.bincount(sb, weights=w, minlength=nS)

    def ap(k: int | None) -> np.ndarray:
        w = cb / rankb
        if k is not None:
            w = w * (pb < k)
        return np.where(nrel > 0, np.bincount(sb, weights=w, minlength=nS) / safe_nrel, 0.0)

    def rprec() -> np.ndarray:
        w = (pb < nrel[sb]).astype(np.float64)
        return np.where(nrel > 0, np.bincount(sb, weights=w, minlength=nS) / safe_nrel, 0.0)

    ideal_cache: dict[str, tuple] = {}

    def ndcg(k: int | None) -> np.ndarray:
        if "ideal" not in ideal_cache:
            pos_g = j_rel > 0
            gs, gg = j_s[pos_g], j_rel[pos_g].astype(np.float64)
            o = np.lexsort((-gg, gs))
            gs, gg = gs[o], gg[o]
            if gs.size:
                gstart, _ = _group_starts(gs)
                gpos = np.arange(gs.size) - gstart
            else:
                gpos = np.empty(0, dtype=np.int64)
            ridx = np.flatnonzero(rel > 0)
            ideal_cache["ideal"] = (gs, gg, gpos, s[ridx], rel[ridx].astype(np.float64), pos[ridx])
        gs, gg, gpos, sr, gain, pr = ideal_cache["ideal"]
        disc = gain / np.log2(pr + 2.0)
        idisc = gg / np.log2(gpos + 2.0)
        if k is not None:
            disc = disc * (pr < k)
            idisc = idisc * (gpos < k)
        dcg = np.bincount(sr, weights=disc, minlength=nS)
        idcg = np.bincount(gs, weights=idisc, minlength=nS)
        return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)

    cols = []
    for m in mets:
        if m.kind == "hit":
            v = (count_rel_at(m.k) > 0).astype(np.float64)
        elif m.kind == "mrr":
            v = rr(m.k)
        elif m.kind == "p":
            v = precision(m.k)
        elif m.kind == "r":
            v = recall(m.k)
        elif m.kind == "f":
            P, Rc = precision(m.k), recall(m.k)
            b2 = m.beta * m.beta
            den = b2 * P + Rc
            v = np.where(den > 0, (1.0 + b2) * P * Rc / np.where(den > 0, den, 1.0), 0.0)
        elif m.kind == "rprec":
            v = rprec()
        elif m.kind == "map":
            v = ap(m.k)
        elif m.kind == "ndcg":
            v = ndcg(m.k)
        else:  # pragma: no cover - parse_metrics only yields the kinds above
            raise InputError(f"unsupported metric kind {m.kind!r}", source="metric")
        cols.append(v)
    values = np.column_stack(cols) if cols else np.empty((nS, 0))
    return RankingResult(metrics=[m.name for m in mets], query_ids=list(scored_vocab), values=values,
                         excluded=excluded, missing_from_run=missing, settings=settings)


