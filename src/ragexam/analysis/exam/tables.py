"""The tables of a ``ragexam run``, computed from per-question metric values.

Every function here takes a pipeline's per-question values as a numpy array ``V`` of shape
(scored questions × metrics), rows in question-set order and the same rows for every
pipeline, and returns plain JSON-ready dicts (the blocks of ``summary.json``,
docs/run-format.md).  What each table means:

* **main metrics** (:func:`main_metrics`): the columns of the headline table.  hit@1 and
  hit@k for each cutoff (is a relevant chunk among the first k?), MRR (1 / rank of the first
  relevant chunk), NDCG at the largest cutoff (how high the relevant chunks are, with
  log-discounted credit), P/R/F1 at the *context cutoff* (``miss_k`` when it is one of the
  cutoffs, else the largest: how much of what the generator sees is relevant, and how much of
  the evidence it sees), R-precision and MAP (whole-ranking summaries).  Every other metric is
  computed too and stored in ``summary.json``.
* **means and 95% intervals** (:func:`means_and_cis`): plain means over the scored questions
  and percentile-bootstrap intervals (questions resampled with replacement, one pass for all
  metrics, :func:`ragexam.stats.bootstrap_ci`) -- where the bootstrap claims more than the questions can show, the
  interval of :func:`ragexam.stats.proportion.table_interval`: none below 5 questions ("n = 4: too few for an
  interval"), Wilson's for a hit rate of fewer than 30 questions, or with fewer than 5 hits or misses, or whose
  questions all scored alike (4 hits of 4 is not [1.00-1.00]).
* **sweep** (:func:`sweep`): the lecture's table, mean P@K, R@K and F1@K for each K, and
  F-beta@K for beta 0.5 (precision weighted), 1 and 2 (recall weighted).  As K grows recall can
  only stay or rise; precision can move either way.
* **by type** (:func:`by_type`): the main metrics per question type (e.g. ``meaning``:
  paraphrased questions, ``lexical``: questions quoting codes and names), with n per type,
  because one overall number hides which kind of question a retriever fails.
* **comparisons** (:func:`comparisons`): every pipeline against the first (the baseline), on
  the same questions: mean difference, paired-bootstrap 95% interval, paired randomization
  p-value (seeded, never 0), Holm adjustment over the metrics of the pair, the minimum
  detectable difference and the plain-words verdict decided on the Holm-adjusted p
  (:func:`ragexam.stats.compare_family`, the same wording ``ragexam compare`` uses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

if TYPE_CHECKING:
    from ragexam.stats.bootstrap import BootstrapCI

__all__ = ["BETAS", "main_metrics", "all_metrics", "budget_metrics", "context_k", "means_and_cis", "sweep", "by_type",
           "comparisons", "first_rank"]

#: the F-beta weights of the lecture's table
BETAS: Tuple[float, ...] = (0.5, 1.0, 2.0)


def _beta_key(beta: float) -> str:
    return str(int(beta)) if float(beta).is_integer() else repr(float(beta))


def _f_name(beta: float, k: int) -> str:
    return f"f{_beta_key(beta)}@{k}"


def context_k(ks: Sequence[int], miss_k: int) -> int:
    """The cutoff of the P/R/F1 columns of the main table: ``miss_k`` if it is a cutoff, else the largest."""
    return miss_k if miss_k in ks else max(ks)


def main_metrics(ks: Sequence[int], miss_k: int) -> List[str]:
    """Columns of the main table (the ranking-metric registry's headline columns,
    :func:`ragexam.metrics.ranking.registry.table_columns`): hit@1, hit@k (each k), mrr, ndcg@max k,
    p/r/f1@context k, rprec, map."""
    from ragexam.metrics.ranking import table_columns

    return table_columns(ks, context_k(ks, miss_k))


def all_metrics(ks: Sequence[int], miss_k: int, budgets: Sequence[str] = ()) -> List[str]:
    """The main metrics first, then every kernel's sweep columns for each cutoff (hit, p, r, f0.5, f1, f2, ndcg),
    then for each context budget (``"2000c"``) its columns (:func:`budget_metrics`) and its sweep."""
    from ragexam.metrics.ranking import table_columns

    return table_columns(ks, context_k(ks, miss_k), which="all", budgets=budgets)


def budget_metrics(budgets: Sequence[str]) -> List[str]:
    """The columns of the table at an equal context budget: every kernel's budget columns for each budget
    (hit, mrr, ndcg, p, r, f1 @ 2000c, ...)."""
    from ragexam.metrics.ranking import table_columns

    return table_columns((), 0, which="budget", budgets=budgets)


def means_and_cis(V: np.ndarray, metrics: Sequence[str], *, n_resamples: int, seed: int
                  ) -> Tuple[Dict[str, float], Dict[str, Optional[List[float]]]]:
    """``({metric: mean}, {metric: [low, high] or None})`` over the rows of ``V`` (the percentile bootstrap, or the
    interval the module docstring names where it would claim too much)."""
    from ragexam.stats import bootstrap_ci

    cis = bootstrap_ci(V, n_resamples=n_resamples, seed=seed)
    means = {m: float(ci.mean) for m, ci in zip(metrics, cis)}
    return means, {m: _shown(V[:, j], ci) for j, (m, ci) in enumerate(zip(metrics, cis))}


def _shown(column: np.ndarray, ci: BootstrapCI) -> Optional[List[float]]:
    """The interval a table shows for one metric's per-question values (module docstring)."""
    from ragexam.stats.proportion import table_interval

    got = table_interval([float(x) for x in column], (float(ci.low), float(ci.high)))
    return None if got is None else [float(got[0]), float(got[1])]


