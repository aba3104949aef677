"""The judgments of one evaluation, prepared for the kernels: which queries are scored, and the graded
rows of the run (rank, grade) as numpy arrays.

:func:`select_queries` decides which queries are scored (the rules are in the engine's module docstring);
:func:`prepare` orders the run (score descending, docid descending, as trec_eval) and keeps the rows with a
nonzero grade; :class:`Graded` is what every kernel (:mod:`~ragexam.metrics.ranking.kernels`) receives.

Context budgets
---------------
A metric cut at a budget (``p@512t``, ``ndcg@2000c``) reads the ranked list in rank order until the budget
is spent.  Each ranked item has a *start* (budget spent before it) and a *size* (from
:class:`~ragexam.metrics.ranking.containers.ContextSizes`; by default the start is the sum of the sizes
ranked above it).  Its *share* inside a budget ``B`` is::

    share = 0                          if start >= B (the budget is spent before it)
    share = min(1, (B - start) / size) otherwise, for size > 0
    share = 1                          otherwise, for size = 0 (an empty item read before the budget ends)

so an item that straddles the budget counts by the fraction of it inside, and ``share * size`` is the part
of the budget it fills.  The kernels weight each item by its share where a chunk-count cutoff ``K`` would
weight it by ``rank <= K``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ragexam.data.trec import TrecColumns, Vocab, codes_index, is_arrow, vocab_index, vocab_list, vocab_sort_rank, vocab_take
from ragexam.errors import InputError
from ragexam.metrics.ranking.containers import ContextSizes, Qrels, Run
from ragexam.metrics.ranking.registry import Metric

__all__ = ["Graded", "Selection", "select_queries", "prepare", "BUDGET_UNITS"]

#: budget unit suffix -> its name in messages
BUDGET_UNITS = {"c": "characters", "t": "tokens"}


def group_starts(s: np.ndarray) -> np.ndarray:
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


# -- which queries are scored ---------------------------------------------------------------------------------


@dataclass
class Selection:
    """The scored queries (``codes`` into the qrels' query vocabulary, ``ids`` sorted by id) and what the
    result lists beside the values: ``excluded``, ``missing`` (scored but absent from the run), ``warnings``."""

    codes: np.ndarray
    ids: List[str]
    excluded: List[Dict[str, str]]
    missing: List[str]
    warnings: List[str]
    run_in_q: np.ndarray  # the run's query codes -> qrels query codes (-1: not in the qrels)
    overlap: bool
    run_empty: bool


def where(obj: Qrels | Run, what: str) -> str:
    """``the run file F`` or ``the run`` (built in memory)."""
    return f"the {what} file {obj.source}" if obj.source else f"the {what}"


def _sample(ids: List[str], n: int = 3) -> str:
    shown = ", ".join(repr(q) for q in ids[:n])
    return shown + (", ..." if len(ids) > n else "")


def no_query_in(run_ids: List[str], run_where: str, qrels_ids: List[str], qrels_where: str) -> str:
    """'none of the 2 queries of R ('1', '2') is in Q ('q1', 'q2')', or 'the only query of R
    ('x') is not in Q (...)'."""
    if len(run_ids) == 1:
        return f"the only query of {run_where} ({_sample(run_ids)}) is not in {qrels_where} ({_sample(qrels_ids)})"
    return f"none of the {len(run_ids)} queries of {run_where} ({_sample(run_ids)}) is in {qrels_where} " \
           f"({_sample(qrels_ids)})"


def select_queries(Q: Qrels, Rn: Run, level: int, trec_compat: bool) -> Selection:
    """Which queries are scored, which are excluded (with the reason) and the warnings."""
    qc, rc = Q.cols, Rn.cols
    qv = qc.qid_vocab  # qrels queries with at least one judgment, by code
    nq = len(qv)
    nrel_q = np.bincount(qc.qid_codes, weights=(qc.values >= level), minlength=nq)
    run_qids = Rn.query_ids  # the run's vocabulary first (codes), then queries with no rows
    run_in_q = vocab_index(run_qids, qv)
    in_run = np.zeros(nq, dtype=bool)
    in_run[run_in_q[run_in_q >= 0]] = True
    scored_mask = in_run if trec_compat else nrel_q > 0
    codes = np.array(sorted(np.flatnonzero(scored_mask).tolist(), key=qv.__getitem__), dtype=np.int64)
    excluded: List[Dict[str, str]] = []
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
    warnings: List[str] = []
    run_empty = rc.qid_codes.size == 0
    overlap = bool(in_run.any())
    if run_empty:
        warnings.append(f"{where(Rn, 'run')} is empty: it ranks nothing, so every query scores 0"
                        if Rn.source or not run_qids else
                        "the run retrieves nothing for any query, so every query scores 0")
    elif not overlap:
        warnings.append(f"{no_query_in(run_qids, where(Rn, 'run'), Q.query_ids, where(Q, 'qrels'))}, so every "
                        "query scores 0; do the query ids match?")
    return Selection(codes, [qv[i] for i in codes.tolist()], excluded, missing, warnings, run_in_q, overlap,
                     run_empty)


# -- the graded rows ------------------------------------------------------------------------------------------


@dataclass
class Graded:
    """What a kernel receives: the scored queries' judgments and graded run rows.

    Per scored query (``nS`` of them, arrays of length ``nS``): ``nrel`` (R, the relevant units in the qrels).
    Relevant run rows (grade >= the relevance level), in run order: ``sb`` (their query), ``pb`` (0-based
    rank), ``cb`` (relevant rows up to and including this one), ``rankb`` (1-based rank) and ``rel_row`` (the
    run row).  Graded run rows (grade != 0): ``nz_s``, ``nz_pos``, ``nz_rel`` and ``nz_row``.  Qrels rows of
    scored queries: ``j_s`` (query), ``j_rel`` (grade).  Run rows, ordered: ``s`` (query).  Kernels use the helpers: :meth:`weight`, :meth:`count`, :meth:`per_query`, :meth:`depth`,
    :meth:`share`.
    """

    nS: int
    nrel: np.ndarray
    j_s: np.ndarray
    j_rel: np.ndarray
    s: np.ndarray
    nz_s: np.ndarray
    nz_pos: np.ndarray
    nz_rel: np.ndarray
    nz_row: np.ndarray
    sb: np.ndarray
    pb: np.ndarray
    cb: np.ndarray
    rankb: np.ndarray
    rel_row: np.ndarray
    row_keys: Optional[Callable[[], List[Tuple[str, str]]]] = field(default=None, repr=False)  # (query id, item id) of each run row
    sizes: Dict[str, ContextSizes] = field(default_factory=dict, repr=False)
    cache: Dict[tuple, Any] = field(default_factory=dict, repr=False)

    @property
    def safe_nrel(self) -> np.ndarray:
        return np.where(self.nrel > 0, self.nrel, 1.0)

    def per_query(self, weights: np.ndarray, rows: Optional[np.ndarray] = None) -> np.ndarray:
        """Sum of ``weights`` per scored query (``rows``: the query of each weight; default ``sb``)."""
        return np.bincount(self.sb if rows is None else rows, weights=weights, minlength=self.nS)

    def weight(self, m: Metric, rows: str = "relevant") -> np.ndarray:
        """How much each relevant (``rows="relevant"``) or graded (``"graded"``) row counts under ``m``'s
        cutoff: 1 without one, ``rank <= K`` for a count ``K``, the row's share for a budget."""
        pos = self.pb if rows == "relevant" else self.nz_pos
        if m.k is None:
            return np.ones(pos.size)
        if m.unit is None:
            return (pos < m.k).astype(np.float64)
        share = self.share(m.unit, m.k)
        return share[self.rel_row if rows == "relevant" else self.nz_row]

    def count(self, m: Metric) -> np.ndarray:
        """Relevant items within ``m``'s cutoff, per query (a straddling item by its share)."""
        key = ("count", m.k, m.unit)
        if key not in self.cache:
            self.cache[key] = self.per_query(self.weight(m))
        return self.cache[key]

    def filled(self, m: Metric) -> np.ndarray:
        """For a budget metric: the part of the budget filled by relevant items, per query."""
        _, size = self.row_sizes(m.unit)
        return self.per_query(self.weight(m) * size[self.rel_row])

    def depth(self, m: Metric) -> np.ndarray:
        """Positions read under ``m``'s cutoff, per query: ``K`` for a count, the sum of the shares of
        every ranked item for a budget (so the ideal list of NDCG is cut at the same fractional depth)."""
        if m.unit is None:
            return np.full(self.nS, float(m.k))
        return np.bincount(self.s, weights=self.share(m.unit, m.k), minlength=self.nS)

    def row_sizes(self, unit: str) -> Tuple[np.ndarray, np.ndarray]:
        """``(start, size)`` of every run row in ``unit`` (see the module docstring)."""
        key = ("sizes", unit)
        if key not in self.cache:
            self.cache[key] = _row_sizes(self, unit)
        return self.cache[key]

    def share(self, unit: str, budget: int) -> np.ndarray:
        """The share of every run row inside ``budget`` (module docstring)."""
        key = ("share", unit, budget)
        if key not in self.cache:
            start, size = self.row_sizes(unit)
            room = budget - start
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(size > 0, room / np.where(size > 0, size, 1.0), 1.0)
            self.cache[key] = np.where(room > 0, np.clip(frac, 0.0, 1.0), 0.0)
        return self.cache[key]


def _row_sizes(g: Graded, unit: str) -> Tuple[np.ndarray, np.ndarray]:
    name = BUDGET_UNITS.get(unit, unit)
    cs = g.sizes.get(unit)
    if cs is None:
        raise InputError(f"a metric cut at a budget in {name} was asked, but no sizes in {name} were given; pass "
                         f"sizes=[ContextSizes({unit!r}, ...)] to evaluate (ragexam run computes them from the "
                         "chunks), or cut at a number of items (e.g. p@5)", source="sizes", field=unit)
    keys = g.row_keys()
    start = np.empty(len(keys))
    size = np.empty(len(keys))
    for i, (q, d) in enumerate(keys):
        got = cs.items.get(q, {}).get(d)
        if got is None:
            raise InputError(f"no size in {name} for item {d!r} of query {q!r}; give a size for every ranked "
                             "item", source="sizes", field=f"{q}/{d}")
        start[i], size[i] = got
    return start, size


def _scored_qrels(qc: TrecColumns, sel: Selection, nS: int):
    """Qrels rows of the scored queries: ``(scored index of each query code, j_s, j_doc, j_rel, nrel)``."""
    q_s_of_code = np.full(len(qc.qid_vocab), -1, dtype=np.int64)
    q_s_of_code[sel.codes] = np.arange(nS)
    j_all = q_s_of_code[qc.qid_codes]
    keep = j_all >= 0
    j_s = j_all[keep]
    j_doc = qc.doc_codes[keep]
    if qc.doc_segments:  # the vocabulary may repeat a string: use each string's first code
        j_doc = vocab_index(qc.doc_vocab, qc.doc_vocab)[j_doc]
    return q_s_of_code, j_s, j_doc, qc.values[keep]


def _ordered_run(rc: TrecColumns, sel: Selection, q_s_of_code: np.ndarray):
    """Run rows of the scored queries in evaluation order: ``(s, doc, r_s_of_code)``."""
    n_rv = len(rc.qid_vocab)
    run_in_q = sel.run_in_q
    r_s_of_code = np.where(run_in_q[:n_rv] >= 0, q_s_of_code[np.maximum(run_in_q[:n_rv], 0)], -1)
    rs_all = r_s_of_code[rc.qid_codes] if rc.qid_codes.size else np.empty(0, dtype=np.int64)
    keep_r = rs_all >= 0
    if keep_r.all():
        s, doc, score = rs_all, rc.doc_codes, rc.values
    else:
        s, doc, score = rs_all[keep_r], rc.doc_codes[keep_r], rc.values[keep_r]
    # trec_eval keeps scores as C floats: compare in single precision, as it does.
    order = order_rows(s, score.astype(np.float32), doc, rc.doc_vocab)
    if order is not None:
        s, doc = s[order], doc[order]
    return s, doc, r_s_of_code


def _graded_rows(qc: TrecColumns, rc: TrecColumns, sel: Selection, s, doc, r_s_of_code, j_s, j_doc, j_rel, nS,
                 dense_cells: int):
    """``(nz, nz_rel)``: the run rows with a nonzero grade (in run order) and their grades; grades are looked
    up in a dense (query, document) table up to ``dense_cells`` cells (or 4 per run row), else by hashing."""
    n = s.size
    if not (n and j_s.size):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    n_rv = len(rc.qid_vocab)
    run_q = np.where(r_s_of_code >= 0, sel.run_in_q[:n_rv], -1)
    dq = run_docs_in_qrels(rc, qc, run_q)[doc]  # run doc code -> qrels doc code
    width = len(qc.doc_vocab)
    if nS * (width + 1) <= max(dense_cells, 4 * n) and -128 <= j_rel.min() and j_rel.max() <= 127:
        # few (query, document) cells (a small document vocabulary): a dense table of
        # grades, one gather per run row (-1, a document never judged, hits the zero column)
        table = np.zeros((nS, width + 1), dtype=np.int8)
        table[j_s, j_doc] = j_rel
        rel = table[s, dq]
        nz = np.flatnonzero(rel)
        return nz, rel[nz].astype(np.int64)
    has = np.flatnonzero(dq >= 0)
    w = np.int64(width)
    at = codes_index(s[has] * w + dq[has], j_s * w + j_doc)  # qrels row of each (query, doc)
    found = np.flatnonzero(at >= 0)
    grade = j_rel[at[found]]
    nonzero = grade != 0
    return has[found[nonzero]], grade[nonzero]


def _positions(s: np.ndarray, nz: np.ndarray, nS: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(query, 0-based rank)`` of the run rows ``nz`` (rows are grouped by query)."""
    if not nz.size:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    n = s.size
    change = np.empty(n, dtype=bool)
    change[0] = True
    np.not_equal(s[1:], s[:-1], out=change[1:])
    starts = np.flatnonzero(change)
    first_row = np.zeros(nS, dtype=np.int64)
    first_row[s[starts]] = starts
    nz_s = s[nz]
    return nz_s, nz - first_row[nz_s]


def prepare(Q: Qrels, Rn: Run, sel: Selection, level: int, sizes: Sequence[ContextSizes] = (), *,
            dense_cells: int = 1 << 24) -> Graded:
    """The :class:`Graded` rows of the scored queries of ``sel`` (``dense_cells``: see :func:`_graded_rows`)."""
    qc, rc = Q.cols, Rn.cols
    nS = len(sel.ids)
    q_s_of_code, j_s, j_doc, j_rel = _scored_qrels(qc, sel, nS)
    nrel = np.bincount(j_s, weights=(j_rel >= level), minlength=nS)
    s, doc, r_s_of_code = _ordered_run(rc, sel, q_s_of_code)
    nz, nz_rel = _graded_rows(qc, rc, sel, s, doc, r_s_of_code, j_s, j_doc, j_rel, nS, dense_cells)
    nz_s, nz_pos = _positions(s, nz, nS)
    relevant = nz_rel >= level
    sb, pb = nz_s[relevant], nz_pos[relevant]
    cb = (np.arange(sb.size, dtype=np.int64) - group_starts(sb) + 1).astype(np.float64) if sb.size \
        else np.empty(0, dtype=np.float64)  # relevant up to here

    def row_keys() -> List[Tuple[str, str]]:
        names = vocab_list(rc.doc_vocab)
        return [(sel.ids[q], names[d]) for q, d in zip(s.tolist(), doc.tolist())]

    return Graded(nS=nS, nrel=nrel, j_s=j_s, j_rel=j_rel, s=s, nz_s=nz_s, nz_pos=nz_pos, nz_rel=nz_rel,
                  nz_row=nz, sb=sb, pb=pb, cb=cb, rankb=pb + 1.0, rel_row=nz[relevant], row_keys=row_keys,
                  sizes={c.unit: c for c in sizes})


# -- ordering and the document join ---------------------------------------------------------------------------


def order_rows(s: np.ndarray, score: np.ndarray, doc: np.ndarray, doc_vocab: Vocab) -> np.ndarray | None:
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


def run_docs_in_qrels(rc: TrecColumns, qc: TrecColumns, run_q: np.ndarray) -> np.ndarray:
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
    if rc.doc_base is not None and rc.doc_base is qc.doc_vocab:  # judged documents have their qrels codes
        out = np.full(len(rc.doc_vocab), -1, dtype=np.int64)
        out[:len(qc.doc_vocab)] = np.arange(len(qc.doc_vocab))
        return out
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
