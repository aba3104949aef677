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

The metrics themselves are registered kernels (:mod:`~ragexam.metrics.ranking.registry`); the built-in
ones and their definitions, edge cases included, are in :mod:`~ragexam.metrics.ranking.kernels`: ``hit@K``
(trec_eval ``success.K``), ``mrr`` (``recip_rank``), ``mrr@K``, ``p@K`` (``P.K``), ``r@K`` (``recall.K``),
``fB@K``, ``rprec`` (``Rprec``), ``map`` and ``map@K`` (``map``, ``map_cut.K``), ``ndcg`` and ``ndcg@K``
(``ndcg``, ``ndcg_cut.K``).  Every metric with a cutoff can be cut at a context budget instead
(``p@512t``, ``ndcg@2000c``), given the size of every ranked item (``sizes``,
:class:`~ragexam.metrics.ranking.containers.ContextSizes`).

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

from ragexam.errors import InputError
from ragexam.metrics.ranking.containers import ContextSizes, Qrels, QrelsLike, Run, RunLike
from ragexam.metrics.ranking.graded import no_query_in, prepare, select_queries, where
from ragexam.metrics.ranking.names import Metric, parse_metric, parse_metric_names
from ragexam.signature import Signature
from ragexam.metrics.ranking.registry import kernel_for

__all__ = ["evaluate", "RankingResult"]

#: Up to this many (query, document) cells (or 4 per run row), grades are looked up in a dense
#: table; beyond it, by hashing (query, document) pairs.
_DENSE_CELLS = 1 << 24
#: what a budget unit counts when its sizes do not say (``ContextSizes.counter``)
_COUNTED = {"c": "chars", "t": "tokens"}


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
    def signature(self) -> Signature:
        """Every setting that changes the numbers, ``key:value|...`` (version last)."""
        s = self.settings
        compat = bool(s.get("trec_compat"))
        return Signature([
            ("nq", self.n_queries),
            ("ties", "score-desc,docid-desc"),
            ("rel", s.get("relevance_level", 1)),
            ("gain", "linear"),
            ("missing", "dropped" if compat else "zero"),
            ("norel", "zero" if compat else "excluded"),
            *((("budget", s["budget"]),) if s.get("budget") else ()),
        ])

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


def _as_qrels(q: QrelsLike) -> Qrels:
    if isinstance(q, Qrels):
        return q
    if isinstance(q, (str, os.PathLike)):
        return Qrels.from_file(q)
    if hasattr(q, "columns") and hasattr(q, "iloc"):
        return Qrels.from_dataframe(q)
    return Qrels.from_dict(q)


def _as_run(r: RunLike, qrels: Qrels) -> Run:
    if isinstance(r, Run):
        return r
    if isinstance(r, (str, os.PathLike)):
        return Run.from_file(r, qrels)
    if hasattr(r, "columns") and hasattr(r, "iloc"):
        return Run.from_dataframe(r)
    return Run.from_dict(r)


def evaluate(qrels: QrelsLike, run: RunLike, metrics: Iterable[str | Metric] | str, *, relevance_level: int = 1,
             trec_compat: bool = False, sizes: Iterable[ContextSizes] = ()) -> RankingResult:
    """Evaluate ``run`` against ``qrels`` on ``metrics`` (see the module docstring).

    ``qrels`` and ``run`` may be :class:`Qrels`/:class:`Run`, paths to TREC files,
    dicts (``{qid: {docid: grade}}``; ``{qid: {docid: score}}`` or ``{qid: [docid, ...]}``)
    or pandas DataFrames.  ``metrics`` are names such as ``"ndcg@10"`` or
    ``["map", "p@5", "f0.5@3", "p@512t"]``; the result is keyed by the names as given.  ``sizes``: the
    :class:`ContextSizes` of the ranked items in each unit that a budget metric (``@512t``, ``@2000c``) uses.
    """
    named = parse_metric_names(metrics)
    mets = [m for _, m in named]
    if isinstance(relevance_level, bool) or not isinstance(relevance_level, (int, np.integer)) \
            or relevance_level < 1:
        raise InputError(f"relevance_level must be an integer grade >= 1 (unjudged documents have grade 0), "
                         f"got {relevance_level!r}", source="relevance_level")
    level = int(relevance_level)
    Q = _as_qrels(qrels)
    Rn = _as_run(run, Q)
    sel = select_queries(Q, Rn, level, trec_compat)
    if not sel.ids:
        raise _nothing_scorable(Q, Rn, sel.excluded, Rn.query_ids, sel.overlap, sel.run_empty, level)
    g = prepare(Q, Rn, sel, level, list(sizes), dense_cells=_DENSE_CELLS)
    cols = [kernel_for(m.kind).fn(g, m) for m in mets]
    values = np.column_stack(cols) if cols else np.empty((g.nS, 0))
    settings: dict[str, Any] = {"relevance_level": level, "trec_compat": bool(trec_compat)}
    units = sorted({m.unit for m in mets if m.unit is not None})
    if units:  # budget metrics: how a straddling item counts, and what each unit was counted with
        counted = {c.unit: c.counter for c in g.sizes.values()}
        settings["budget"] = "share," + ",".join(f"{u}={counted.get(u) or _COUNTED[u]}" for u in units)
    return RankingResult(metrics=[name for name, _ in named], query_ids=sel.ids, values=values,
                         excluded=sel.excluded, missing_from_run=sel.missing, settings=settings,
                         canonical=[m.name for m in mets], warnings=sel.warnings)


def _nothing_scorable(Q: Qrels, Rn: Run, excluded: list[dict[str, str]], run_qids: list[str], overlap: bool,
                      run_empty: bool, level: int) -> InputError:
    """The error when no query can be scored, saying why in the user's terms."""
    qrels_ids = Q.query_ids
    if not qrels_ids:
        why = f"{where(Q, 'qrels')} holds no judgment"
    elif run_empty and excluded and all(e["reason"].startswith("not in the run") for e in excluded):
        why = f"{where(Rn, 'run')} is empty, and with trec_compat a query absent from the run is dropped"
    elif run_qids and not overlap:
        why = f"{no_query_in(run_qids, where(Rn, 'run'), qrels_ids, where(Q, 'qrels'))}; do the query ids match?"
    else:
        from collections import Counter

        counts = Counter(e["reason"] for e in excluded)
        why = "; ".join(f"{n} {'query' if n == 1 else 'queries'} excluded, {r}" for r, n in sorted(counts.items()))
        why = f"{why} ({where(Q, 'qrels')}, {where(Rn, 'run')})"
        top = int(Q.cols.values.max()) if Q.cols.values.size else None
        if level > 1 and top is not None and 1 <= top < level:
            why += f"; the highest grade in the qrels is {top}: lower the relevance level (now {level})"
    return InputError(f"no query can be scored: {why}", source=Q.source or "qrels")