def sweep(means: Mapping[str, float], ks: Sequence[int]) -> Tuple[Dict[str, Dict[str, float]],
                                                                Dict[str, Dict[str, float]]]:
    """``(sweep, fbeta)``: ``sweep[K] = {p, r, f1}`` and ``fbeta[beta][K]`` (keys are strings)."""
    sw = {str(k): {"p": means[f"p@{k}"], "r": means[f"r@{k}"], "f1": means[f"f1@{k}"]} for k in ks}
    fb = {_beta_key(b): {str(k): means[_f_name(b, k)] for k in ks} for b in BETAS}
    return sw, fb


def by_type(V: np.ndarray, metrics: Sequence[str], types: Sequence[str], main: Sequence[str], *,
            n_resamples: int, seed: int) -> Tuple[Dict[str, Dict[str, float]],
                                                  Dict[str, Dict[str, Optional[List[float]]]], Dict[str, int]]:
    """Main metrics per question type: ``(means, ci95, n)``, types in first-seen order."""
    from ragexam.stats import bootstrap_ci

    cols = [list(metrics).index(m) for m in main]
    t_arr = np.asarray(types, dtype=object)
    means: Dict[str, Dict[str, float]] = {}
    cis: Dict[str, Dict[str, Optional[List[float]]]] = {}
    ns: Dict[str, int] = {}
    for t in dict.fromkeys(types):
        rows = np.flatnonzero(t_arr == t)
        sub = V[np.ix_(rows, cols)]
        res = bootstrap_ci(sub, n_resamples=n_resamples, seed=seed)
        means[t] = {m: float(ci.mean) for m, ci in zip(main, res)}
        cis[t] = {m: _shown(sub[:, j], ci) for j, (m, ci) in enumerate(zip(main, res))}
        ns[t] = int(rows.size)
    return means, cis, ns


def comparisons(baseline: str, base_V: np.ndarray, pipeline: str, V: np.ndarray, metrics: Sequence[str],
                compared: Sequence[str], *, n_resamples: int, n_permutations: int, seed: int,
                alpha: float = 0.05) -> List[Dict[str, Any]]:
    """Paired comparisons of ``pipeline`` against ``baseline`` on each of ``compared``
    (:func:`ragexam.stats.compare_family`: one family, Holm-corrected across ``compared``).

    Each entry: ``diff`` (pipeline - baseline), ``ci95`` (paired bootstrap), ``p_value``
    (paired randomization test; exact when few questions differ, else approximate with
    ``(count + 1) / (n_permutations + 1)``, never 0), ``p_holm`` (Holm over ``compared``),
    ``mdd`` (minimum detectable difference, alpha 0.05, power 0.8; ``None`` when the per-question
    differences do not vary, e.g. identical values), ``resolution`` (1/n), ``within_noise`` (|diff| <
    mdd; without an MDD, a difference of 0), ``verdict`` and ``reading`` (the one wording of
    :func:`ragexam.stats.verdict.assess`, decided on ``p_holm``: better, worse, same,
    not after Holm, borderline, within noise, not significant).
    """
    from ragexam.stats import compare_family

    if not compared:
        return []
    cols = [list(metrics).index(m) for m in compared]
    family = compare_family(base_V[:, cols], V[:, cols], names=(baseline, pipeline), n_resamples=n_resamples,
                            n_permutations=n_permutations, seed=seed, alpha=alpha)
    return [{"baseline": baseline, "pipeline": pipeline, "metric": m, "diff": float(c.diff),
             "ci95": [float(c.ci_low), float(c.ci_high)], "p_value": float(c.p_value),
             "p_holm": float(c.p_adjusted), "method": c.method, "n": int(c.n), "mdd": _mdd(c.mdd),
             "resolution": float(c.resolution), "within_noise": _within_noise(c.diff, c.mdd),
             "verdict": c.verdict, "reading": c.reading, "signature": c.signature}
            for m, c in zip(compared, family)]


def _mdd(mdd: Optional[float]) -> Optional[float]:
    return None if mdd is None else float(mdd)


def _within_noise(diff: float, mdd: Optional[float]) -> bool:
    """Whether a difference is a tie on this set: below the MDD, or 0 when the differences do not vary."""
    return bool(diff == 0) if mdd is None else bool(abs(diff) < mdd)


def first_rank(unit_ranks: Mapping[str, Optional[int]]) -> Optional[int]:
    """The smallest rank among the units found, or ``None`` when none was found."""
    found = [r for r in unit_ranks.values() if r is not None]
    return min(found) if found else None
