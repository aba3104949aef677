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
raised with the reasons (naming the files, and showing ids of both sides when they share
none).

Warnings
--------
Some inputs are legal but almost always a mistake; the result lists them in ``warnings``
(the CLI prints them on stderr and in ``--json``):

* the run is empty (an empty run file): every scored query scores 0;
* the run is not empty but none of its queries is in the qrels (ids that differ, e.g.
  ``q1`` vs ``1``): every scored query scores 0.

Names
-----
Results are keyed by the metric names as asked (``recall@10`` stays ``recall@10``);
``RankingResult.canonical`` holds the canonical name of each (``r@10``), see
:mod:`ragexam.metrics.ranking.names`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from ragexam.data.trec import TrecColumns, codes_index, is_arrow, vocab_index, vocab_sort_rank, vocab_take
from ragexam.errors import InputError
from ragexam.metrics.ranking.containers import Qrels, Run
from ragexam.metrics.ranking.names import Metric, parse_metric, parse_metric_names

__all__ = ["evaluate", "RankingResult"]

#: Up to this many (query, document) cells (or 4 per run row), grades are looked up in a dense
#: table; beyond it, by hashing (query, document) pairs.
_DENSE_CELLS = 1 << 24


@dataclass
class RankingResult:
    """Per-query values and means of ranking metrics.

    ``values[i, j]`` is metric ``metrics[j]`` for query ``query_ids[i]``.  ``metrics`` are the
    names as asked; ``canonical[j]`` is the canonical name of ``metrics[j]``.  The mean of a
    metric is the plain mean over the scored queries.  ``warnings`` lists legal but suspicious
    inputs (see the module docstring).
    """

    metrics: list[str]
    query_ids: list[str]
    values: np.ndarray
    excluded: list[dict[str, str]] = field(default_factory=list)
    missing_from_run: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    canonical: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.canonical:
            self.canonical = [parse_metric(m).name for m in self.metrics]

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def mean(self) -> dict[str, float]:
        """``{metric as asked: mean over scored queries}``."""
        means = self.values.mean(axis=0)
        return {m: float(v) for m, v in zip(self.metrics, means)}

    @property
    def canonical_names(self) -> dict[str, str]:
        """``{metric as asked: canonical name}`` (e.g. ``{"recall@10": "r@10"}``)."""
        return dict(zip(self.metrics, self.canonical))

    @property
    def per_query(self) -> dict[str, dict[str, float]]:
        """``{qid: {metric as asked: value}}`` for every scored query."""
        from itertools import repeat

        return dict(zip(self.query_ids, map(dict, map(zip, repeat(self.metrics), self.values.tolist()))))

    def column(self, metric: str | Metric) -> np.ndarray:
        """The per-query values of one metric (aligned with ``query_ids``), by the name as
        asked or any other name of the same metric."""
        if isinstance(metric, str) and metric.strip() in self.metrics:
            return self.values[:, self.metrics.index(metric.strip())]
        name = parse_metric(metric).name
        try:
            return self.values[:, self.canonical.index(name)]
        except ValueError:
            raise InputError(f"metric {name!r} was not evaluated; evaluated: {self.metrics}",
                             source="metric") from None

    @property
    def signature(self) -> str:
        """Every setting that changes the numbers, ``key:value|...`` (version last)."""
        from ragexam.signature import Signature

        s = self.settings
        compat = bool(s.get("trec_compat"))
        return str(Signature([
            ("nq", self.n_queries),
            ("ties", "score-desc,docid-desc"),
            ("rel", s.get("relevance_level", 1)),
            ("gain", "linear"),
            ("missing", "dropped" if compat else "zero"),
            ("norel", "zero" if compat else "excluded"),
        ]))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object printed by ``ragexam evaluate --json``.

        ``metrics`` and ``per_query`` are keyed by the names as asked; ``canonical_names`` maps
        each to its canonical name (so ``-m recall@10`` gives ``{"recall@10": ...}`` and
        ``{"recall@10": "r@10"}``).  ``warnings`` lists legal but suspicious inputs.
        """
        return {
            "metrics": self.mean,
            "canonical_names": self.canonical_names,
            "per_query": self.per_query,
            "n_queries": self.n_queries,
            "excluded_queries": list(self.excluded),
            "missing_from_run": list(self.missing_from_run),
            "warnings": list(self.warnings),
            "signature": self.signature,
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON (Python's C encoder; an indent would force the
        pure-Python one, several times slower on many queries)."""
        import json

        return json.dumps(self.to_dict(), ensure_ascii=False, allow_nan=False)

    def to_dataframe(self):
        """One row per scored query, one column per metric as asked (index: query id)."""
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


