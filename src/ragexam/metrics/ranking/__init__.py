"""Ranking metrics identical to trec_eval (see :mod:`ragexam.metrics.ranking.engine`)."""

from ragexam.metrics.ranking.containers import Qrels, Run
from ragexam.metrics.ranking.engine import RankingResult, evaluate
from ragexam.metrics.ranking.names import VALID_FORMS, Metric, parse_metric, parse_metrics
from ragexam.metrics.ranking.rank_helper import RankMetrics, rank_metrics

__all__ = ["Qrels", "Run", "RankingResult", "evaluate", "Metric", "parse_metric", "parse_metrics",
           "VALID_FORMS", "RankMetrics", "rank_metrics"]
