"""LLM-as-judge over any OpenAI-compatible chat endpoint.

Metrics (see :mod:`ragexam.metrics.judge.prompts` for the rubrics and
:mod:`ragexam.metrics.judge.replies` for the reply contracts and scores):

====================  ==========================================================  ===========
metric                question asked of the judge                                 score
====================  ==========================================================  ===========
context_relevance     how relevant is each retrieved context to the question (1-5) mean, 1-5
context_precision     is each retrieved context useful for the reference answer    rank-aware
                      (one true/false per context)                                 share, 0-1
context_recall        which of the reference answer's statements do the contexts  share, 0-1
                      support
faithfulness          is every claim of the answer supported by the contexts      share, 0-1
answer_relevancy      does the answer address the question (not: is it correct)   1-5 + verdict
answer_correctness    does the answer agree with the ground truth                 1-5 + verdict
abstention            (out-of-corpus questions) did the answer decline            1 / 0
a custom rubric       your criteria and anchored scale (:mod:`.custom`)           a level
pairwise              which of two answers is better, asked in both orders        A / B / tie
                      (:mod:`.pairwise`)
====================  ==========================================================  ===========

A judgment (:class:`JudgeVerdict`) is either ``judged`` (a validated score) or ``unjudged`` with a
reason; unjudged results are never numbers and never averaged in.  Every summary reports its
coverage, a bootstrap interval of the mean and, for metrics with a pass rule, the pass rate and
its interval; with repeats, the canonical verdict per item (majority, ties reported) and the
share of items whose verdict flipped.  docs/judge.md is the user's guide.  Calls go through ragexam's one LLM layer, :mod:`ragexam.llm` (the OpenAI-compatible
client, retries, the call cache with resume and in-flight sharing, token and cost accounting,
redaction); the names it re-exports here are kept for code written against earlier versions.
"""

from ragexam.llm.cache import LLMCache, default_cache_dir, request_key
from ragexam.llm.client import ChatReply, LLMClient
from ragexam.llm.cost import PRICES, cost_usd, estimate_tokens, price_for
from ragexam.llm.settings import LLMSettings, public_endpoint
from ragexam.llm.transport import CallFailed, EndpointError
from ragexam.metrics.judge.core import (REASONS, ItemScore, Judge, JudgeItem, JudgePlan, JudgeRun, JudgeVerdict,
                                        MetricSummary, combine_repeats, summarize)
from ragexam.metrics.judge.custom import load_rubric, rubric_from_dict
from ragexam.metrics.judge.metric import BUILTIN, JudgeMetric, builtin_metric
from ragexam.metrics.judge.pairwise import PairItem, PairResult, PairwiseRun, PairwiseSummary, judge_pairs
from ragexam.metrics.judge.prompts import (DEFAULT_METRICS, METRICS, PROMPT_SET_VERSION, RUBRICS, Rubric,
                                           detect_language, get_rubric, hangul_ratio)
from ragexam.metrics.judge.replies import (NotApplicable, ReplyError, Verdict, average_precision, extract_json,
                                           validate_reply)

#: the chat client's earlier name
ChatClient = LLMClient

__all__ = [
    "Judge", "JudgeItem", "JudgeVerdict", "ItemScore", "MetricSummary", "JudgeRun", "JudgePlan", "REASONS",
    "combine_repeats", "summarize", "JudgeMetric", "BUILTIN", "builtin_metric", "load_rubric", "rubric_from_dict",
    "PairItem", "PairResult", "PairwiseRun", "PairwiseSummary", "judge_pairs", "DEFAULT_METRICS", "average_precision",
    "LLMClient", "LLMSettings", "ChatClient", "ChatReply", "CallFailed", "EndpointError",
    "LLMCache", "default_cache_dir", "public_endpoint", "request_key",
    "PRICES", "cost_usd", "estimate_tokens", "price_for",
    "METRICS", "PROMPT_SET_VERSION", "RUBRICS", "Rubric", "detect_language", "get_rubric", "hangul_ratio",
    "NotApplicable", "ReplyError", "Verdict", "extract_json", "validate_reply",
]