def _group_starts(s: np.ndarray) -> np.ndarray:
    """For rows grouped contiguously by ``s``: the start row of each row's group."""
    n = s.size
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(s[1:], s[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    return np.repeat(starts, np.diff(np.append(starts, n)))


def _distinct(a: np.ndarray) -> np.ndarray:
    """Sorted distinct values (``np.unique`` without its overhead on large arrays)."""
    s = np.sort(a)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if s.size else s


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
    idx = np.flatnonzero(tie_rows)
    new_block = np.ones(idx.size, dtype=bool)
    new_block[1:] = ~ties[idx[1:] - 1]  # not tied with the row before: a new block starts
    block = np.cumsum(new_block)
    involved = _distinct(doc[idx])
    lex = vocab_sort_rank(doc_vocab, involved)
    sub = np.lexsort((-lex[np.searchsorted(involved, doc[idx])], block))
    perm = np.arange(n)
    perm[idx] = idx[sub]
    return perm if order is None else order[perm]


def _run_docs_in_qrels(rc: TrecColumns, qc: TrecColumns, run_q: np.ndarray) -> np.ndarray:
    """The qrels document code of each entry of the run's document vocabulary (-1: none), as
    far as it can matter: ``run_q`` maps the run's query codes to qrels query codes (-1: not
    scored), and an entry is looked up only among the documents judged for the queries of its
    own block.

    A run read in blocks has one dictionary per block (see ``TrecColumns.doc_segments``).
    Looking every entry up in the whole qrels vocabulary probes a table that outgrows the CPU
    caches on large qrels; per block, the table holds only the documents judged for the few
    queries of that block.  Runs not grouped by query (every query in every block) use the
    whole vocabulary.
    """
    whole = (not rc.doc_segments or qc.doc_segments or not is_arrow(rc.doc_vocab)
             or not is_arrow(qc.doc_vocab))
    if whole:
        return vocab_index(rc.doc_vocab, qc.doc_vocab)
    n, nq = rc.qid_codes.size, len(qc.qid_vocab)
    row_starts = np.array((0,) + rc.doc_segments, dtype=np.int64)
    voc_starts = np.array((0,) + rc.doc_segment_vocab + (len(rc.doc_vocab),), dtype=np.int64)
    qq = run_q[rc.qid_codes]
    # (block, qrels query) pairs: rows where the query changes, or a block starts
    first = np.ones(n, dtype=bool)
    np.not_equal(qq[1:], qq[:-1], out=first[1:])
    first[row_starts] = True
    cand = np.flatnonzero(first & (qq >= 0))
    pairs = _distinct((np.searchsorted(row_starts, cand, side="right") - 1) * nq + qq[cand])
    p_block, p_query = pairs // nq, pairs % nq
    # the judged documents of each pair's query
    per_q = np.bincount(qc.qid_codes, minlength=nq)
    cnt = per_q[p_query]
    if int(cnt.sum()) > 2 * qc.qid_codes.size:  # not grouped by query: per block would redo the whole
        return vocab_index(rc.doc_vocab, qc.doc_vocab)
    j_order = np.argsort(qc.qid_codes, kind="stable")
    j_start = np.concatenate(([0], np.cumsum(per_q)))[p_query]
    offset = np.concatenate(([0], np.cumsum(cnt)))[:-1]
    rows = j_order[np.repeat(j_start - offset, cnt) + np.arange(int(cnt.sum()))]
    width = np.int64(len(qc.doc_vocab))
    key = _distinct(np.repeat(p_block, cnt) * width + qc.doc_codes[rows])
    k_block, k_doc = key // width, key % width
    names = vocab_take(qc.doc_vocab, k_doc)
    bounds = np.searchsorted(k_block, np.arange(row_starts.size + 1))
    out = np.full(len(rc.doc_vocab), -1, dtype=np.int32 if width < 2**31 else np.int64)
    for b in range(row_starts.size):
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        if lo == hi:
            continue
        v0, v1 = int(voc_starts[b]), int(voc_starts[b + 1])
        at = vocab_index(rc.doc_vocab.slice(v0, v1 - v0), names.slice(lo, hi - lo))
        hit = np.flatnonzero(at >= 0)
        out[v0 + hit] = k_doc[lo + at[hit]]
    return out


def _sample(ids: list[str], n: int = 3) -> str:
    shown = ", ".join(repr(q) for q in ids[:n])
    return shown + (", ..." if len(ids) > n else "")


def _no_query_in(run_ids: list[str], run_where: str, qrels_ids: list[str], qrels_where: str) -> str:
    """'none of the 2 queries of R ('1', '2') is in Q ('q1', 'q2')', or 'the only query of R
    ('x') is not in Q (...)'."""
    if len(run_ids) == 1:
        return f"the only query of {run_where} ({_sample(run_ids)}) is not in {qrels_where} ({_sample(qrels_ids)})"
    return f"none of the {len(run_ids)} queries of {run_where} ({_sample(run_ids)}) is in {qrels_where} " \
           f"({_sample(qrels_ids)})"


def _where(obj: Qrels | Run, what: str) -> str:
    return f"the {what} file {obj.source}" if obj.source else f"the {what}"


def evaluate(qrels: Any, run: Any, metrics: Iterable[str | Metric] | str, *, relevance_level: int = 1,
             trec_compat: bool = False) -> RankingResult:
    """Evaluate ``run`` against ``qrels`` on ``metrics`` (see the module docstring).

    ``qrels`` and ``run`` may be :class:`Qrels`/:class:`Run`, paths to TREC files,
    dicts (``{qid: {docid: grade}}``; ``{qid: {docid: score}}`` or ``{qid: [docid, ...]}``)
    or pandas DataFrames.  ``metrics`` are names such as ``"ndcg@10"`` or
    ``["map", "p@5", "f0.5@3"]``; the result is keyed by the names as given.
    """
    named = parse_metric_names(metrics)
    mets = [m for _, m in named]
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, (int, np.integer)) \
            or relevance_level < 1:
        raise InputError(f"relevance_level must be an integer grade >= 1 (unjudged documents have grade 0), "
                         f"got {relevance_level!r}", source="relevance_level")
    level = int(relevance_level)
    Q = _as_qrels(qrels)
    Rn = _as_run(run)
    qc, rc = Q.cols, Rn.cols

    # --- which queries are scored --------------------------------------------------------------
    qv = qc.qid_vocab  # qrels queries with at least one judgment, by code
    nq = len(qv)
    nrel_q = np.bincount(qc.qid_codes, weights=(qc.values >= level), minlength=nq)
    run_qids = Rn.query_ids  # the run's vocabulary first (codes), then queries with no rows
    run_in_q = vocab_index(run_qids, qv)
    in_run = np.zeros(nq, dtype=bool)
    in_run[run_in_q[run_in_q >= 0]] = True
    scored_mask = in_run if trec_compat else nrel_q > 0
    scored_codes = np.flatnonzero(scored_mask)
    scored_codes = np.array(sorted(scored_codes.tolist(), key=qv.__getitem__), dtype=np.int64)
    scored = [qv[i] for i in scored_codes.tolist()]
    nS = len(scored)
    excluded: list[dict[str, str]] = []
    for qi in np.flatnonzero(~scored_mask).tolist():
        reason = ("not in the run (dropped, as trec_eval does)" if trec_compat
                  else f"no relevant judgment (no grade >= {level})")
        excluded.append({"query_id": qv[qi], "reason": reason})
    judged = set(qv)
    excluded += [{"query_id": q, "reason": "no judgments"} for q in Q.extra_qids if q not in judged]
    qrels_all = judged | set(Q.extra_qids)
    excluded += [{"query_id": run_qids[i], "reason": "not in qrels"} for i in np.flatnonzero(run_in_q < 0).tolist()
                 if run_qids[i] not in qrels_all]
    excluded.sort(key=lambda e: (e["reason"] == "not in qrels", e["query_id"]))
    missing = [] if trec_compat else sorted(qv[i] for i in np.flatnonzero(scored_mask & ~in_run).tolist())
    settings = {"relevance_level": level, "trec_compat": bool(trec_compat)}
    warnings: list[str] = []
    run_empty = rc.qid_codes.size == 0
    overlap = bool(in_run.any())
    if run_empty:
        warnings.append(f"{_where(Rn, 'run')} is empty: it ranks nothing, so every query scores 0"
                        if Rn.source or not run_qids else
                        "the run retrieves nothing for any query, so every query scores 0")
    elif not overlap:
        warnings.append(f"{_no_query_in(run_qids, _where(Rn, 'run'), Q.query_ids, _where(Q, 'qrels'))}, so every "
                        "query scores 0; do the query ids match?")
    if not scored:
        raise _nothing_scorable(Q, Rn, excluded, run_qids, overlap, run_empty, level)

    # --- qrels rows restricted to scored queries --------------------------------------------
    q_s_of_code = np.full(nq, -1, dtype=np.int64)
    q_s_of_code[scored_codes] = np.arange(nS)
    j_all = q_s_of_code[qc.qid_codes]
    keep = j_all >= 0
    j_s = j_all[keep]
    j_doc = qc.doc_codes[keep]
    if qc.doc_segments:  # the vocabulary may repeat a string: use each string's first code
        j_doc = vocab_index(qc.doc_vocab, qc.doc_vocab)[j_doc]
    j_rel = qc.values[keep]
    nrel = np.bincount(j_s, weights=(j_rel >= level), minlength=nS)

    # --- run rows restricted to scored queries, ordered -------------------------------------
    n_rv = len(rc.qid_vocab)
    r_s_of_code = np.where(run_in_q[:n_rv] >= 0, q_s_of_code[np.maximum(run_in_q[:n_rv], 0)], -1)
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

    # --- graded run rows ---------------------------------------------------------------------
    # Every metric is a sum over relevant (or positively graded) rows only, so only the rows
    # with a nonzero grade are kept (typically a few per query): ``nz`` (in run order), their
    # grades and their 0-based ranks.
    n = s.size
    nz = np.empty(0, dtype=np.int64)
    nz_rel = np.empty(0, dtype=np.int64)
    if n and j_s.size:
        run_q = np.where(r_s_of_code >= 0, run_in_q[:n_rv], -1)
        dq = _run_docs_in_qrels(rc, qc, run_q)[doc]  # run doc code -> qrels doc code
        width = len(qc.doc_vocab)
        if nS * (width + 1) <= max(_DENSE_CELLS, 4 * n) and -128 <= j_rel.min() and j_rel.max() <= 127:
            # few (query, document) cells (a small document vocabulary): a dense table of
            # grades, one gather per run row (-1, a document never judged, hits the zero column)
            table = np.zeros((nS, width + 1), dtype=np.int8)
            table[j_s, j_doc] = j_rel
            rel = table[s, dq]
            nz = np.flatnonzero(rel)
            nz_rel = rel[nz].astype(np.int64)
        else:
            has = np.flatnonzero(dq >= 0)
            w = np.int64(width)
            at = codes_index(s[has] * w + dq[has], j_s * w + j_doc)  # qrels row of each (query, doc)
            found = np.flatnonzero(at >= 0)
            grade = j_rel[at[found]]
            nonzero = grade != 0
            nz, nz_rel = has[found[nonzero]], grade[nonzero]
    if nz.size:
        change = np.empty(n, dtype=bool)
        change[0] = True
        np.not_equal(s[1:], s[:-1], out=change[1:])
        starts = np.flatnonzero(change)
        first_row = np.zeros(nS, dtype=np.int64)
        first_row[s[starts]] = starts  # rows are grouped by query
        nz_s = s[nz]
        nz_pos = nz - first_row[nz_s]
    else:
        nz_s = nz_pos = np.empty(0, dtype=np.int64)
    relevant = nz_rel >= level
    sb, pb = nz_s[relevant], nz_pos[relevant]
    if sb.size:
        cb = (np.arange(sb.size, dtype=np.int64) - _group_starts(sb) + 1).astype(np.float64)  # relevant up to here
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
                gpos = np.arange(gs.size) - _group_starts(gs)
            else:
                gpos = np.empty(0, dtype=np.int64)
            gained = nz_rel > 0
            ideal_cache["ideal"] = (gs, gg, gpos, nz_s[gained], nz_rel[gained].astype(np.float64), nz_pos[gained])
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
    return RankingResult(metrics=[name for name, _ in named], query_ids=scored, values=values,
                         excluded=excluded, missing_from_run=missing, settings=settings,
                         canonical=[m.name for m in mets], warnings=warnings)


def _nothing_scorable(Q: Qrels, Rn: Run, excluded: list[dict[str, str]], run_qids: list[str], overlap: bool,
                      run_empty: bool, level: int) -> InputError:
    """The error when no query can be scored, saying why in the user's terms."""
    qrels_ids = Q.query_ids
    if not qrels_ids:
        why = f"{_where(Q, 'qrels')} holds no judgment"
    elif run_empty and excluded and all(e["reason"].startswith("not in the run") for e in excluded):
        why = f"{_where(Rn, 'run')} is empty, and with trec_compat a query absent from the run is dropped"
    elif run_qids and not overlap:
        why = f"{_no_query_in(run_qids, _where(Rn, 'run'), qrels_ids, _where(Q, 'qrels'))}; do the query ids match?"
    else:
        from collections import Counter

        counts = Counter(e["reason"] for e in excluded)
        why = "; ".join(f"{n} {'query' if n == 1 else 'queries'} excluded, {r}" for r, n in sorted(counts.items()))
        why = f"{why} ({_where(Q, 'qrels')}, {_where(Rn, 'run')})"
        top = int(Q.cols.values.max()) if Q.cols.values.size else None
        if level > 1 and top is not None and 1 <= top < level:
            why += f"; the highest grade in the qrels is {top}: lower the relevance level (now {level})"
    return InputError(f"no query can be scored: {why}", source=Q.source or "qrels")


