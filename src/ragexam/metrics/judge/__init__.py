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

from ragexam._lazy import by_module, lazy_exports

#: module -> the names it defines (imported on first use, so ``ragexam --help`` stays fast)
_LAZY = {
    **by_module({
        "ragexam.llm.cache": "LLMCache default_cache_dir request_key",
        "ragexam.llm.client": "ChatReply LLMClient",
        "ragexam.llm.cost": "PRICES cost_usd estimate_tokens price_for",
        "ragexam.llm.settings": "LLMSettings public_endpoint",
        "ragexam.llm.transport": "CallFailed EndpointError",
        "ragexam.metrics.judge.core": "Judge SCORING",
        "ragexam.metrics.judge.results": "REASONS ItemScore JudgeItem JudgePlan JudgeRun JudgeVerdict MetricSummary "
                                         "combine_repeats summarize",
        "ragexam.metrics.judge.custom": "load_rubric rubric_from_dict",
        "ragexam.metrics.judge.contract": "Contract",
        "ragexam.metrics.judge.metric": "JudgeMetric Allowance",
        "ragexam.metrics.judge.prompts": "Prompts Rubric detect_language hangul_ratio",
        "ragexam.metrics.judge.registry": "BUILTIN builtin_metric builtin_metrics register registered DEFAULT_METRICS "
                                          "METRICS PROMPT_SET_VERSION RUBRICS get_rubric validate_reply",
        "ragexam.metrics.judge.pairwise": "PairItem PairResult PairwiseRun PairwiseSummary judge_pairs",
        "ragexam.metrics.judge.replies": "NotApplicable ReplyError Verdict average_precision extract_json",
    }),
    "ChatClient": ("ragexam.llm.client", "LLMClient"),  # the earlier name
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
