"""Ranking metrics identical to trec_eval (see :mod:`ragexam.metrics.ranking.engine`); one registered
kernel per metric (:mod:`ragexam.metrics.ranking.registry`, built-in ones in
:mod:`ragexam.metrics.ranking.kernels`)."""

from ragexam.metrics.ranking.containers import ContextSizes, Qrels, Run
from ragexam.metrics.ranking.engine import RankingResult, evaluate
from ragexam.metrics.ranking.names import Metric, legend, parse_metric, parse_metrics
from ragexam.metrics.ranking.rank_helper import RankMetrics, rank_metrics
from ragexam.metrics.ranking.registry import (Placement, RankingKernel, metric_help, ranking_metric, table_columns,
                                              valid_forms)

__all__ = ["Qrels", "Run", "ContextSizes", "RankingResult", "evaluate", "Metric", "parse_metric",
           "parse_metrics", "VALID_FORMS", "RankMetrics", "rank_metrics", "RankingKernel", "Placement",
           "ranking_metric", "metric_help", "legend", "table_columns", "valid_forms"]


def __getattr__(name: str):
    if name == "VALID_FORMS":  # computed: a registered metric is listed too
        return valid_forms()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
