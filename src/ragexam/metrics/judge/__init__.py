"""LLM-as-judge over any OpenAI-compatible chat endpoint.

Metrics (each one :class:`~ragexam.metrics.judge.metric.JudgeMetric` of the registry,
:mod:`ragexam.metrics.judge.registry`; each built-in one is a module of :mod:`ragexam.metrics.judge.builtin`, whose
docstring defines it -- prompts, reply contract, reader, score, labels, pass rule):

====================  ==========================================================  ===========
metric                question asked of the judge                                 score
====================  ==========================================================  ===========
context_relevance     how relevant is each retrieved context to the question (1-5) mean, 1-5
context_precision     is each retrieved context useful for the reference answer    rank-aware
                      (one true/false per context)                                 share, 0-1
context_recall        is each sentence of the reference answer supported by the   share, 0-1
                      contexts (one true/false per sentence)
faithfulness          is each claim (sentence) of the answer supported by the     share, 0-1
                      contexts (one true/false per claim)
answer_relevancy      does the answer address the question (not: is it correct)   1-5, band
answer_correctness    does the answer agree with the ground truth                 1-5, band
abstention            (out-of-corpus questions) did the answer decline            1 / 0
a custom rubric       your criteria and anchored scale (:mod:`.custom`)           a level
pairwise              which of two answers is better, asked in both orders        A / B / tie
                      (:mod:`.pairwise`)
====================  ==========================================================  ===========

A judgment (:class:`JudgeVerdict`) is either ``judged`` (a validated score) or ``unjudged`` with a
reason; unjudged results are never numbers and never averaged in.  Every summary reports its
coverage, a bootstrap interval of the mean and, for metrics with a pass rule, the pass rate and
its interval; with repeats, the canonical verdict per item (majority, ties reported) and the
share of items whose verdict flipped.  A score is the written one or, with ``scoring="probability"``,
the expected value over the score tokens' probabilities (:mod:`ragexam.metrics.judge.core`).
:mod:`ragexam.analysis.judging.check` measures whether a judge separates good from bad at all.  docs/judge.md is
the user's guide.  Calls go through ragexam's one LLM layer, :mod:`ragexam.llm` (the OpenAI-compatible
client, retries, the call cache with resume and in-flight sharing, token and cost accounting,
redaction); the names it re-exports here (imported on first use) are kept for code written against earlier
versions.
"""

from importlib import import_module
from typing import Any

#: name -> the module that defines it (imported on first use, so ``ragexam --help`` stays fast)
_WHERE = {
    "LLMCache": "ragexam.llm.cache", "default_cache_dir": "ragexam.llm.cache", "request_key": "ragexam.llm.cache",
    "ChatReply": "ragexam.llm.client", "LLMClient": "ragexam.llm.client", "ChatClient": "ragexam.llm.client",
    "PRICES": "ragexam.llm.cost", "cost_usd": "ragexam.llm.cost", "estimate_tokens": "ragexam.llm.cost",
    "price_for": "ragexam.llm.cost", "LLMSettings": "ragexam.llm.settings", "public_endpoint": "ragexam.llm.settings",
    "CallFailed": "ragexam.llm.transport", "EndpointError": "ragexam.llm.transport",
    "Judge": "ragexam.metrics.judge.core", "SCORING": "ragexam.metrics.judge.core",
    "REASONS": "ragexam.metrics.judge.results", "ItemScore": "ragexam.metrics.judge.results",
    "JudgeItem": "ragexam.metrics.judge.results", "JudgePlan": "ragexam.metrics.judge.results",
    "JudgeRun": "ragexam.metrics.judge.results", "JudgeVerdict": "ragexam.metrics.judge.results",
    "MetricSummary": "ragexam.metrics.judge.results", "combine_repeats": "ragexam.metrics.judge.results",
    "summarize": "ragexam.metrics.judge.results",
    "load_rubric": "ragexam.metrics.judge.custom", "rubric_from_dict": "ragexam.metrics.judge.custom",
    "Contract": "ragexam.metrics.judge.contract",
    "JudgeMetric": "ragexam.metrics.judge.metric", "Allowance": "ragexam.metrics.judge.metric",
    "Prompts": "ragexam.metrics.judge.prompts",
    "BUILTIN": "ragexam.metrics.judge.registry", "builtin_metric": "ragexam.metrics.judge.registry",
    "builtin_metrics": "ragexam.metrics.judge.registry", "register": "ragexam.metrics.judge.registry",
    "registered": "ragexam.metrics.judge.registry",
    "PairItem": "ragexam.metrics.judge.pairwise", "PairResult": "ragexam.metrics.judge.pairwise",
    "PairwiseRun": "ragexam.metrics.judge.pairwise", "PairwiseSummary": "ragexam.metrics.judge.pairwise",
    "judge_pairs": "ragexam.metrics.judge.pairwise",
    "DEFAULT_METRICS": "ragexam.metrics.judge.registry", "METRICS": "ragexam.metrics.judge.registry",
    "PROMPT_SET_VERSION": "ragexam.metrics.judge.registry", "RUBRICS": "ragexam.metrics.judge.registry",
    "Rubric": "ragexam.metrics.judge.prompts", "detect_language": "ragexam.metrics.judge.prompts",
    "get_rubric": "ragexam.metrics.judge.registry", "hangul_ratio": "ragexam.metrics.judge.prompts",
    "NotApplicable": "ragexam.metrics.judge.replies", "ReplyError": "ragexam.metrics.judge.replies",
    "Verdict": "ragexam.metrics.judge.replies", "average_precision": "ragexam.metrics.judge.replies",
    "extract_json": "ragexam.metrics.judge.replies", "validate_reply": "ragexam.metrics.judge.registry",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'ragexam.metrics.judge' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), "LLMClient" if name == "ChatClient" else name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
