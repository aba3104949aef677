"""LLM-as-judge over any OpenAI-compatible chat endpoint (``pip install 'ragexam[openai]'``).

Metrics (see :mod:`ragexam.metrics.judge.prompts` for the rubrics and
:mod:`ragexam.metrics.judge.replies` for the reply contracts and scores):

====================  ==========================================================  ===========
metric                question asked of the judge                                 score
====================  ==========================================================  ===========
context_relevance     how relevant is each retrieved context to the question (1-5) mean, 1-5
faithfulness          is every claim of the answer supported by the contexts      share, 0-1
answer_correctness    does the answer agree with the ground truth                 1-5 + verdict
abstention            (out-of-corpus questions) did the answer decline            1 / 0
====================  ==========================================================  ===========

A judgment is either ``judged`` (a validated score) or ``unjudged`` with a reason; unjudged
results are never numbers and never averaged in.  Every summary reports its coverage.
Calls are cached on disk (:mod:`ragexam.metrics.judge.cache`), retried with backoff
(:mod:`ragexam.metrics.judge.client`) and counted in tokens and cost
(:mod:`ragexam.metrics.judge.cost`).  Nothing here imports ``openai`` until a call is made.
"""

from ragexam.metrics.judge.cache import LLMCache, default_cache_dir, public_endpoint, request_key
from ragexam.metrics.judge.client import CallFailed, ChatClient, ChatReply, EndpointError
from ragexam.metrics.judge.core import (REASONS, ItemScore, Judge, JudgeItem, JudgePlan, JudgeRun, Judgment,
                                        MetricSummary, combine_repeats, summarize)
from ragexam.metrics.judge.cost import PRICES, cost_usd, estimate_tokens, price_for
from ragexam.metrics.judge.prompts import (METRICS, PROMPT_SET_VERSION, RUBRICS, Rubric, detect_language,
                                           get_rubric, hangul_ratio)
from ragexam.metrics.judge.replies import NotApplicable, ReplyError, Verdict, extract_json, validate_reply

__all__ = [
    "Judge", "JudgeItem", "Judgment", "ItemScore", "MetricSummary", "JudgeRun", "JudgePlan", "REASONS",
    "combine_repeats", "summarize",
    "ChatClient", "ChatReply", "CallFailed", "EndpointError",
    "LLMCache", "default_cache_dir", "public_endpoint", "request_key",
    "PRICES", "cost_usd", "estimate_tokens", "price_for",
    "METRICS", "PROMPT_SET_VERSION", "RUBRICS", "Rubric", "detect_language", "get_rubric", "hangul_ratio",
    "NotApplicable", "ReplyError", "Verdict", "extract_json", "validate_reply",
]
